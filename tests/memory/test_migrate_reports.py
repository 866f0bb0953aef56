"""`migrate` copies what it can and says what it could not (issue 23, finding 9), and checks
its target before copying anything (issue 25).

An older phi accepted NUL characters, which SQLite keeps and PostgreSQL refuses: a migration
to PostgreSQL stopped at the first such row, and every rerun at the same place. Such rows
(written here with raw SQL, as that phi left them) are now left behind and reported with
their edges, markers and state, everything else is copied, and a rerun is idempotent.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from pathlib import Path

import anyio
import apsw
import pytest
from typer.testing import CliRunner

from phi.cli import app
from phi.errors import UserError
from phi.memory.model import Edge, content_hash
from phi.memory.store import RowFilter, Store, open_store
from phi.memory.store.base import EmbeddingSpec, ModelCallRecord
from phi.memory.transfer import (
    LeftBehind,
    MigrationMismatch,
    SkippedState,
    TargetNotEmpty,
    TransferCounts,
    migrate,
    migrate_stores,
)
from tests.memory.conformance import CONFORMANCE_SPEC, T0, make_row, vec, w
from tests.postgres.schemas import fresh_schema, fresh_schema_sync

pytestmark = pytest.mark.anyio
EVERYTHING = RowFilter(statuses=None)
ROWS = 12
POISONED = {2: "content", 5: "tags", 7: "meta"}
"""Row index -> the field an older phi let a NUL into."""


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


async def fill(store: Store) -> list[str]:
    """Rows in two namespaces with temporal and semantic edges, markers, state and a model
    call; returns the row ids in order."""
    await store.bind_embedding(CONFORMANCE_SPEC)
    rows = [make_row(f"note {i} about crows", namespace=f"ns-{i % 2}", at=i) for i in range(ROWS)]
    await store.write(
        [w(r, vec(1, i, i % 3, 1)) for i, r in enumerate(rows)],
        [
            Edge(src=a.row_id, dst=b.row_id, edge_type="temporal")
            for a, b in itertools.pairwise(rows)
        ]
        + [Edge(src=rows[0].row_id, dst=rows[5].row_id, edge_type="semantic", weight=0.5)],
    )
    await store.mark("extract", [r.row_id for r in rows[:8]], at=T0)
    await store.write_state("gate", "pending", "v1", at=T0)
    await store.write_state("gate", "pending", "v2", at=T0 + timedelta(days=1))
    await store.log_model_call(
        ModelCallRecord(
            purpose="extract", model="m", requests=1, input_tokens=9, output_tokens=2,
            outcome="ok", called_at=T0,
        )
    )  # fmt: skip
    return [r.row_id for r in rows]


def poison(db: str, ids: list[str]) -> None:
    """What an older phi wrote: NUL characters in a content, a tag, a meta value and one
    version of learning state, in the SQLite file itself."""
    conn = apsw.Connection(db)
    try:
        content = "note 2 about\x00crows"
        conn.execute(
            "UPDATE rows SET content = ?, content_hash = ? WHERE row_id = ?",
            (content, content_hash("note", content, ()), ids[2]),
        )
        conn.execute(
            "UPDATE rows SET tags = ? WHERE row_id = ?", (json.dumps(["ok", "t\x00"]), ids[5])
        )
        conn.execute(
            "UPDATE rows SET meta = ? WHERE row_id = ?", (json.dumps({"k": "\x00v"}), ids[7])
        )
        conn.execute(
            "UPDATE learning_state SET value = ? WHERE scope = 'gate' AND version = 1",
            ("v\x001",),
        )
    finally:
        conn.close()


def left_edges(ids: list[str]) -> list[tuple[str, str, str]]:
    """The edges `fill` made that touch a poisoned row."""
    bad = {ids[i] for i in POISONED}
    made = [(a, b, "temporal") for a, b in itertools.pairwise(ids)] + [(ids[0], ids[5], "semantic")]
    return sorted(e for e in made if e[0] in bad or e[1] in bad)


@pytest.mark.parametrize("dst_kind", ["postgresql", "sqlite"])
async def test_rows_no_store_can_keep_are_left_behind_and_reported(
    dst_kind: str, tmp_path: Path
) -> None:
    src_url = str(tmp_path / "src.db")
    async with AsyncExitStack() as stack:
        dst_url = await stack.enter_async_context(location(dst_kind, tmp_path, "dst"))
        async with connected(src_url) as src:
            ids = await fill(src)
        poison(src_url, ids)
        report = await migrate(src_url, dst_url, batch_size=5)
        left = report.left_behind
        assert [(r.row_id, r.namespace) for r in left.rows] == [
            (ids[i], f"ns-{i % 2}") for i in sorted(POISONED)
        ]
        problems = [r.problem for r in left.rows]
        assert problems[0].startswith("content holds a NUL character at position 12")
        assert problems[1].startswith("tag holds a NUL character at position 1")
        assert problems[2].startswith("meta['k'] holds a NUL character at position 0")
        assert sorted((e.src, e.dst, e.edge_type) for e in left.edges) == left_edges(ids)
        assert left.marks == 3  # rows 2, 5 and 7 were marked
        assert [(s.scope, s.key, s.version) for s in left.state] == [("gate", "pending", 1)]
        assert left.state[0].problem.startswith("state value holds a NUL character at position 1")
        n_edges = ROWS  # 11 temporal + 1 semantic
        assert report.source_counts == TransferCounts(
            rows=ROWS, edges=n_edges, marks=8, state=2, model_calls=1
        )
        expected = TransferCounts(
            rows=ROWS - 3, edges=n_edges - len(left.edges), marks=5, state=1, model_calls=1
        )
        assert report.target_counts == report.copied == expected
        async with connected(dst_url) as dst:
            copied = {r.row_id async for r in dst.scan(EVERYTHING)}
            assert copied == set(ids) - {ids[i] for i in POISONED}
            edges = {(e.src, e.dst, e.edge_type) for e in await dst.edges(sorted(copied))}
            assert len(edges) == n_edges - len(left.edges)
            assert not edges & set(left_edges(ids))
            assert [(s.key, s.value) for s in await dst.state_versions()] == [("pending", "v2")]
        # A rerun is idempotent: it copies nothing, verifies, and reports the same.
        again = await migrate(src_url, dst_url, batch_size=5)
        assert again.copied == TransferCounts(rows=0, edges=0, marks=0, state=0, model_calls=0)
        assert again.left_behind == left and again.target_counts == expected


def phi(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_migrate_lists_what_it_left_behind(tmp_path: Path) -> None:
    src = str(tmp_path / "src.db")

    async def prepare() -> list[str]:
        async with connected(src) as store:
            return await fill(store)

    ids = anyio.run(prepare)
    poison(src, ids)
    with fresh_schema_sync() as url:
        code, out, err = phi("memory", "migrate", "--from", src, "--to", url)
        assert code == 1, (out, err)
        assert "rows: 9 (this run copied 9)" in out
        for i in POISONED:
            assert ids[i] in out
        assert "content holds a NUL character at position 12" in out
        assert "state 'gate' 'pending' v1: state value holds a NUL" in out
        assert "3 rows, 7 edges, 3 markers and 1 version of learning state" in err
        assert "not copied" in err and "Traceback" not in out + err
        code, out, err = phi("memory", "migrate", "--from", src, "--to", url, "--json")
        assert code == 1, (out, err)
        report = json.loads(out)
        assert report["copied"]["rows"] == 0 and report["counts"]["rows"] == 9
        left = report["left_behind"]
        assert [r["row_id"] for r in left["rows"]] == [ids[i] for i in sorted(POISONED)]
        assert sorted((e["src"], e["dst"], e["edge_type"]) for e in left["edges"]) == left_edges(
            ids
        )
        assert (left["marks"], len(left["state"])) == (3, 1)


TARGET_EXTRAS = {
    "row": "1 row",
    "state": "1 version of learning state",
    "model call": "1 model call",
}
"""Something the target holds that the source does not -> how the refusal names it."""


async def add_extra(store: Store, extra: str) -> None:
    await store.bind_embedding(CONFORMANCE_SPEC)
    if extra == "row":
        await store.write([w(make_row("already here", namespace="ns-x"), vec(1, 0, 0, 0))], [])
    elif extra == "state":
        await store.write_state("gate", "theirs", "x", at=T0)
    else:
        await store.log_model_call(
            ModelCallRecord(
                purpose="review", model="other", requests=1, input_tokens=1, output_tokens=1,
                outcome="ok", called_at=T0,
            )
        )  # fmt: skip


async def contents(store: Store) -> tuple[int, int, int, int]:
    stats = await store.stats()
    return (
        stats.rows,
        stats.edges,
        len(await store.state_versions()),
        len(await store.model_calls()),
    )


@pytest.mark.parametrize("dst_kind", ["sqlite", "postgresql"])
@pytest.mark.parametrize("extra", TARGET_EXTRAS)
async def test_a_target_holding_other_data_is_refused_before_anything_is_copied(
    dst_kind: str, extra: str, tmp_path: Path
) -> None:
    src_url = str(tmp_path / "src.db")
    async with AsyncExitStack() as stack:
        dst_url = await stack.enter_async_context(location(dst_kind, tmp_path, "dst"))
        async with connected(src_url) as src:
            await fill(src)
        async with connected(dst_url) as dst:
            await add_extra(dst, extra)
            before = await contents(dst)
        with pytest.raises(TargetNotEmpty) as refused:
            await migrate(src_url, dst_url, batch_size=5)
        message = str(refused.value)
        assert isinstance(refused.value, UserError) and "\n" not in message
        assert f"holds {TARGET_EXTRAS[extra]}" in message and "nothing was copied" in message
        async with connected(dst_url) as dst:
            assert await contents(dst) == before


def test_cli_refuses_a_target_holding_other_rows_in_one_line(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src.db"), str(tmp_path / "dst.db")

    async def prepare() -> None:
        async with connected(src) as store:
            await fill(store)
        async with connected(dst) as store:
            await add_extra(store, "row")

    anyio.run(prepare)
    code, out, err = phi("memory", "migrate", "--from", src, "--to", dst)
    assert code == 2, (out, err)
    assert err.startswith("error: the target") and err.count("\n") == 1, err
    assert "holds 1 row" in err and "TransferCounts" not in err

    async def rows_in_target() -> int:
        async with connected(dst) as store:
            return await store.count(EVERYTHING)

    assert anyio.run(rows_in_target) == 1


async def test_a_target_of_another_model_is_still_refused_first(tmp_path: Path) -> None:
    src_url, dst_url = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    async with connected(src_url) as src:
        await fill(src)
    async with connected(dst_url) as dst:
        await dst.bind_embedding(EmbeddingSpec(model="other", dimension=4))
    with pytest.raises(UserError, match="holds vectors from 'other'"):
        await migrate(src_url, dst_url)


def test_left_behind_is_falsy_only_when_empty() -> None:
    assert not LeftBehind()
    assert LeftBehind(marks=1)
    assert LeftBehind(state=(SkippedState(scope="s", key="k", version=1, problem="p"),))


async def test_the_final_count_check_still_catches_a_short_copy(tmp_path: Path) -> None:
    """A target that loses edges (here: drops them) fails the verification, readably."""
    src_url, dst_url = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    async with connected(src_url) as src:
        await fill(src)
        async with connected(dst_url) as dst:

            async def drop(edges: object) -> None:
                return None

            dst.add_edges = drop  # type: ignore[method-assign]
            with pytest.raises(MigrationMismatch) as caught:
                await migrate_stores(src, dst, batch_size=5)
    message = str(caught.value)
    assert "holds 12 rows, 0 edges, 8 markers" in message
    assert "should hold 12 rows, 12 edges, 8 markers" in message
    assert "TransferCounts(" not in message
