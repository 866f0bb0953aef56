"""Dates a query names lift the rows written then (`RecallRecipe.date_weight`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory._dates import DateSpan, query_dates

ALICE = user_namespace("did:plc:alice")


def spans(text: str) -> list[tuple[str, str]]:
    return [(s.start.date().isoformat(), s.end.date().isoformat()) for s in query_dates(text)]


def test_days_months_and_years_in_the_usual_spellings() -> None:
    assert spans("What did Gina find on 1 February, 2023?") == [("2023-02-01", "2023-02-02")]
    assert spans("the book she finished on 8th December, 2023") == [("2023-12-08", "2023-12-09")]
    assert spans("dinner on May 3, 2023 with Maria") == [("2023-05-03", "2023-05-04")]
    assert spans("what happened in Sept. 2022") == [("2022-09-01", "2022-10-01")]
    assert spans("a setback in December 2023") == [("2023-12-01", "2024-01-01")]
    assert spans("which concerts in 2021?") == [("2021-01-01", "2022-01-01")]


def test_several_dates_in_order_and_no_date_read_twice() -> None:
    # "October 2023" is a month: its year is not also read as the whole of 2023.
    assert spans("in October 2023 and again in 2021") == [
        ("2023-10-01", "2023-11-01"),
        ("2021-01-01", "2022-01-01"),
    ]


def test_no_date_no_span() -> None:
    assert spans("What did Caroline research?") == []
    assert spans("may I ask about the march?") == []  # month words, not as a time
    assert spans("room 1234 on floor 3") == []


def test_a_month_without_a_year_is_that_month_of_every_year() -> None:
    (june,) = query_dates("When did Melanie go camping in June?")
    assert june.every_year
    slack = {"before": timedelta(days=1), "after": timedelta(days=7)}
    for year in (2019, 2023, 2031):
        assert june.near(datetime(year, 6, 15, tzinfo=UTC), **slack)
        assert june.near(datetime(year, 7, 7, tzinfo=UTC), **slack)  # told a week later
        assert not june.near(datetime(year, 7, 9, tzinfo=UTC), **slack)
        assert not june.near(datetime(year, 5, 20, tzinfo=UTC), **slack)
    (december,) = query_dates("what did we do last December")
    # The span wraps into the next year: a row of 3 January tells of late December.
    assert december.near(datetime(2024, 1, 3, tzinfo=UTC), **slack)
    assert december.near(datetime(2023, 12, 31, tzinfo=UTC), **slack)
    assert not december.near(datetime(2023, 11, 20, tzinfo=UTC), **slack)
    assert [s.every_year for s in query_dates("in May and in May 2022")] == [True, False]
    assert [s.every_year for s in query_dates("in May, in May 2022", every_year=False)] == [False]


def test_an_impossible_day_falls_back_to_its_month() -> None:
    assert spans("on 31 February, 2023") == [("2023-02-01", "2023-03-01")]


def test_near_widens_the_span_by_the_slack_either_side() -> None:
    day = DateSpan(start=datetime(2023, 7, 7, tzinfo=UTC), end=datetime(2023, 7, 8, tzinfo=UTC))
    slack = {"before": timedelta(days=1), "after": timedelta(days=7)}
    assert day.near(datetime(2023, 7, 7, 15, tzinfo=UTC), **slack)
    assert day.near(datetime(2023, 7, 6, 1, tzinfo=UTC), **slack)
    assert day.near(datetime(2023, 7, 14, 23, tzinfo=UTC), **slack)
    assert not day.near(datetime(2023, 7, 15, 0, 1, tzinfo=UTC), **slack)
    assert not day.near(datetime(2023, 7, 5, 23, tzinfo=UTC), **slack)


@pytest.mark.anyio
async def test_a_row_written_on_the_named_date_comes_first(memory: Memory) -> None:
    rows = []
    for day, whom in (
        (datetime(2023, 3, 3, 14, tzinfo=UTC), "the neighbours"),
        (datetime(2023, 6, 9, 14, tzinfo=UTC), "my sister"),
    ):
        rows.append(
            await memory.remember(
                NewRow.interaction(
                    [Turn(speaker="alice", text=f"I baked a lemon cake for {whom}")],
                    namespace=ALICE,
                    created_at=day,
                )
            )
        )
    march, june = (r.row_id for r in rows)
    now = datetime(2024, 1, 1, tzinfo=UTC)
    for when, first in (("on 9 June, 2023", june), ("in March 2023", march)):
        found = await memory.search(f"What did alice bake {when}?", namespace=ALICE, now=now)
        assert [r.row.row_id for r in found] == [first, ({march, june} - {first}).pop()]
    # Smoothing and the thread lift off, so no row borrows from a lifted neighbour nor is
    # lifted by its own lifted score: the row written that day scores exactly
    # 1 + date_weight times its score without the lift, the other its own.
    query = "What did alice bake on 9 June, 2023?"
    on = replace(memory.recipe, smooth_types=(), thread_weight=0.0)
    off = replace(on, date_weight=0.0)
    scores = []
    for recipe in (on, off):
        found = await memory.search(query, namespace=ALICE, now=now, recipe=recipe)
        scores.append({r.row.row_id: r.score for r in found})
    lifted, plain = scores
    assert lifted[june] == pytest.approx(plain[june] * (1 + on.date_weight), rel=1e-6)
    assert lifted[march] == pytest.approx(plain[march], rel=1e-6)
