"""What `phi.memory.transfer.migrate` checks around its copy: the target before anything is
copied, and each row and version of state against the text rule every store shares.

An older phi accepted text some store cannot keep (a NUL character: SQLite keeps it,
PostgreSQL refuses it). A migration copies everything else and leaves such data behind,
reported by id (`LeftBehind`), instead of stopping at the first of it on every run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass

from phi.errors import InvalidInput, UserError
from phi.memory.model import Edge, Row, validate_stored_text, validate_text
from phi.memory.store import RowFilter, Store
from phi.memory.store.ledger import StateEntry

__all__ = [
    "LeftBehind",
    "SkippedRow",
    "SkippedState",
    "TargetNotEmpty",
    "batches",
    "check_target",
    "row_problem",
    "state_problem",
]

EVERYTHING = RowFilter(statuses=None)


class TargetNotEmpty(UserError):
    """The target of a migration holds data its source does not: it is neither empty nor
    an earlier run of the same migration. Raised before anything is copied."""


@dataclass(frozen=True, kw_only=True)
class SkippedRow:
    """A source row no store can keep as it is."""

    row_id: str
    namespace: str
    problem: str
    """The text rule's message: the field and the position of the bad character."""


@dataclass(frozen=True, kw_only=True)
class SkippedState:
    """A version of learning state no store can keep as it is."""

    scope: str
    key: str
    version: int
    problem: str


@dataclass(frozen=True, kw_only=True)
class LeftBehind:
    """What a migration did not copy because some store cannot keep it (the source still
    holds all of it). Falsy when everything was copied."""

    rows: tuple[SkippedRow, ...] = ()
    edges: tuple[Edge, ...] = ()
    """Edges with an end among `rows`: an edge cannot outlive its row."""
    marks: int = 0
    """Learning passes' markers on `rows`."""
    state: tuple[SkippedState, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.rows or self.edges or self.marks or self.state)


def row_problem(row: Row) -> str | None:
    """Why no store can keep `row` as it is (`phi.memory.model.validate_text`), or `None`."""
    try:
        validate_text(row.row_id, what="row id")
        validate_stored_text(row)
    except InvalidInput as exc:
        return str(exc)
    return None


def state_problem(entry: StateEntry) -> str | None:
    """Why no store can keep this version of state as it is, or `None`."""
    try:
        validate_text(entry.scope, what="state scope")
        validate_text(entry.key, what="state key")
        validate_text(entry.value, what="state value")
    except InvalidInput as exc:
        return str(exc)
    return None


async def batches(store: Store, batch_size: int) -> AsyncIterator[list[Row]]:
    """Every row of `store` (any status), `batch_size` at a time, oldest first."""
    batch: list[Row] = []
    async for row in store.scan(EVERYTHING, batch_size=batch_size):
        batch.append(row)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def _plural(count: int, noun: str, many: str | None = None) -> str:
    return f"{count} {noun if count == 1 else many or noun + 's'}"


async def check_target(source: Store, target: Store, *, batch_size: int) -> None:
    """Refuse, before anything is copied, a target holding rows, state or model calls the
    source does not: only an empty store or an earlier run of this migration (a part of
    the source) may be continued, or the copy would mix two memories and fail its final
    count with the rows already copied. Costs a read of the target, nothing for an empty
    one.

    Raises:
        TargetNotEmpty: naming what the target holds and one example.
    """
    found: list[str] = []
    if await target.count(EVERYTHING):
        foreign: list[Row] = []
        async for batch in batches(target, batch_size):
            held = await source.find_by_hash([(r.namespace, r.content_hash) for r in batch])
            foreign += [r for r in batch if (r.namespace, r.content_hash) not in held]
        if foreign:
            first = foreign[0]
            found.append(
                f"{_plural(len(foreign), 'row')} (e.g. {first.row_id!r} in {first.namespace!r})"
            )
    known = {(e.scope, e.key, e.version, e.value) for e in await source.state_versions()}
    state = [
        e
        for e in await target.state_versions()
        if (e.scope, e.key, e.version, e.value) not in known
    ]
    if state:
        first_state = state[0]
        found.append(
            f"{_plural(len(state), 'version')} of learning state (e.g. {first_state.scope!r}"
            f" {first_state.key!r} v{first_state.version})"
        )
    calls = Counter(await target.model_calls()) - Counter(await source.model_calls())
    if calls:
        found.append(_plural(calls.total(), "model call"))
    if found:
        raise TargetNotEmpty(
            f"the target {target.location!r} holds {' and '.join(found)} that the source"
            f" {source.location!r} does not; nothing was copied: migrate into an empty store,"
            " or into one an earlier run of this same migration filled"
        )
