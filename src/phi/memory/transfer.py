"""Moving a memory between stores: `migrate` (everything, store to store) and
`import_rows` (what `phi memory export` wrote, re-embedded).

`migrate` copies rows with their vectors and references (status, supersession and
timestamps travel with each row), edges, the learning passes' markers, every version of
learning state, and the model-call log. It is resumable: each step skips what the target
already holds (rows by identity, state by version, model calls by value) and the store's
writes are idempotent upserts, so running it again after an interruption finishes the copy
without duplicates. At the end it counts both sides and raises `MigrationMismatch` if they
differ. Into an empty target the rows go in as a bulk load (`RowStore.bulk_load`: the
PostgreSQL store builds its vector index once, after the rows).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

from phi.errors import InvalidInput, PhiError
from phi.memory.ingest import _row_refs
from phi.memory.memory import Memory
from phi.memory.model import (
    KINDS,
    STATUSES,
    TRUSTS,
    Edge,
    Row,
    content_hash,
    validate_namespace,
)
from phi.memory.store import RowFilter, RowWrite, Store, open_store
from phi.memory.store.base import ModelCallRecord

__all__ = [
    "ImportReport",
    "MigrationMismatch",
    "MigrationReport",
    "Progress",
    "TransferCounts",
    "import_rows",
    "migrate",
    "migrate_stores",
]

Progress = Callable[[str, int, int], None]
"""Called as `(step, done, total)` while a transfer runs (for a progress bar)."""

BATCH_ROWS: Final = 500
EVERYTHING: Final = RowFilter(statuses=None)


class MigrationMismatch(PhiError):
    """After a migration the target does not hold what the source holds."""


@dataclass(frozen=True, kw_only=True)
class TransferCounts:
    """How much of each kind of data one side holds (or one run copied)."""

    rows: int
    edges: int
    marks: int
    """Learning passes' markers on rows."""
    state: int
    """Versions of learning state."""
    model_calls: int


@dataclass(frozen=True, kw_only=True)
class MigrationReport:
    source: str
    target: str
    copied: TransferCounts
    """What this run wrote (less than `source` when it resumed an earlier run)."""
    source_counts: TransferCounts
    target_counts: TransferCounts
    """Counted after the copy; equal to `source_counts`, or `migrate` would have raised."""
    seconds: float
    """How long the copy took (with the target's index builds and the final counts)."""


@dataclass(frozen=True, kw_only=True)
class ImportReport:
    rows: int
    """Rows in the file."""
    written: int
    """Rows the store did not hold yet."""


def _report(progress: Progress | None, step: str, done: int, total: int) -> None:
    if progress is not None:
        progress(step, done, total)


async def migrate(
    source: str | Path,
    target: str | Path,
    *,
    batch_size: int = BATCH_ROWS,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy everything from the store at `source` to the store at `target` (a SQLite path
    or a `postgresql://` URL each); see the module docstring."""
    if str(source) == str(target):
        raise InvalidInput(f"the source and the target are the same store: {str(source)!r}")
    src, dst = open_store(source), open_store(target)
    await src.connect()
    try:
        await dst.connect()
        try:
            return await migrate_stores(src, dst, batch_size=batch_size, progress=progress)
        finally:
            await dst.close()
    finally:
        await src.close()


async def migrate_stores(
    source: Store,
    target: Store,
    *,
    batch_size: int = BATCH_ROWS,
    progress: Progress | None = None,
) -> MigrationReport:
    """`migrate` between two connected stores."""
    spec = await source.embedding()
    held = await target.embedding()
    if spec is not None and held is not None and held != spec:
        raise InvalidInput(
            f"the target {target.location!r} holds vectors from {held.model!r}"
            f" ({held.dimension}-d) but the source's are from {spec.model!r}"
            f" ({spec.dimension}-d); migrate into an empty store or one of the same model"
        )
    if spec is not None:
        await target.bind_embedding(spec)
    started = time.perf_counter()
    total_rows = await source.count(EVERYTHING)
    total_edges = (await source.stats()).edges
    # Into an empty target the backend may defer its index upkeep to the end of the rows
    # (PostgreSQL builds its HNSW index once); a resumed run is not empty and copies its
    # rest the ordinary way.
    async with target.bulk_load() as deferred:
        rows, (marks, target_marks, new_marks), renamed = await _copy_rows(
            source, target, total_rows, batch_size, progress
        )
        if deferred:  # the build runs as the block ends: say what the wait is for
            _report(progress, "vector index", 0, 1)
    if deferred:
        _report(progress, "vector index", 1, 1)
    edges_before = (await target.stats()).edges
    await _copy_edges(source, target, renamed, total_edges, batch_size, progress)
    edges_after = (await target.stats()).edges
    source_state = await source.state_versions()
    state = await target.restore_state(source_state)
    _report(progress, "learning state", len(source_state), len(source_state))
    source_calls = await source.model_calls()
    calls = await _copy_model_calls(source_calls, target, progress)
    source_counts = TransferCounts(
        rows=total_rows,
        edges=total_edges,
        marks=marks,
        state=len(source_state),
        model_calls=len(source_calls),
    )
    target_counts = TransferCounts(
        rows=await target.count(EVERYTHING),
        edges=edges_after,
        marks=target_marks,
        state=len(await target.state_versions()),
        model_calls=len(await target.model_calls()),
    )
    if target_counts != source_counts:
        raise MigrationMismatch(
            f"after copying, {target.location!r} holds {target_counts} but {source.location!r}"
            f" holds {source_counts}; was the target empty (or an earlier run of this"
            " migration) when you started?"
        )
    return MigrationReport(
        source=source.location,
        target=target.location,
        copied=TransferCounts(
            rows=rows,
            edges=edges_after - edges_before,
            marks=new_marks,
            state=state,
            model_calls=calls,
        ),
        source_counts=source_counts,
        target_counts=target_counts,
        seconds=time.perf_counter() - started,
    )


async def _batches(store: Store, batch_size: int) -> AsyncIterator[list[Row]]:
    batch: list[Row] = []
    async for row in store.scan(EVERYTHING, batch_size=batch_size):
        batch.append(row)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


async def _copy_rows(
    source: Store, target: Store, total: int, batch_size: int, progress: Progress | None
) -> tuple[int, tuple[int, int, int], dict[str, str]]:
    """Rows with vectors, references and markers. Returns rows written; markers in the
    source, in the target and new in the target; and the source ids the target knows under
    another id (a row of the same identity it held already)."""
    written = marks = target_marks = new_marks = done = 0
    renamed: dict[str, str] = {}
    _report(progress, "rows", 0, total)
    async for batch in _batches(source, batch_size):
        held = await target.find_by_hash([(r.namespace, r.content_hash) for r in batch])
        missing = [r for r in batch if (r.namespace, r.content_hash) not in held]
        for row in batch:
            stored = held.get((row.namespace, row.content_hash))
            if stored is None:
                continue
            if stored.row_id != row.row_id:
                renamed[row.row_id] = stored.row_id
            if stored.status != row.status:  # superseded in the source since the last run
                await target.set_status([stored.row_id], row.status, at=row.updated_at)
        if missing:
            ids = [r.row_id for r in missing]
            vectors = await source.get_vectors(ids)
            refs = await source.refs_of(ids)
            # A row the source has not embedded yet has no vector: it waits in the
            # target's queue instead (`RowWrite.vector` None).
            stored_rows = await target.write(
                [
                    RowWrite(row=r, vector=vectors.get(r.row_id), refs=refs.get(r.row_id, ()))
                    for r in missing
                ],
                [],
            )
            for row, stored_row in zip(missing, stored_rows, strict=True):
                if stored_row.row_id != row.row_id:
                    renamed[row.row_id] = stored_row.row_id
            written += len(missing)
        in_source, in_target, new = await _copy_marks(source, target, batch, renamed)
        marks, target_marks, new_marks = (
            marks + in_source,
            target_marks + in_target,
            new_marks + new,
        )
        done += len(batch)
        _report(progress, "rows", done, total)
    return written, (marks, target_marks, new_marks), renamed


async def _copy_marks(
    source: Store, target: Store, batch: Sequence[Row], renamed: dict[str, str]
) -> tuple[int, int, int]:
    """The learning passes' markers on a batch of rows: how many the source holds, how
    many the target holds afterwards, and how many of those are new."""
    source_marks = await source.marks_of([r.row_id for r in batch])
    mapped = [renamed.get(r.row_id, r.row_id) for r in batch]
    before = len(await target.marks_of(mapped))
    groups: dict[tuple[str, datetime], list[str]] = {}
    for mark in source_marks:
        groups.setdefault((mark.pass_name, mark.marked_at), []).append(
            renamed.get(mark.row_id, mark.row_id)
        )
    for (pass_name, at), row_ids in groups.items():
        await target.mark(pass_name, row_ids, at=at)
    after = len(await target.marks_of(mapped)) if groups else before
    return len(source_marks), after, after - before


async def _copy_edges(
    source: Store,
    target: Store,
    renamed: dict[str, str],
    total: int,
    batch_size: int,
    progress: Progress | None,
) -> None:
    """Every edge, once (from the batch holding its source end); an edge already in the
    target keeps its weight (`add_edges` keeps the higher one, and they are equal)."""
    done = 0
    _report(progress, "edges", 0, total)
    async for batch in _batches(source, batch_size):
        ids = {r.row_id for r in batch}
        edges = [e for e in await source.edges(sorted(ids)) if e.src in ids]
        if edges:
            await target.add_edges(
                [
                    Edge(
                        src=renamed.get(e.src, e.src),
                        dst=renamed.get(e.dst, e.dst),
                        edge_type=e.edge_type,
                        weight=e.weight,
                        created_at=e.created_at,
                    )
                    for e in edges
                ]
            )
        done += len(edges)
        _report(progress, "edges", done, total)


async def _copy_model_calls(
    calls: Sequence[ModelCallRecord], target: Store, progress: Progress | None
) -> int:
    """The log has no identity of its own: a call the target holds with every field equal
    (as many times as in the source) was copied by an earlier run."""
    held = Counter(await target.model_calls())
    copied = 0
    _report(progress, "model calls", 0, len(calls))
    for done, call in enumerate(calls, 1):
        if held[call] > 0:
            held[call] -= 1
        else:
            await target.log_model_call(call)
            copied += 1
        _report(progress, "model calls", done, len(calls))
    return copied


# -- import ------------------------------------------------------------------------------


def _parse_line(line: str, where: str) -> Row:
    """One line of `phi memory export` (`Row.to_json`) as a row."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{where}: expected a JSON object (a row), got {type(value).__name__}")
    try:
        kind, status, trust = value["kind"], value["status"], value["trust"]
        if kind not in KINDS or status not in STATUSES or trust not in TRUSTS:
            raise InvalidInput(f"{where}: unknown kind, status or trust {(kind, status, trust)!r}")
        sources = tuple(str(u) for u in value.get("source_uris") or ())
        content = str(value["content"])
        meta = value.get("meta") or {}
        if not isinstance(meta, dict):
            raise InvalidInput(f"{where}: meta must be a JSON object")
        return Row(
            row_id=str(value["row_id"]),
            namespace=validate_namespace(str(value["namespace"])),
            kind=kind,
            content=content,
            status=status,
            supersedes=value.get("supersedes"),
            trust=trust,
            tags=tuple(str(t) for t in value.get("tags") or ()),
            source_uris=sources,
            author=value.get("author"),
            created_at=_moment(value["created_at"], where),
            updated_at=_moment(value["updated_at"], where),
            meta=meta,
            content_hash=content_hash(kind, content, sources),
        )
    except KeyError as exc:
        raise InvalidInput(f"{where}: missing field {exc.args[0]!r}") from None


def _moment(value: object, where: str) -> datetime:
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        raise InvalidInput(f"{where}: {value!r} is not an ISO 8601 timestamp") from None
    if moment.tzinfo is None:
        raise InvalidInput(f"{where}: timestamp {value!r} has no time zone")
    return moment


async def import_rows(
    memory: Memory,
    lines: Iterable[str],
    *,
    name: str = "<input>",
    batch_size: int = 64,
    progress: Progress | None = None,
) -> ImportReport:
    """Write the rows of a `phi memory export` file into `memory`, re-embedding their text
    with its embedder (an export carries no vectors). Ids, statuses, supersession and
    timestamps are kept; a row whose identity the store holds is left as it is, so
    importing twice is harmless. The whole file is checked before anything is written.
    Graph edges are not in an export and are not rebuilt."""
    rows = [_parse_line(line, f"{name}:{n}") for n, line in enumerate(lines, 1) if line.strip()]
    store = memory.store
    written = 0
    _report(progress, "rows", 0, len(rows))
    for start in range(0, len(rows), batch_size):
        batch = rows[start : start + batch_size]
        held = await store.find_by_hash([(r.namespace, r.content_hash) for r in batch])
        missing = [r for r in batch if (r.namespace, r.content_hash) not in held]
        if missing:
            vectors = await memory.embedder.embed([r.content for r in missing])
            await store.write(
                [
                    RowWrite(row=r, vector=v, refs=tuple(_row_refs(r, memory.ingest_policy)))
                    for r, v in zip(missing, vectors, strict=True)
                ],
                [],
            )
            written += len(missing)
        _report(progress, "rows", start + len(batch), len(rows))
    return ImportReport(rows=len(rows), written=written)
