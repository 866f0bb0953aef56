"""Fixtures for the web tests: the real MiniLM embedder and a small store of people."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient

from phi.memory import Memory, MiniLMEmbedder, NewRow, Turn, user_namespace
from phi.memory.learning import Blocks, user_label
from phi.web import create_app

TOKEN = "s3cret-token"
THREAD = "at://did:plc:alice/app.bsky.feed.post/3kthread"
LOCAL = "http://127.0.0.1"
"""The app answers loopback names only; TestClient's default `testserver` is refused."""


@dataclass(frozen=True, kw_only=True)
class Filled:
    db: Path
    old_observation: str
    new_observation: str
    alice_exchange: str
    note: str


async def _fill(db: Path, minilm: MiniLMEmbedder) -> Filled:
    async with Memory.open(db, embedder=minilm) as memory:
        alice, bob, carol = (user_namespace(f"did:plc:{n}") for n in ("alice", "bob", "carol"))
        exchange = await memory.remember(
            NewRow.interaction(
                [
                    Turn(speaker="@alice.test", text="I've been writing a parser in rust lately"),
                    Turn(speaker="@phi.test", text="nice, what is it for?", by_phi=True),
                ],
                namespace=alice,
                author="did:plc:alice",
                source_uris=[THREAD],
            )
        )
        old = await memory.remember(
            NewRow(
                content="alice likes rust",
                namespace=alice,
                kind="observation",
                source_uris=[THREAD],
            )
        )
        new = await memory.remember(
            NewRow(
                content="alice now prefers zig over rust",
                namespace=alice,
                kind="observation",
                source_uris=[THREAD],
                supersedes=old.row_id,
            )
        )
        await memory.remember(
            NewRow.interaction(
                [Turn(speaker="@bob.test", text="replying in alice's thread about compilers")],
                namespace=bob,
                author="did:plc:bob",
                source_uris=[THREAD],
            )
        )
        await memory.remember(
            NewRow(
                content="carol grows tomatoes on her balcony", namespace=carol, kind="observation"
            )
        )
        note = await memory.remember(
            NewRow(content="the release is on friday", namespace="agent-notes")
        )
        await Blocks(memory=memory).set(user_label("did:plc:alice"), "# alice\nwrites parsers")
    return Filled(
        db=db,
        old_observation=old.row_id,
        new_observation=new.row_id,
        alice_exchange=exchange.row_id,
        note=note.row_id,
    )


@pytest.fixture
def filled(tmp_path: Path, minilm: MiniLMEmbedder) -> Filled:
    db = tmp_path / "memory.db"
    return anyio.run(_fill, db, minilm)


@pytest.fixture
def client(filled: Filled, minilm: MiniLMEmbedder) -> Iterator[TestClient]:
    app = create_app(lambda: Memory.open(filled.db, embedder=minilm), token=TOKEN)
    with TestClient(app, base_url=LOCAL) as test_client:
        yield test_client


@pytest.fixture
def read_only_client(filled: Filled, minilm: MiniLMEmbedder) -> Iterator[TestClient]:
    app = create_app(lambda: Memory.open(filled.db, embedder=minilm))
    with TestClient(app, base_url=LOCAL) as test_client:
        yield test_client
