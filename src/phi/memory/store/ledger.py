"""The `Ledger` protocol: the memory engine's bookkeeping, apart from its rows.

Three small jobs, none of them a row: which rows each learning pass has processed
(marks), versioned key/value state (a person's block, a cached synthesis, an owner-gate
request, anything a caller keeps through `Memory.state`), and the append-only log of
language-model calls. A backend implements it next to `RowStore` (`phi.memory.store.base`)
and passes `tests/memory/conformance_ledger.py`. Marks name rows, so a ledger shares its
backend with the rows it marks; `RowStore.forget` takes a row's marks with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from phi.memory.model import Row

if TYPE_CHECKING:
    from phi.memory.store.base import RowFilter

__all__ = ["Ledger", "ModelCallRecord", "PassMark", "StateEntry", "UsageTotals"]


@dataclass(frozen=True, kw_only=True)
class StateEntry:
    """One version of a piece of state."""

    scope: str
    """What kind of state: `block`, `synthesis`, `gate`, ..."""
    key: str
    value: str
    version: int
    """1 for the first write, then one more per write."""
    written_at: datetime


@dataclass(frozen=True, kw_only=True)
class ModelCallRecord:
    """One language-model call made by a memory pass, for cost accounting."""

    purpose: str
    """The pass: `extract`, `reconcile`, `synthesize`, `summarize`, `review`."""
    model: str
    requests: int
    """Model requests in the call (retries of a malformed answer count)."""
    input_tokens: int
    output_tokens: int
    outcome: str
    """`ok`, or why the answer was not used (`malformed`, `invalid`)."""
    called_at: datetime


@dataclass(frozen=True, kw_only=True)
class UsageTotals:
    """Model usage of one pass."""

    purpose: str
    calls: int
    requests: int
    input_tokens: int
    output_tokens: int
    failures: int
    """Calls whose answer could not be used."""


@dataclass(frozen=True, kw_only=True)
class PassMark:
    """A learning pass's marker on one row."""

    pass_name: str
    row_id: str
    marked_at: datetime


class Ledger(Protocol):
    """Learning marks, versioned key/value state and the model-call log. All coroutines."""

    async def mark(self, pass_name: str, row_ids: Sequence[str], *, at: datetime) -> None:
        """Record that `pass_name` has processed these rows (an explicit marker; marking
        twice is harmless; unknown ids are ignored)."""
        ...

    async def unmarked(self, pass_name: str, where: RowFilter, *, limit: int) -> list[Row]:
        """Rows within `where` that `pass_name` has not marked, oldest first."""
        ...

    async def read_state(self, scope: str, key: str) -> StateEntry | None:
        """The newest version of `(scope, key)`, or `None`."""
        ...

    async def write_state(
        self, scope: str, key: str, value: str, *, at: datetime, keep: int = 20
    ) -> int:
        """Write a new version of `(scope, key)` and return its number; the newest `keep`
        versions are kept, older ones dropped."""
        ...

    async def state_keys(self, scope: str) -> list[str]:
        """Every key of `scope` that has a value, sorted."""
        ...

    async def state_history(self, scope: str, key: str, *, limit: int = 20) -> list[StateEntry]:
        """The kept versions of `(scope, key)`, newest first (at most `limit`)."""
        ...

    async def erase_state(self, scope: str, key: str) -> int:
        """Hard-delete every version of `(scope, key)`; return how many were erased."""
        ...

    async def log_model_call(self, call: ModelCallRecord) -> None:
        """Append one language-model call to the usage log."""
        ...

    async def model_usage(self) -> list[UsageTotals]:
        """Calls, requests and tokens per purpose, over the whole log."""
        ...

    # -- for copying a store (`phi.memory.transfer`) ------------------------------------

    async def marks_of(self, row_ids: Sequence[str]) -> list[PassMark]:
        """Every pass's marker on the given rows."""
        ...

    async def state_versions(self) -> list[StateEntry]:
        """Every stored version of every piece of learning state, by scope, key, version."""
        ...

    async def restore_state(self, entries: Sequence[StateEntry]) -> int:
        """Store these exact versions (number and time kept); a version already stored
        stays as it is. Returns how many were new."""
        ...

    async def model_calls(self) -> list[ModelCallRecord]:
        """The whole model-call log, oldest first."""
        ...
