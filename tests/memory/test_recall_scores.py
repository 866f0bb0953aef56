"""Recall scores a caller can act on: the same yardstick for every query, and no row lifted
by its neighbours unless the query reached it itself."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory.model import utc_now

pytestmark = pytest.mark.anyio

ALICE = user_namespace("did:plc:alice")
BOB = user_namespace("did:plc:bob")


async def test_a_query_that_matches_nothing_gets_only_weak_scores(memory: Memory) -> None:
    await memory.remember(NewRow(content="alice is learning to play the cello", namespace=ALICE))
    await memory.remember(NewRow(content="alice files her taxes every April", namespace=ALICE))
    await memory.remember(NewRow(content="alice bakes sourdough bread on Sundays", namespace=ALICE))
    unrelated = await memory.search("lattice quantum chromodynamics", namespace=ALICE)
    # Dividing by the query's best hit used to give the least bad row 0.5 or more.
    assert unrelated and max(r.score for r in unrelated) < 0.3
    related = await memory.search("cello lessons", namespace=ALICE, limit=1)
    assert "cello" in related[0].row.content and related[0].score >= 0.5


async def test_smoothing_never_lifts_a_row_the_query_did_not_reach(memory: Memory) -> None:
    await memory.remember(
        NewRow.interaction(
            [
                Turn(
                    speaker="bob",
                    text="I drink oolong tea every single morning, oolong is the best",
                )
            ],
            namespace=BOB,
            thread="bob-1",
        )
    )
    unrelated = await memory.remember(
        NewRow.interaction(
            [Turn(speaker="bob", text="the bus was late again and I missed my train")],
            namespace=BOB,
            thread="bob-1",
        )
    )
    note = await memory.remember(
        NewRow(content="alice's favourite drink is jasmine green tea", namespace=ALICE)
    )
    now = utc_now()
    found = await memory.search("which tea does alice like to drink?", limit=3, now=now)
    ids = [r.row.row_id for r in found]
    assert ids.index(note.row_id) < ids.index(unrelated.row_id)
    bus = next(r for r in found if r.row.row_id == unrelated.row_id)
    alone = await memory.search(
        "which tea does alice like to drink?",
        limit=3,
        now=now,
        recipe=replace(memory.recipe, smooth_types=()),
    )
    bus_alone = next(r for r in alone if r.row.row_id == unrelated.row_id)
    # The bus row sits next to a strong match but shares nothing with the query: its score
    # is its own, not borrowed.
    assert bus.score == pytest.approx(bus_alone.score, rel=1e-6)


async def test_a_turn_that_only_asks_ranks_below_the_turn_that_answers(memory: Memory) -> None:
    def turn(speaker: str, text: str, minutes_ago: int) -> NewRow:
        at = utc_now() - timedelta(minutes=minutes_ago)
        return NewRow.interaction(
            [Turn(speaker=speaker, text=text)], namespace=ALICE, thread="games", created_at=at
        )

    ask = await memory.remember(turn("bob", "Which board games do you play, alice?", 2))
    answer = await memory.remember(turn("alice", "Mostly chess and go, every weekend.", 1))
    query = "which board games does she play?"
    found = await memory.search(query, namespace=ALICE, limit=2)
    assert [r.row.row_id for r in found] == [answer.row_id, ask.row_id]
    # Without the discount the question's own words put it first.
    plain = replace(memory.recipe, question_weight=0.0)
    found = await memory.search(query, namespace=ALICE, limit=2, recipe=plain)
    assert [r.row.row_id for r in found] == [ask.row_id, answer.row_id]


async def test_a_row_in_the_thread_of_a_strong_match_is_lifted(memory: Memory) -> None:
    def turn(text: str, thread: str) -> NewRow:
        return NewRow.interaction(
            [Turn(speaker="alice", text=text)], namespace=ALICE, thread=thread
        )

    await memory.remember(turn("I adopted a grey kitten called Miso from the shelter", "cats"))
    near = await memory.remember(turn("the shelter had so many animals waiting", "cats"))
    far = await memory.remember(turn("the shelter had so many animals waiting today", "other"))
    query = "when did alice adopt a kitten from the shelter?"
    off = replace(memory.recipe, smooth_types=(), thread_weight=0.0)
    on = replace(off, thread_weight=0.6)
    plain = {r.row.row_id: r.score for r in await memory.search(query, namespace=ALICE, recipe=off)}
    lifted = {r.row.row_id: r.score for r in await memory.search(query, namespace=ALICE, recipe=on)}
    assert lifted[near.row_id] / plain[near.row_id] > lifted[far.row_id] / plain[far.row_id]
    assert lifted[near.row_id] / plain[near.row_id] <= 1.6 + 1e-9
