"""The pure functions that decide a ranking, without a database."""

from __future__ import annotations

import numpy as np
import pytest

from phi.memory._rerank import (
    absolute_relevance,
    discount_questions,
    feedback_vector,
    question_share,
    speaker_boost,
    speaker_of,
    thread_lift,
    window_dense,
)
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


def test_smoothing_lifts_only_rows_the_query_reached() -> None:
    chain = {"a": ["b"], "b": ["a", "c"], "c": ["b"]}
    scores = {"a": 1.0, "b": 0.02, "c": 0.3}
    out = smooth_scores(scores, chain, weight=0.5, decay=0.5, hops=1, reached={"a", "c"})
    assert out["b"] == pytest.approx(0.02)  # next to a strong match, but not reached
    assert out["c"] == pytest.approx(0.3 + 0.5 * 0.02)
    capped = smooth_scores(scores, chain, weight=0.5, decay=0.5, hops=1, cap=1.0)
    assert capped["b"] == pytest.approx(0.02 + 0.5 * 0.02)


def test_relevance_is_measured_against_the_best_hit_or_a_floor() -> None:
    strong = absolute_relevance(
        hits(("a", 0.8), ("b", 0.4)),
        hits(("a", 16.0)),
        dense_weight=0.5,
        dense_floor=0.6,
        text_floor=8.0,
    )
    assert strong == pytest.approx({"a": 1.0, "b": 0.25})
    # The best of a weak query is not promoted to 1.0: an agent can drop it.
    weak = absolute_relevance(
        hits(("x", 0.15)), hits(("x", 2.0)), dense_weight=0.5, dense_floor=0.6, text_floor=8.0
    )
    assert weak == pytest.approx({"x": 0.5 * 0.25 + 0.5 * 0.25})


def test_speaker_boost_matches_a_named_speaker_or_a_word_of_a_handle() -> None:
    assert speaker_of("Alice: hi there\nBob: hello") == "alice"
    assert speaker_of("no speaker here") is None
    contents = {
        "1": "Alice: I adopted a cat",
        "2": "alice.bsky.social: new job today",
        "3": "Bob: Alice told me about her cat",
        "4": "a note about alice",
    }
    assert speaker_boost(contents, ["alice", "cat"]) == {"1", "2"}


def test_feedback_moves_the_query_towards_its_best_rows() -> None:
    query = np.array([1.0, 0.0], dtype=np.float32)
    moved = feedback_vector(query, [np.array([0.0, 1.0], dtype=np.float32)], weight=1.0)
    assert moved == pytest.approx(np.array([1.0, 1.0]) / np.sqrt(2))
    assert feedback_vector(query, [], weight=1.0) is query


def test_window_scores_a_row_with_its_neighbours() -> None:
    vectors = {
        "q": np.array([1.0, 0.0], dtype=np.float32),
        "yes": np.array([0.0, 1.0], dtype=np.float32),
    }
    query = np.array([1.0, 0.0], dtype=np.float32)
    out = window_dense(query, vectors, {"yes": ["q"]}, ["yes", "missing"])
    assert out == pytest.approx({"yes": 1 / np.sqrt(2)})


def test_thread_lift_follows_the_best_row_of_each_thread_squared() -> None:
    scores = {"a1": 1.2, "a2": 0.3, "b1": 0.5, "b2": 0.2, "alone": 0.5}
    threads = {"a1": "a", "a2": "a", "b1": "b", "b2": "b"}
    lifted = thread_lift(scores, threads, weight=0.6)
    # Thread a's best is past 1 and counts as 1; thread b's is 0.5, squared 0.25; a row
    # without a thread is a thread of its own.
    assert lifted["a1"] == pytest.approx(1.2 * 1.6)
    assert lifted["a2"] == pytest.approx(0.3 * 1.6)
    assert lifted["b1"] == pytest.approx(0.5 * 1.15)
    assert lifted["b2"] == pytest.approx(0.2 * 1.15)
    assert lifted["alone"] == pytest.approx(0.5 * 1.15)
    assert lifted["a2"] > lifted["b2"] * 2
    assert thread_lift(scores, threads, weight=0.0) == scores


@pytest.mark.parametrize(
    ("content", "share"),
    [
        ("alice: I baked a lemon cake.", 0.0),
        ("bob: What games do you play?", 1.0),
        ("bob: Nice! What games do you play?", 0.5),
        ("bob: Did you go? I went yesterday", 0.5),
        ('bob: She asked "are you coming?" I said no.', 0.5),
        ("bob: see https://example.com/a?b=c for more", 0.0),
        ("bob: Really?! Wow. Tell me more!", 1 / 3),
    ],
)
def test_question_share_counts_the_sentences_that_ask(content: str, share: float) -> None:
    assert question_share(content) == pytest.approx(share)


def test_discount_questions_lowers_rows_that_ask_and_reads_only_the_head() -> None:
    contents = {
        "ask": "bob: What games do you play?",
        "answer": "alice: Mostly chess and go.",
        "half": "bob: Cool. Do you play online?",
    }
    scores = {"ask": 1.0, "answer": 0.9, "half": 0.8, "far": 0.1}
    out = discount_questions(scores, contents, weight=0.3, keep=3)
    assert out == pytest.approx({"ask": 0.7, "answer": 0.9, "half": 0.8 * 0.85, "far": 0.1})
    assert max(out, key=out.__getitem__) == "answer"
    # A row under (1 - weight) times the keep-th best score cannot reach the best `keep`:
    # it is left as it is (its content is never read, and may be missing).
    far = {"ask": 1.0, "answer": 0.9, "ask2": 0.2}
    shallow = discount_questions(
        far, {"ask": contents["ask"], "answer": contents["answer"]}, weight=0.3, keep=2
    )
    assert shallow["ask2"] == 0.2
    assert discount_questions(scores, contents, weight=0.0, keep=3) == scores
