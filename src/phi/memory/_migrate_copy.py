"""The copy steps of `phi.memory.transfer.migrate`: rows (with vectors, references and
markers), edges and the model-call log, each resumable (what the target holds is skipped)
and each leaving behind what no store can keep (`phi.memory._migrate_checks`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from phi.memory._migrate_checks import SkippedRow, batches, row_problem
from phi.memory.model import Edge, Row
from phi.memory.store import RowWrite, Store
from phi.memory.store.base import ModelCallRecord

__all__ = ["Progress", "RowsCopied", "copy_edges", "copy_model_calls", "copy_rows", "report"]

Progress = Callable[[str, int, int], None]
"""Called as `(step, done, total)` while a transfer runs (for a progress bar)."""


def report(progress: Progress | None, step: str, done: int, total: int) -> None:
    """Tell `progress`, if any, how far `step` has come."""
    if progress is not None:
        progress(step, done, total)


@dataclass(frozen=True, kw_only=True)
class RowsCopied:
    """What `copy_rows` did: the counts `migrate` reports and checks, and what the edges'
    step needs to know."""

    written: int
    """Rows the target did not hold yet."""
    marks: int
    """Markers on the copied rows in the source."""
    target_marks: int
    """Markers on the copied rows in the target, afterwards."""
    new_marks: int
    renamed: dict[str, str]
    """Source ids the target knows under another id (a row of the same identity it held)."""
    skipped: list[SkippedRow]
    """Rows left behind: text no store can keep."""
    skipped_marks: int
    """Markers on the skipped rows (left behind with them)."""


async def copy_rows(
    source: Store, target: Store, total: int, batch_size: int, progress: Progress | None
) -> RowsCopied:
    """Rows with vectors, references and markers; a row no store can keep is skipped."""
    written = marks = target_marks = new_marks = skipped_marks = done = 0
    renamed: dict[str, str] = {}
    skipped: list[SkippedRow] = []
    report(progress, "rows", 0, total)
    async for whole in batches(source, batch_size):
        batch: list[Row] = []
        for row in whole:
            if (problem := row_problem(row)) is None:
                batch.append(row)
            else:
                skipped.append(
                    SkippedRow(row_id=row.row_id, namespace=row.namespace, problem=problem)
                )
                skipped_marks += len(await source.marks_of([row.row_id]))
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
        in_source, in_target, new = await copy_marks(source, target, batch, renamed)
        marks, target_marks, new_marks = (
            marks + in_source,
            target_marks + in_target,
            new_marks + new,
        )
        done += len(whole)
        report(progress, "rows", done, total)
    return RowsCopied(
        written=written,
        marks=marks,
        target_marks=target_marks,
        new_marks=new_marks,
        renamed=renamed,
        skipped=skipped,
        skipped_marks=skipped_marks,
    )


async def copy_marks(
    source: Store, target: Store, batch: Sequence[Row], renamed: dict[str, str]
) -> tuple[int, int, int]:
    """The learning passes' markers on a batch of rows: how many the source holds, how
    many the target holds afterwards, and how many of those are new."""
    if not batch:
        return 0, 0, 0
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


async def copy_edges(
    source: Store,
    target: Store,
    rows: RowsCopied,
    total: int,
    batch_size: int,
    progress: Progress | None,
) -> list[Edge]:
    """Every edge, once (from the batch holding its source end); an edge already in the
    target keeps its weight (`add_edges` keeps the higher one, and they are equal).
    Returns the edges left behind with a row (an end among `rows.skipped`)."""
    renamed, skipped = rows.renamed, {s.row_id for s in rows.skipped}
    left: list[Edge] = []
    done = 0
    report(progress, "edges", 0, total)
    async for batch in batches(source, batch_size):
        ids = {r.row_id for r in batch}
        edges = [e for e in await source.edges(sorted(ids)) if e.src in ids]
        kept = [e for e in edges if e.src not in skipped and e.dst not in skipped]
        left += [e for e in edges if e.src in skipped or e.dst in skipped]
        if kept:
            await target.add_edges(
                [
                    Edge(
                        src=renamed.get(e.src, e.src),
                        dst=renamed.get(e.dst, e.dst),
                        edge_type=e.edge_type,
                        weight=e.weight,
                        created_at=e.created_at,
                    )
                    for e in kept
                ]
            )
        done += len(edges)
        report(progress, "edges", done, total)
    return left


async def copy_model_calls(
    calls: Sequence[ModelCallRecord], target: Store, progress: Progress | None
) -> int:
    """The log has no identity of its own: a call the target holds with every field equal
    (as many times as in the source) was copied by an earlier run."""
    held = Counter(await target.model_calls())
    copied = 0
    report(progress, "model calls", 0, len(calls))
    for done, call in enumerate(calls, 1):
        if held[call] > 0:
            held[call] -= 1
        else:
            await target.log_model_call(call)
            copied += 1
        report(progress, "model calls", done, len(calls))
    return copied
