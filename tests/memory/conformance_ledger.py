"""Behaviour every `Ledger` backend shares: learning marks, versioned key/value state and
the model-call log, and the way they go with `RowStore.forget`.

A backend's test module subclasses `LedgerConformance` and provides a `ledger` fixture and
a `store` fixture: the ledger and the row store whose rows it marks, from one backend,
connected, empty and bound to `CONFORMANCE_SPEC` (for SQLite both are one object).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from phi.errors import NamespaceNotFound
from phi.memory.store import ForgetReport, Ledger, ModelCallRecord, RowFilter, RowStore
from tests.memory.conformance_rows import T0, make_row, vec, w


@pytest.mark.anyio
class LedgerConformance:
    async def test_marks_are_explicit_per_pass_and_go_with_forget(
        self, ledger: Ledger, store: RowStore
    ) -> None:
        rows = [make_row(f"exchange {i}", kind="interaction", at=i) for i in range(3)]
        await store.write([w(r, vec(1, i, 0, 0)) for i, r in enumerate(rows)], [])
        where = RowFilter(namespaces=("ns-a",), kinds=("interaction",))
        await ledger.mark("extract", [rows[0].row_id, rows[0].row_id, "no-such-row"], at=T0)
        assert [r.row_id for r in await ledger.unmarked("extract", where, limit=10)] == [
            rows[1].row_id,
            rows[2].row_id,
        ]
        assert len(await ledger.unmarked("summary", where, limit=10)) == 3
        assert len(await ledger.unmarked("extract", where, limit=1)) == 1
        await store.forget("ns-a")
        await store.write([w(make_row("again", kind="interaction"), vec(1, 0, 0, 0))], [])
        assert len(await ledger.unmarked("extract", where, limit=10)) == 1

    async def test_state_is_versioned_and_trimmed(self, ledger: Ledger) -> None:
        assert await ledger.read_state("block", "persona") is None
        for i in range(4):
            version = await ledger.write_state("block", "persona", f"v{i}", at=T0, keep=2)
        entry = await ledger.read_state("block", "persona")
        assert version == 4 and entry is not None
        assert (entry.value, entry.version, entry.written_at) == ("v3", 4, T0)
        await ledger.write_state("block", "humans", "h", at=T0)
        assert await ledger.state_keys("block") == ["humans", "persona"]
        assert await ledger.state_keys("synthesis") == []

    async def test_model_calls_are_totalled_per_purpose(self, ledger: Ledger) -> None:
        for purpose, outcome in (("extract", "ok"), ("extract", "malformed"), ("review", "ok")):
            await ledger.log_model_call(
                ModelCallRecord(
                    purpose=purpose,
                    model="test",
                    requests=2 if outcome != "ok" else 1,
                    input_tokens=10,
                    output_tokens=3,
                    outcome=outcome,
                    called_at=T0,
                )
            )
        totals = {
            u.purpose: (u.calls, u.requests, u.input_tokens, u.output_tokens, u.failures)
            for u in await ledger.model_usage()
        }
        assert totals == {"extract": (2, 3, 20, 6, 1), "review": (1, 1, 10, 3, 0)}

    async def test_erase_state_removes_every_version(self, ledger: Ledger) -> None:
        for text in ("a", "b"):
            await ledger.write_state("block", "user:did:plc:a", text, at=T0)
        await ledger.write_state("block", "persona", "p", at=T0)
        assert await ledger.erase_state("block", "user:did:plc:a") == 2
        assert await ledger.read_state("block", "user:did:plc:a") is None
        assert await ledger.erase_state("block", "user:did:plc:a") == 0
        assert await ledger.state_keys("block") == ["persona"]

    async def test_forget_takes_the_named_state_in_the_same_call(
        self, ledger: Ledger, store: RowStore
    ) -> None:
        did, person = "did:plc:alice", "phi-users-did:plc:alice"
        own = make_row("alice likes crows", namespace=person, author=did, kind="observation")
        await store.write([w(own, vec(1, 0, 0, 1))], [])
        await ledger.write_state("block", f"user:{did}", "alice block", at=T0)
        await ledger.write_state("block", f"user:{did}", "alice block, again", at=T0)
        await ledger.write_state("block", "persona", "phi", at=T0)
        report = await store.forget(person, author=did, state=[("block", f"user:{did}")])
        assert (report.rows, report.state) == (1, 2)
        assert await ledger.read_state("block", f"user:{did}") is None
        assert await ledger.read_state("block", "persona") is not None
        assert await ledger.state_keys("block") == ["persona"]

    async def test_forget_of_state_alone_and_of_nothing(
        self, ledger: Ledger, store: RowStore
    ) -> None:
        await ledger.write_state("block", "user:did:plc:x", "x", at=T0)
        report = await store.forget(
            "phi-users-did:plc:x", author="did:plc:x", state=[("block", "user:did:plc:x")]
        )
        assert report == ForgetReport(
            namespace="phi-users-did:plc:x", rows=0, edges=0, kinds={}, state=1
        )
        assert await ledger.read_state("block", "user:did:plc:x") is None
        with pytest.raises(NamespaceNotFound):
            await store.forget("phi-users-did:plc:x", author="did:plc:x")

    async def test_state_history_is_newest_first_and_twenty_versions_are_kept(
        self, ledger: Ledger
    ) -> None:
        for i in range(22):
            await ledger.write_state("block", "persona", f"v{i}", at=T0 + timedelta(minutes=i))
        history = await ledger.state_history("block", "persona", limit=3)
        assert [(e.scope, e.key, e.version, e.value) for e in history] == [
            ("block", "persona", 22, "v21"),
            ("block", "persona", 21, "v20"),
            ("block", "persona", 20, "v19"),
        ]
        assert history[0].written_at == T0 + timedelta(minutes=21)
        everything = await ledger.state_history("block", "persona", limit=50)
        assert [e.version for e in everything] == list(range(22, 2, -1))
        assert await ledger.state_history("block", "other", limit=5) == []
