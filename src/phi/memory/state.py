"""`KeyValueState`: small versioned key/value state kept in a memory, for callers outside
the engine (the owner gate's pending requests, a persisted rate limit).

It is the one door to the ledger's state for code outside `phi.memory`, reached as
`Memory.state`; the learning passes keep their own bookkeeping behind `Ledger` directly.
Values are text (callers serialise their own JSON); each write is a new version, and the
newest `keep` versions are kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from phi.errors import InvalidInput
from phi.memory.model import ensure_utc, utc_now, validate_text
from phi.memory.store.ledger import Ledger, StateEntry

__all__ = ["KeyValueState", "StateEntry"]


@dataclass(frozen=True, kw_only=True)
class KeyValueState:
    """Versioned text values by `(scope, key)`."""

    ledger: Ledger

    async def read(self, scope: str, key: str) -> StateEntry | None:
        """The newest version of `(scope, key)`, or `None` if it was never written."""
        return await self.ledger.read_state(_checked(scope, "scope"), _checked(key, "key"))

    async def write(
        self, scope: str, key: str, value: str, *, at: datetime | None = None, keep: int = 20
    ) -> int:
        """Write a new version of `(scope, key)` (as of `at`, now by default) and return
        its number."""
        if keep < 1:
            raise InvalidInput(f"keep={keep!r}: keep at least one version")
        return await self.ledger.write_state(
            _checked(scope, "scope"),
            _checked(key, "key"),
            validate_text(value, what="state value"),
            at=ensure_utc(at) if at else utc_now(),
            keep=keep,
        )

    async def keys(self, scope: str) -> list[str]:
        """Every key of `scope` that has a value, sorted."""
        return await self.ledger.state_keys(_checked(scope, "scope"))

    async def erase(self, scope: str, key: str) -> int:
        """Erase every version of `(scope, key)`; returns how many there were."""
        return await self.ledger.erase_state(_checked(scope, "scope"), _checked(key, "key"))


def _checked(text: str, what: str) -> str:
    if not text.strip():
        raise InvalidInput(f"empty state {what}; name it")
    return validate_text(text, what=f"state {what}")
