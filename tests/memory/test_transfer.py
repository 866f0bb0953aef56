"""Moving a memory between stores: `phi memory migrate` and `phi memory import`, both ways
between a SQLite file and a real PostgreSQL (a fresh schema on the test server)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from phi.cli import app
from phi.errors import InvalidInput
from phi.memory import Memory, MiniLMEmbedder, NewRow
from phi.memory.model import Edge
from phi.memory.store import RowFilter, Store, open_store
from phi.memory.store.base import EmbeddingSpec, ModelCallRecord
from phi.memory.transfer import (
    TargetNotEmpty,
    TransferCounts,
    import_rows,
    migrate,
    migrate_stores,
)
from tests.memory.conformance import CONFORMANCE_SPEC, T0, make_row, vec, w
from tests.postgres.schemas import fresh_schema, fresh_schema_sync

pytestmark = pytest.mark.anyio
EVERYTHING = RowFilter(statuses=None)
DIRECTIONS = [("sqlite", "postgresql"), ("postgresql", "sqlite")]


@asynccontextmanager
async def location(kind: str, tmp_path: Path, name: str) -> AsyncIterator[str]:
    if kind == "sqlite":
        yield str(tmp_path / f"{name}.db")
        return
    async with fresh_schema() as url:
        yield url


@asynccontextmanager
async def connected(url: str) -> AsyncIterator[Store]:
    store = open_store(url)
    await store.connect()
    try:
        yield store
    finally:
        await store.close()


ROWS = 23
"""Enough for several batches of 5 (the tests' batch size)."""


async def fill(store: Store) -> None:
    """A memory with everything `migrate` copies: rows in two namespaces, a superseded row,
    references, edges of each kind, markers, trimmed state versions, model calls."""
    await store.bind_embedding(CONFORMANCE_SPEC)
    rows = [
        make_row(f"note {i} about crows", namespace=f"ns-{i % 2}", at=i, tags=("t",))
        for i in range(ROWS - 1)
    ]
    old = rows[3]
    new = make_row("note 3, corrected", namespace=old.namespace, at=30, supersedes=old.row_id)
    await store.write(
        [w(r, vec(1, i, i % 3, 1), ("@bob",) if i % 4 == 0 else ()) for i, r in enumerate(rows)],
        [
            Edge(src=a.row_id, dst=b.row_id, edge_type="temporal")
            for a, b in itertools.pairwise(rows)
        ]
        + [Edge(src=rows[0].row_id, dst=rows[9].row_id, edge_type="semantic", weight=0.75)],
    )
    await store.write(
        [w(new, vec(1, 3, 1, 2))],
        [Edge(src=new.row_id, dst=old.row_id, edge_type="supersedes")],
        superseded=[old.row_id],
        at=T0 + timedelta(days=30),
    )
    await store.mark("extract", [r.row_id for r in rows[:12]], at=T0)
    await store.mark("summary", [rows[1].row_id], at=T0 + timedelta(days=2))
    for i in range(4):
        await store.write_state("block", "persona", f"v{i}", at=T0 + timedelta(days=i), keep=3)
    await store.write_state("block", "user:did:plc:a", "alice", at=T0)
    for purpose in ("extract", "extract", "review"):  # two equal calls: both are copied
        await store.log_model_call(
            ModelCallRecord(
                purpose=purpose, model="m", requests=1, input_tokens=9, output_tokens=2,
                outcome="ok", called_at=T0 + timedelta(microseconds=250001),
            )
        )  # fmt: skip


async def snapshot(store: Store) -> dict[str, Any]:
    """Everything `migrate` promises to copy, in a comparable form."""
    rows = [r async for r in store.scan(EVERYTHING)]
    ids = [r.row_id for r in rows]
    vectors = await store.get_vectors(ids)
    return {
        "rows": rows,
        "vectors": {i: np.round(v, 5).tolist() for i, v in vectors.items()},
        "refs": await store.refs_of(ids),
        "edges": sorted(
            (e.src, e.dst, e.edge_type, e.weight, e.created_at) for e in await store.edges(ids)
        ),
        "marks": sorted((m.pass_name, m.row_id, m.marked_at) for m in await store.marks_of(ids)),
        "state": await store.state_versions(),
        "calls": await store.model_calls(),
        "usage": await store.model_usage(),
        "embedding": await store.embedding(),
    }


@pytest.mark.parametrize(("src_kind", "dst_kind"), DIRECTIONS)
async def test_migrate_copies_everything(src_kind: str, dst_kind: str, tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        src_url = await stack.enter_async_context(location(src_kind, tmp_path, "src"))
        dst_url = await stack.enter_async_context(location(dst_kind, tmp_path, "dst"))
        async with connected(src_url) as src:
            await fill(src)
            before = await snapshot(src)
        steps: list[tuple[str, int, int]] = []
        report = await migrate(
            src_url, dst_url, batch_size=5, progress=lambda *step: steps.append(step)
        )
        assert report.source_counts == report.target_counts == report.copied
        assert (report.copied.rows, report.copied.edges, report.copied.marks) == (ROWS, 23, 13)
        assert (report.copied.state, report.copied.model_calls) == (4, 3)
        assert ("rows", ROWS, ROWS) in steps and ("edges", 23, 23) in steps
        # Into an empty PostgreSQL store the rows go in as a bulk load, its index after them.
        assert (("vector index", 1, 1) in steps) == (dst_kind == "postgresql")
        async with connected(dst_url) as dst:
            after = await snapshot(dst)
            assert after == before
            # The copy is a working store: text and vector search find the same rows.
            hits = await dst.text_search(["crows"], RowFilter(namespaces=("ns-0",)), limit=3)
            async with connected(src_url) as src:
                expected = await src.text_search(
                    ["crows"], RowFilter(namespaces=("ns-0",)), limit=3
                )
            assert [h.row_id for h in hits] == [h.row_id for h in expected]
            near = await dst.vector_search(vec(1, 5, 2, 1), RowFilter(), limit=1)
            assert near[0].row_id == before["rows"][5].row_id
        # Running it again copies nothing and still verifies.
        again = await migrate(src_url, dst_url, batch_size=5)
        assert again.copied == TransferCounts(rows=0, edges=0, marks=0, state=0, model_calls=0)
        assert again.target_counts == report.target_counts


@pytest.mark.parametrize(("src_kind", "dst_kind"), DIRECTIONS)
async def test_migrate_carries_rows_waiting_for_their_vector(
    src_kind: str, dst_kind: str, tmp_path: Path
) -> None:
    """A row the source has not embedded yet arrives queued, not lost nor failing the copy."""
    async with AsyncExitStack() as stack:
        src_url = await stack.enter_async_context(location(src_kind, tmp_path, "src"))
        dst_url = await stack.enter_async_context(location(dst_kind, tmp_path, "dst"))
        embedded, waiting = make_row("crows at dawn"), make_row("ravens at dusk", at=1)
        async with connected(src_url) as src:
            await src.bind_embedding(CONFORMANCE_SPEC)
            await src.write([w(embedded, vec(1, 0, 0, 0)), w(waiting, None)], [])
        report = await migrate(src_url, dst_url)
        assert report.copied.rows == 2
        async with connected(dst_url) as dst:
            assert await dst.unembedded(limit=5) == [waiting]
            assert await dst.count_unembedded(RowFilter(namespaces=("ns-a",))) == 1
            assert list(await dst.get_vectors([embedded.row_id, waiting.row_id])) == [
                embedded.row_id
            ]


class Interrupted(Exception):
    pass


def failing_after(calls: int, method: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    """`method`, failing from its `calls`+1-th call on (a crash mid-migration)."""
    seen = 0

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal seen
        seen += 1
        if seen > calls:
            raise Interrupted(f"interrupted at call {seen}")
        return await method(*args, **kwargs)

    return wrapper


@pytest.mark.parametrize(("src_kind", "dst_kind"), DIRECTIONS)
@pytest.mark.parametrize("crash_in", ["write", "add_edges", "log_model_call"])
async def test_an_interrupted_migration_resumes_without_duplicates(
    src_kind: str, dst_kind: str, crash_in: str, tmp_path: Path
) -> None:
    async with AsyncExitStack() as stack:
        src_url = await stack.enter_async_context(location(src_kind, tmp_path, "src"))
        dst_url = await stack.enter_async_context(location(dst_kind, tmp_path, "dst"))
        async with connected(src_url) as src:
            await fill(src)
            before = await snapshot(src)
            async with connected(dst_url) as dst:
                setattr(dst, crash_in, failing_after(2, getattr(dst, crash_in)))
                with pytest.raises(Interrupted):
                    await migrate_stores(src, dst, batch_size=5)
                partial_rows = await dst.count(EVERYTHING)
                assert 0 < partial_rows <= ROWS
        report = await migrate(src_url, dst_url, batch_size=5)
        assert report.target_counts == report.source_counts
        assert report.copied.rows == ROWS - partial_rows
        async with connected(dst_url) as dst:
            assert await snapshot(dst) == before


async def test_migrate_refuses_a_target_of_another_model(tmp_path: Path) -> None:
    src_url, dst_url = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    async with connected(src_url) as src:
        await fill(src)
    async with connected(dst_url) as dst:
        await dst.bind_embedding(EmbeddingSpec(model="other", dimension=4))
        await dst.write([w(make_row("theirs"), vec(1, 0, 0, 0))], [])
    with pytest.raises(InvalidInput, match=r"holds vectors from 'other' \(4-d\).*conformance-4d"):
        await migrate(src_url, dst_url)
    with pytest.raises(InvalidInput, match="same store"):
        await migrate(src_url, src_url)
    async with connected(dst_url) as dst:
        assert [r.content async for r in dst.scan(EVERYTHING)] == ["theirs"]


async def test_migrate_into_a_store_with_other_rows_is_refused_before_copying(
    tmp_path: Path,
) -> None:
    """Issue 25: it used to copy first, then fail its count check with the rows copied."""
    src_url, dst_url = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    async with connected(src_url) as src:
        await fill(src)
    async with connected(dst_url) as dst:
        await dst.bind_embedding(CONFORMANCE_SPEC)
        await dst.write([w(make_row("already here", namespace="ns-x"), vec(1, 0, 0, 0))], [])
    with pytest.raises(TargetNotEmpty, match=r"holds 1 row .*nothing was copied"):
        await migrate(src_url, dst_url)
    async with connected(dst_url) as dst:
        assert await dst.count(EVERYTHING) == 1


def phi(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_cli_migrate_sqlite_to_postgres_then_search_there(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    for namespace, text in [
        ("phi-users-did:plc:alice", "alice adopted a greyhound named Pixel"),
        ("phi-episodic", "crows are clever"),
    ]:
        code, out = phi("memory", "add", text, "-n", namespace, "--db", db)
        assert code == 0, out
    with fresh_schema_sync() as url:
        code, out = phi("memory", "migrate", "--from", db, "--to", url, "--json")
        assert code == 0, out
        report = json.loads(out)
        assert report["counts"]["rows"] == report["copied"]["rows"] == 2
        code, out = phi(
            "memory", "search", "what is her dog called?", "-n",
            "phi-users-did:plc:alice", "--db", url, "--json",
        )  # fmt: skip
        assert code == 0, out
        assert json.loads(out)["results"][0]["content"] == "alice adopted a greyhound named Pixel"
        code, out = phi("memory", "migrate", "--from", db, "--to", url)
        assert code == 0 and "rows: 2 (this run copied 0)" in out and "verified" in out
        assert "(0 rows/s copied)" in out
    export = tmp_path / "export.jsonl"
    code, out = phi("memory", "export", "--db", db, "-o", str(export))
    assert code == 0, out
    with fresh_schema_sync() as url:
        code, out = phi("memory", "import", str(export), "--db", url, "--json")
        assert code == 0 and json.loads(out) == {"rows": 2, "written": 2}, out
        code, out = phi("memory", "import", str(export), "--db", url)
        assert code == 0 and "imported 2 rows (0 new, 2 already there)" in out, out
        code, out = phi("memory", "search", "crows", "-n", "phi-episodic", "--db", url, "--json")
        assert code == 0 and json.loads(out)["results"][0]["content"] == "crows are clever"
    code, out = phi("memory", "migrate", "--from", db, "--to", db)
    assert code == 2 and "same store" in out


@pytest.mark.parametrize(("src_kind", "dst_kind"), DIRECTIONS)
async def test_export_then_import_re_embeds(
    src_kind: str, dst_kind: str, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    async with AsyncExitStack() as stack:
        src_url = await stack.enter_async_context(location(src_kind, tmp_path, "src"))
        dst_url = await stack.enter_async_context(location(dst_kind, tmp_path, "dst"))
        async with Memory.open(src_url, embedder=minilm) as memory:
            first = await memory.remember(NewRow(
                namespace="phi-episodic", kind="note", content="the heron fishes at dawn",
                source_uris=("at://did:plc:bob/app.bsky.feed.post/1",),
            ))  # fmt: skip
            await memory.remember(NewRow(
                namespace="phi-episodic", kind="note", content="the heron fishes at dusk",
                supersedes=first.row_id,
            ))  # fmt: skip
            await memory.remember(
                NewRow(namespace="ns-b", kind="note", content="tea with @bob.test")
            )
        async with (
            Memory.open(src_url, embedder=minilm) as source,
            Memory.open(dst_url, embedder=minilm) as target,
        ):
            expected = [r async for r in source.export()]
            # What `phi memory export` writes, line for line.
            lines = [json.dumps(r.to_json(), ensure_ascii=False) for r in expected]
            report = await import_rows(target, lines)
            assert (report.rows, report.written) == (3, 3)
            got = [r async for r in target.export()]
            assert got == expected
            assert [r.status for r in got] == ["superseded", "active", "active"]
            hits = await target.search("when does the heron fish?", namespace="phi-episodic")
            assert hits[0].row.content == "the heron fishes at dusk"
            ids = [r.row_id for r in got]
            refs = await target.store.refs_of(ids)
            assert refs == await source.store.refs_of(ids) and refs[ids[2]] == ("bob.test",)
            again = await import_rows(target, lines)
            assert (again.rows, again.written) == (3, 0)


def test_import_checks_the_whole_file_first(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    good = make_row("a fine row").to_json()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(good) + "\n" + json.dumps({**good, "kind": "gossip"}) + "\n")
    code, out = phi("memory", "import", str(bad), "--db", db)
    assert code == 2 and "bad.jsonl:2" in out and "gossip" in out
    bad.write_text(json.dumps(good) + "\n{not json\n")
    code, out = phi("memory", "import", str(bad), "--db", db)
    assert code == 2 and "bad.jsonl:2: not JSON" in out
    code, out = phi("memory", "import", str(tmp_path / "missing.jsonl"), "--db", db)
    assert code == 2 and "no such file" in out
    code, out = phi("memory", "stats", "--db", db, "--json")
    assert code == 0 and json.loads(out)["rows"] == 0
