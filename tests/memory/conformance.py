"""Both conformance suites for a backend that is one object (a `Store`: its rows and its
ledger in one database), as SQLite and PostgreSQL are.

A backend's test module subclasses `StoreConformance` and provides a `store` fixture (see
`conformance_rows.py`); the ledger suite's `ledger` fixture is that same store. A backend
whose ledger is a separate object subclasses the two suites itself.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from phi.memory.store import Ledger, ModelCallRecord, Store
from tests.memory.conformance_forget_row import ForgetRowConformance
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
    "ForgetRowConformance",
    "LedgerConformance",
    "RowStoreConformance",
    "StoreConformance",
    "make_row",
    "vec",
    "w",
]


@pytest.mark.anyio
class StoreConformance(RowStoreConformance, LedgerConformance, ForgetRowConformance):
    @pytest.fixture
    def ledger(self, store: Store) -> Ledger:
        return store

    async def test_refs_of_every_row(self, store: Store) -> None:
        a, b = make_row("a"), make_row("b")
        await store.write([w(a, vec(1, 0, 0, 0), ("@bob", "at://x/1")), w(b, vec(0, 1, 0, 0))], [])
        assert await store.refs_of([a.row_id, b.row_id, "nope"]) == {a.row_id: ("@bob", "at://x/1")}

    async def test_marks_state_versions_and_model_calls_read_back_whole(self, store: Store) -> None:
        """What `phi.memory.transfer` copies: marks (they name rows), state, model calls."""
        a, b = make_row("a"), make_row("b")
        await store.write([w(a, vec(1, 0, 0, 0)), w(b, vec(0, 1, 0, 0))], [])
        await store.mark("extract", [a.row_id, b.row_id], at=T0)
        await store.mark("summary", [a.row_id], at=T0 + timedelta(hours=1))
        marks = {(m.pass_name, m.row_id, m.marked_at) for m in await store.marks_of([a.row_id])}
        assert marks == {
            ("extract", a.row_id, T0), ("summary", a.row_id, T0 + timedelta(hours=1)),
        }  # fmt: skip
        for i in range(3):
            await store.write_state("block", "persona", f"v{i}", at=T0 + timedelta(days=i), keep=2)
        versions = await store.state_versions()
        assert [(e.key, e.version, e.value) for e in versions] == [
            ("persona", 2, "v1"), ("persona", 3, "v2"),
        ]  # fmt: skip
        assert versions[0].written_at == T0 + timedelta(days=1)
        restored = [*versions, dataclasses.replace(versions[0], key="other", version=7)]
        assert await store.restore_state(restored) == 1  # the two held versions stay as they are
        assert await store.read_state("block", "other") == restored[-1]
        assert await store.write_state("block", "other", "next", at=T0) == 8
        call = ModelCallRecord(
            purpose="extract", model="m", requests=1, input_tokens=5, output_tokens=2,
            outcome="ok", called_at=T0 + timedelta(microseconds=123457),
        )  # fmt: skip
        await store.log_model_call(call)
        await store.log_model_call(dataclasses.replace(call, purpose="review"))
        assert await store.model_calls() == [call, dataclasses.replace(call, purpose="review")]

    async def test_a_correction_that_collapses_onto_the_row_it_supersedes_keeps_it(
        self, store: Store
    ) -> None:
        """A race: the correction's identity is the very row it retires (another writer stored
        that text since the lookup). The stored row is the answer, so it stays active."""
        row = make_row("v3", at=3)
        await store.write([w(row, vec(0, 1, 1, 0))], [])
        twin = make_row("v3", at=4, supersedes=row.row_id)
        back = await store.write([w(twin, vec(0, 1, 1, 0))], [], superseded=[row.row_id])
        assert back == [row]
        assert [r.status for r in await store.get_rows([row.row_id])] == ["active"]
