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

Before copying anything it checks the target: one holding data the source does not is
refused (`TargetNotEmpty`). Rows and state an older phi wrote with text no store can keep
(a NUL character, which PostgreSQL refuses) are left behind with their edges and markers
and listed in `MigrationReport.left_behind`; everything else is copied, and the counts are
verified less what was left behind (`phi.memory._migrate_checks`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

from phi.errors import InvalidInput, PhiError
from phi.memory._migrate_checks import (
    LeftBehind,
    SkippedRow,
    SkippedState,
    TargetNotEmpty,
    check_target,
    row_problem,
    state_problem,
)
from phi.memory._migrate_copy import (
    Progress,
    copy_edges,
    copy_model_calls,
    copy_rows,
    report,
)
from phi.memory.ingest import _row_refs
from phi.memory.memory import Memory
from phi.memory.model import (
    KINDS,
    STATUSES,
    TRUSTS,
    Row,
    content_hash,
    validate_namespace,
)
from phi.memory.store import RowFilter, RowWrite, Store, open_store
from phi.redact import redact, redact_data

__all__ = [
    "ImportReport",
    "LeftBehind",
    "MigrationMismatch",
    "MigrationReport",
    "Progress",
    "SkippedRow",
    "SkippedState",
    "TargetNotEmpty",
    "TransferCounts",
    "import_rows",
    "migrate",
    "migrate_stores",
]


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

    def less(self, left: LeftBehind) -> TransferCounts:
        """These counts without what a migration left behind."""
        return TransferCounts(
            rows=self.rows - len(left.rows),
            edges=self.edges - len(left.edges),
            marks=self.marks - left.marks,
            state=self.state - len(left.state),
            model_calls=self.model_calls,
        )

    def __str__(self) -> str:
        return (
            f"{self.rows} rows, {self.edges} edges, {self.marks} markers,"
            f" {self.state} versions of learning state, {self.model_calls} model calls"
        )


@dataclass(frozen=True, kw_only=True)
class MigrationReport:
    source: str
    target: str
    copied: TransferCounts
    """What this run wrote (less than `source` when it resumed an earlier run)."""
    source_counts: TransferCounts
    target_counts: TransferCounts
    """Counted after the copy; `source_counts` less `left_behind`, or `migrate` would have
    raised."""
    left_behind: LeftBehind
    """What no store can keep as it is (the source keeps it): empty on a whole copy."""
    seconds: float
    """How long the copy took (with the target's index builds and the final counts)."""


@dataclass(frozen=True, kw_only=True)
class ImportReport:
    rows: int
    """Rows in the file."""
    written: int
    """Rows the store did not hold yet."""


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
    await check_target(source, target, batch_size=batch_size)
    if spec is not None:
        await target.bind_embedding(spec)
    started = time.perf_counter()
    total_rows = await source.count(EVERYTHING)
    total_edges = (await source.stats()).edges
    # Into an empty target the backend may defer its index upkeep to the end of the rows
    # (PostgreSQL builds its HNSW index once); a resumed run is not empty and copies its
    # rest the ordinary way.
    async with target.bulk_load() as deferred:
        rows = await copy_rows(source, target, total_rows, batch_size, progress)
        if deferred:  # the build runs as the block ends: say what the wait is for
            report(progress, "vector index", 0, 1)
    if deferred:
        report(progress, "vector index", 1, 1)
    edges_before = (await target.stats()).edges
    left_edges = await copy_edges(source, target, rows, total_edges, batch_size, progress)
    edges_after = (await target.stats()).edges
    source_state = await source.state_versions()
    left_state = [
        SkippedState(scope=e.scope, key=e.key, version=e.version, problem=problem)
        for e in source_state
        if (problem := state_problem(e)) is not None
    ]
    state = await target.restore_state([e for e in source_state if state_problem(e) is None])
    report(progress, "learning state", len(source_state), len(source_state))
    source_calls = await source.model_calls()
    calls = await copy_model_calls(source_calls, target, progress)
    left = LeftBehind(
        rows=tuple(rows.skipped),
        edges=tuple(left_edges),
        marks=rows.skipped_marks,
        state=tuple(left_state),
    )
    source_counts = TransferCounts(
        rows=total_rows,
        edges=total_edges,
        marks=rows.marks + rows.skipped_marks,
        state=len(source_state),
        model_calls=len(source_calls),
    )
    target_counts = TransferCounts(
        rows=await target.count(EVERYTHING),
        edges=edges_after,
        marks=rows.target_marks,
        state=len(await target.state_versions()),
        model_calls=len(await target.model_calls()),
    )
    if target_counts != (expected := source_counts.less(left)):
        raise MigrationMismatch(
            f"after copying, {target.location!r} holds {target_counts} where it should hold"
            f" {expected} (what {source.location!r} holds that a store can keep); did another"
            " process write to either store during the migration?"
        )
    return MigrationReport(
        source=source.location,
        target=target.location,
        copied=TransferCounts(
            rows=rows.written,
            edges=edges_after - edges_before,
            marks=rows.new_marks,
            state=state,
            model_calls=calls,
        ),
        source_counts=source_counts,
        target_counts=target_counts,
        left_behind=left,
        seconds=time.perf_counter() - started,
    )


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
        # Redacted as every write is (`ingest`): an older phi's export may hold secrets.
        sources = tuple(redact(str(u)) for u in value.get("source_uris") or ())
        content = redact(str(value["content"]))
        meta = value.get("meta") or {}
        if not isinstance(meta, dict):
            raise InvalidInput(f"{where}: meta must be a JSON object")
        meta = redact_data(meta)
        row = Row(
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
            written_by=value["written_by"] if isinstance(value.get("written_by"), str) else None,
        )
    except KeyError as exc:
        raise InvalidInput(f"{where}: missing field {exc.args[0]!r}") from None
    # The rule every write follows (an export of an older phi's store may hold a NUL).
    if (problem := row_problem(row)) is not None:
        raise InvalidInput(f"{where}: {problem}")
    return row


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
    report(progress, "rows", 0, len(rows))
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
        report(progress, "rows", start + len(batch), len(rows))
    return ImportReport(rows=len(rows), written=written)
