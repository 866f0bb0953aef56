"""`DELETE /api/memory/rows/{row_id}` on both backends: the bearer token, the report, a
missing row as 404, and the store afterwards (the corrected row current again)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from dirty_equals import IsPositiveInt
from fastapi.testclient import TestClient

from phi.memory import Memory, MiniLMEmbedder, NewRow, Turn
from phi.web import create_app
from tests.postgres.schemas import fresh_schema_sync

from .conftest import LOCAL, TOKEN

AUTH = {"Authorization": f"Bearer {TOKEN}"}
NS = "team-api"
PR = "https://github.com/acme/api/pull/7"


@dataclass(frozen=True, kw_only=True)
class Seeded:
    old: str
    new: str
    summary: str
    kept: str


async def _seed(location: str, minilm: MiniLMEmbedder) -> Seeded:
    async with Memory.open(location, embedder=minilm) as memory:
        old = await memory.remember(NewRow(content="we retry HTTP calls 3 times", namespace=NS))
        new = await memory.remember(
            NewRow(
                content="we retry HTTP calls 5 times",
                namespace=NS,
                supersedes=old.row_id,
                source_uris=[PR],
            )
        )
        summary = await memory.remember(
            NewRow(
                content="the team tuned retries",
                namespace=NS,
                kind="summary",
                source_uris=[PR],
                meta={"learned_by": "summarize"},
            )
        )
        kept = await memory.remember(
            NewRow.interaction(
                [Turn(speaker="dev", text="retries look fine")], namespace=NS, source_uris=[PR]
            )
        )
    return Seeded(old=old.row_id, new=new.row_id, summary=summary.row_id, kept=kept.row_id)


@contextmanager
def _location(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield str(tmp_path / "memory.db")
        return
    with fresh_schema_sync() as url:
        yield url


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_delete_one_row_answers_what_went(
    backend: str, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    with _location(backend, tmp_path) as location:
        seeded = anyio.run(_seed, location, minilm)
        app = create_app(lambda: Memory.open(location, embedder=minilm), token=TOKEN)
        with TestClient(app, base_url=LOCAL) as client:
            url = f"/api/memory/rows/{seeded.new}"
            assert client.delete(url).status_code == 401
            wrong = client.delete(url, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
            missing = client.delete("/api/memory/rows/nope", headers=AUTH)
            assert (missing.status_code, missing.json()) == (
                404,
                {"detail": "no memory row with id 'nope'"},
            )
            erased = client.delete(url, headers=AUTH)
            assert erased.status_code == 200, erased.text
            # The exchange also names the PR: the summary still has a source, so it stays.
            assert erased.json() == {
                "row_id": seeded.new,
                "rows": 1,
                "edges": IsPositiveInt,
                "kinds": {"note": 1},
                "erased": [seeded.new],
                "derived": [],
                "reinstated": [seeded.old],
                "published": [],
            }
            assert client.get(url).status_code == 404
            assert client.get(f"/api/memory/rows/{seeded.old}").json()["status"] == "active"
            assert client.get(f"/api/memory/rows/{seeded.summary}").status_code == 200
            gone = client.delete(f"/api/memory/rows/{seeded.kept}", headers=AUTH)
            assert gone.json()["erased"] == [seeded.kept, seeded.summary]
            assert client.get(f"/api/memory/rows/{seeded.summary}").status_code == 404


def test_a_read_only_page_cannot_delete_a_row(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    location = str(tmp_path / "memory.db")
    seeded = anyio.run(_seed, location, minilm)
    app = create_app(lambda: Memory.open(location, embedder=minilm))
    with TestClient(app, base_url=LOCAL) as client:
        refused = client.delete(f"/api/memory/rows/{seeded.new}", headers=AUTH)
        assert refused.status_code == 403
        assert client.get(f"/api/memory/rows/{seeded.new}").status_code == 200
