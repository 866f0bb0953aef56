"""A store closed and opened again by a new `Memory.open` reads back everything written, on
both backends: rows (a superseded one, one still waiting for its vector), vectors,
references, edges, learning marks, state versions and the model-call log.

Every other test opens its store once, so nothing else sees what only a second open does:
migrations applied again, the embedding model read back, a write never made durable
(issue 24)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from phi.errors import EmbedderMismatch
from phi.memory import Memory, MiniLMEmbedder, NewRow, Turn, user_namespace
from phi.memory.model import BLOCK_SCOPE, user_label
from phi.memory.store import ModelCallRecord, RowFilter, open_store
from tests.memory.conftest import TinyEmbedder
from tests.postgres.schemas import fresh_schema

pytestmark = pytest.mark.anyio

ALICE_DID = "did:plc:alice"
ALICE = user_namespace(ALICE_DID)
T0 = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)
EVERYTHING = RowFilter(statuses=None)


@asynccontextmanager
async def place(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    if backend == "sqlite":
        yield str(tmp_path / "memory.db")
        return
    async with fresh_schema() as url:
        yield url


async def fill(memory: Memory) -> dict[str, str]:
    """Write one of everything a memory keeps; returns row ids by a short name."""
    exchange, likes, note = await memory.remember_many(
        [
            NewRow.interaction(
                [
                    Turn(speaker="@alice.test", text="i keep bees on the roof of @bob.test"),
                    Turn(speaker="@phi.test", text="how many hives?", by_phi=True),
                ],
                namespace=ALICE,
                author=ALICE_DID,
                source_uris=["at://did:plc:alice/app.bsky.feed.post/3kbees"],
                created_at=T0,
                thread="at://did:plc:alice/app.bsky.feed.post/3kbees",
            ),
            NewRow(
                content="alice keeps two hives",
                namespace=ALICE,
                kind="observation",
                tags=["bees", "hobby"],
                author=ALICE_DID,
                created_at=T0 + timedelta(minutes=1),
                meta={"confidence": 0.8, "from": ["chat"]},
            ),
            NewRow(
                content="honey prices rose this spring",
                namespace="phi-episodic",
                trust="low",
                created_at=T0 + timedelta(minutes=2),
            ),
        ]
    )
    corrected = await memory.remember(
        NewRow(
            content="alice keeps three hives now",
            namespace=ALICE,
            kind="observation",
            supersedes=likes.row_id,
            created_at=T0 + timedelta(minutes=3),
        )
    )
    (waiting,) = await memory.remember_many(
        [NewRow(content="bees swarm in may", namespace="phi-episodic")], defer_embedding=True
    )
    await memory.link(exchange.row_id, corrected.row_id, edge_type="causal", weight=0.5)
    for version in ("# alice\nkeeps bees", "# alice\nkeeps three hives"):
        await memory.state.write(BLOCK_SCOPE, user_label(ALICE_DID), version, at=T0)
    await memory.state.write("gate", "pending", '{"n": 1}', at=T0 + timedelta(seconds=1))
    await memory.ledger.mark("extract", [exchange.row_id], at=T0 + timedelta(hours=1))
    await memory.ledger.log_model_call(
        ModelCallRecord(
            purpose="extract", model="m", requests=2, input_tokens=90, output_tokens=12,
            outcome="ok", called_at=T0 + timedelta(hours=1, microseconds=7),
        )
    )  # fmt: skip
    return {
        "exchange": exchange.row_id,
        "likes": likes.row_id,
        "note": note.row_id,
        "corrected": corrected.row_id,
        "waiting": waiting.row_id,
    }


async def everything(memory: Memory) -> dict[str, Any]:
    """All a memory holds, in a comparable form."""
    rows = [r async for r in memory.rows.scan(EVERYTHING)]
    ids = [r.row_id for r in rows]
    return {
        "rows": rows,
        "vectors": {i: v.tolist() for i, v in (await memory.rows.get_vectors(ids)).items()},
        "refs": await memory.rows.refs_of(ids),
        "edges": sorted(
            (e.src, e.dst, e.edge_type, e.weight, e.created_at)
            for e in await memory.rows.edges(ids)
        ),
        "unembedded": [r.row_id for r in await memory.store.unembedded(limit=10)],
        "marks": sorted(
            (m.pass_name, m.row_id, m.marked_at) for m in await memory.ledger.marks_of(ids)
        ),
        "state": await memory.ledger.state_versions(),
        "calls": await memory.ledger.model_calls(),
        "embedding": await memory.rows.embedding(),
        "namespaces": await memory.namespaces(),
        # The file's size moves when the write-ahead log is checkpointed on close.
        "stats": dataclasses.replace(await memory.stats(), size_bytes=0),
    }


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_a_reopened_store_reads_back_what_was_written(
    backend: str, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    async with place(backend, tmp_path) as location:
        async with Memory.open(location, embedder=minilm) as memory:
            ids = await fill(memory)
            before = await everything(memory)
        # What was written is there to compare (a store that loses it all on reopen must
        # not compare two empty snapshots).
        assert [r.row_id for r in before["rows"]] == [
            ids["exchange"], ids["likes"], ids["note"], ids["corrected"], ids["waiting"],
        ]  # fmt: skip
        assert before["rows"][1].status == "superseded" and len(before["vectors"]) == 4
        assert before["unembedded"] == [ids["waiting"]] and len(before["state"]) == 3
        assert (ids["exchange"], ids["corrected"], "causal", 0.5) in {
            e[:4] for e in before["edges"]
        }
        assert before["refs"][ids["exchange"]] and before["marks"] and before["calls"]

        async with Memory.open(location, embedder=minilm) as reopened:
            assert await everything(reopened) == before
            # The indexes came back too: both kinds of search find the rows.
            found = await reopened.search("three hives", namespace=ALICE)
            assert found[0].row.row_id == ids["corrected"]
            # By its words alone: the row has no vector yet.
            text = await reopened.search("swarm", namespace="phi-episodic")
            by_words = [f.row.row_id for f in text if f.matched_by == "text"]
            assert by_words == [ids["waiting"]] and text.unembedded == 1
            assert await reopened.embed_pending() == 1
        async with Memory.open(location, embedder=minilm) as third:
            vectors = await third.rows.get_vectors([ids["waiting"]])
            assert np.allclose(
                vectors[ids["waiting"]], (await minilm.embed(["bees swarm in may"]))[0]
            )
        # Opened as a bare store (as `phi memory migrate` opens one, binding no model), it
        # still knows which model its vectors came from; another model is refused.
        bare = open_store(location)
        await bare.connect()
        try:
            assert await bare.embedding() == before["embedding"]
        finally:
            await bare.close()
        with pytest.raises(EmbedderMismatch, match="all-MiniLM-L6-v2"):
            async with Memory.open(location, embedder=TinyEmbedder()):
                pass
