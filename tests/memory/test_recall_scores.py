"""Recall scores a caller can act on: the same yardstick for every query, and no row lifted
by its neighbours unless the query reached it itself."""

from __future__ import annotations

from dataclasses import replace

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
