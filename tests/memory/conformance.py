"""Both conformance suites for a backend that is one object (a `Store`: its rows and its
ledger in one database), as SQLite and PostgreSQL are.

A backend's test module subclasses `StoreConformance` and provides a `store` fixture (see
`conformance_rows.py`); the ledger suite's `ledger` fixture is that same store. A backend
whose ledger is a separate object subclasses the two suites itself.
"""

from __future__ import annotations

import pytest

from phi.memory.store import Ledger, Store
from tests.memory.conformance_ledger import LedgerConformance
from tests.memory.conformance_rows import (
    CONFORMANCE_SPEC,
    T0,
    RowStoreConformance,
    make_row,
    vec,
    w,
)

__all__ = [
    "CONFORMANCE_SPEC",
    "T0",
    "LedgerConformance",
    "RowStoreConformance",
    "StoreConformance",
    "make_row",
    "vec",
    "w",
]


class StoreConformance(RowStoreConformance, LedgerConformance):
    @pytest.fixture
    def ledger(self, store: Store) -> Ledger:
        return store
