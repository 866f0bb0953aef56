"""The pure functions that decide a ranking, without a database."""

from __future__ import annotations

import pytest

from phi.memory.recall import (
    fuse_max_normalised,
    query_terms,
    recency_factor,
    smooth_scores,
)
from phi.memory.store import Hit


def hits(*pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(row_id=i, score=s) for i, s in pairs]


def test_query_terms_drop_stopwords_and_repeats() -> None:
    assert query_terms("What did Caroline research? Caroline's RESEARCH, and the cats") == [
        "caroline",
        "research",
        "cats",
    ]
    assert query_terms("what is it?") == []


def test_max_normalised_fusion_keeps_score_gaps() -> None:
    fused = fuse_max_normalised(
        [(hits(("a", 0.8), ("b", 0.4)), 0.5), (hits(("b", 12.0), ("c", 3.0)), 0.5)]
    )
    assert fused == pytest.approx({"a": 0.5, "b": 0.25 + 0.5, "c": 0.125})
    assert fuse_max_normalised([([], 0.5), (hits(("x", 0.0)), 0.5)]) == {}


def test_smoothing_takes_the_best_neighbour_at_each_distance() -> None:
    chain = {"1": ["2"], "2": ["1", "3"], "3": ["2", "4"], "4": ["3", "5"], "5": ["4"]}
    out = smooth_scores({"1": 1.0, "3": 1.0}, chain, weight=0.5, decay=0.5, hops=2)
    # "2" sits between two matches: max, not sum, so it cannot outrank them.
    assert out["2"] == pytest.approx(0.5 * 1.0)
    assert out["1"] == pytest.approx(1.0 + 0.5 * 0 + 0.25 * 1.0)
    assert out["3"] == pytest.approx(1.0 + 0.0 + 0.25 * 1.0)
    assert out["4"] == pytest.approx(0.5 * 1.0)
    assert out["5"] == pytest.approx(0.25 * 1.0)
    assert smooth_scores({"1": 1.0}, {}, weight=0.5, decay=0.5, hops=2) == {"1": 1.0}


def test_recency_factor_halves_its_lift_every_half_life() -> None:
    assert recency_factor(0, weight=0.2, half_life_days=10) == pytest.approx(1.2)
    assert recency_factor(10 * 86_400, weight=0.2, half_life_days=10) == pytest.approx(1.1)
    assert recency_factor(1e12, weight=0.2, half_life_days=10) == pytest.approx(1.0)
    assert recency_factor(5, weight=0.0, half_life_days=10) == 1.0
