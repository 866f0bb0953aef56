"""The SQL of the learning passes' bookkeeping in the SQLite store (tables of `m002_learning`).

Processed markers, versioned state (blocks, caches) and the model-call log. Kept apart
from `_sqlite_sql` so the row and recall SQL stays about rows and recall.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import apsw

from phi.memory.model import Row
from phi.memory.store._sqlite_sql import ROW_COLUMNS, chunks, dt, marks, row_from, ts, where_sql
from phi.memory.store.base import RowFilter
from phi.memory.store.ledger import ModelCallRecord, PassMark, StateEntry, UsageTotals

__all__ = [
    "delete_state",
    "insert_marks",
    "insert_model_call",
    "insert_state",
    "insert_state_versions",
    "select_marks",
    "select_model_calls",
    "select_state",
    "select_state_history",
    "select_state_keys",
    "select_state_versions",
    "select_unmarked",
    "select_usage",
]


def insert_marks(
    conn: apsw.Connection, pass_name: str, row_ids: Sequence[str], at: datetime
) -> None:
    for part in chunks(row_ids):
        conn.execute(
            "INSERT OR IGNORE INTO learning_marks (pass, id, marked_at)"
            f" SELECT ?, id, ? FROM rows WHERE row_id IN ({marks(part)})",
            (pass_name, ts(at), *part),
        )


def select_unmarked(
    conn: apsw.Connection, pass_name: str, where: RowFilter, limit: int
) -> list[Row]:
    """Rows within `where` that carry no marker of `pass_name`, oldest first."""
    cond, params = where_sql(where)
    found = conn.execute(
        f"SELECT {ROW_COLUMNS} FROM rows r WHERE {cond} AND NOT EXISTS"
        " (SELECT 1 FROM learning_marks m WHERE m.pass = ? AND m.id = r.id)"
        " ORDER BY r.created_at, r.id LIMIT ?",
        (*params, pass_name, limit),
    )
    return [row_from(values) for values in found]


def select_state(conn: apsw.Connection, scope: str, key: str) -> StateEntry | None:
    found = conn.execute(
        "SELECT value, version, written_at FROM learning_state WHERE scope = ? AND key = ?"
        " ORDER BY version DESC LIMIT 1",
        (scope, key),
    ).fetchone()
    if found is None:
        return None
    value, version, written = found
    return StateEntry(scope=scope, key=key, value=value, version=version, written_at=dt(written))


def insert_state(
    conn: apsw.Connection, scope: str, key: str, value: str, at: datetime, keep: int
) -> int:
    """Write a new version of `(scope, key)`, keeping the newest `keep` versions."""
    (latest,) = next(
        conn.execute(
            "SELECT coalesce(max(version), 0) FROM learning_state WHERE scope = ? AND key = ?",
            (scope, key),
        )
    )
    version = int(latest) + 1
    conn.execute(
        "INSERT INTO learning_state (scope, key, version, value, written_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (scope, key, version, value, ts(at)),
    )
    conn.execute(
        "DELETE FROM learning_state WHERE scope = ? AND key = ? AND version <= ?",
        (scope, key, version - keep),
    )
    return version


def delete_state(conn: apsw.Connection, scope: str, key: str) -> int:
    conn.execute("DELETE FROM learning_state WHERE scope = ? AND key = ?", (scope, key))
    return conn.changes()


def select_state_history(
    conn: apsw.Connection, scope: str, key: str, limit: int
) -> list[StateEntry]:
    found = conn.execute(
        "SELECT value, version, written_at FROM learning_state WHERE scope = ? AND key = ?"
        " ORDER BY version DESC LIMIT ?",
        (scope, key, limit),
    )
    return [
        StateEntry(scope=scope, key=key, value=value, version=version, written_at=dt(written))
        for value, version, written in found
    ]


def select_state_keys(conn: apsw.Connection, scope: str) -> list[str]:
    found = conn.execute(
        "SELECT DISTINCT key FROM learning_state WHERE scope = ? ORDER BY key", (scope,)
    )
    return [key for (key,) in found]


def insert_model_call(conn: apsw.Connection, call: ModelCallRecord) -> None:
    conn.execute(
        "INSERT INTO model_calls (purpose, model, requests, input_tokens, output_tokens,"
        " outcome, called_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            call.purpose,
            call.model,
            call.requests,
            call.input_tokens,
            call.output_tokens,
            call.outcome,
            ts(call.called_at),
        ),
    )


def select_usage(conn: apsw.Connection) -> list[UsageTotals]:
    found = conn.execute(
        "SELECT purpose, count(*), sum(requests), sum(input_tokens), sum(output_tokens),"
        " sum(outcome != 'ok') FROM model_calls GROUP BY purpose ORDER BY purpose"
    )
    return [
        UsageTotals(
            purpose=purpose,
            calls=calls,
            requests=requests,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            failures=failures,
        )
        for purpose, calls, requests, input_tokens, output_tokens, failures in found
    ]


# -- copying a store (`phi.memory.transfer`) ---------------------------------------------


def select_marks(conn: apsw.Connection, row_ids: Sequence[str]) -> list[PassMark]:
    out: list[PassMark] = []
    for part in chunks(row_ids):
        found = conn.execute(
            "SELECT m.pass, r.row_id, m.marked_at FROM learning_marks m"
            f" JOIN rows r ON r.id = m.id WHERE r.row_id IN ({marks(part)})",
            part,
        )
        out += [PassMark(pass_name=p, row_id=i, marked_at=dt(at)) for p, i, at in found]
    return out


def select_state_versions(conn: apsw.Connection) -> list[StateEntry]:
    found = conn.execute(
        "SELECT scope, key, value, version, written_at FROM learning_state"
        " ORDER BY scope, key, version"
    )
    return [
        StateEntry(scope=scope, key=key, value=value, version=version, written_at=dt(at))
        for scope, key, value, version, at in found
    ]


def insert_state_versions(conn: apsw.Connection, entries: Sequence[StateEntry]) -> int:
    new = 0
    for e in entries:
        conn.execute(
            "INSERT OR IGNORE INTO learning_state (scope, key, version, value, written_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (e.scope, e.key, e.version, e.value, ts(e.written_at)),
        )
        new += conn.changes()
    return new


def select_model_calls(conn: apsw.Connection) -> list[ModelCallRecord]:
    found = conn.execute(
        "SELECT purpose, model, requests, input_tokens, output_tokens, outcome, called_at"
        " FROM model_calls ORDER BY id"
    )
    return [
        ModelCallRecord(
            purpose=purpose,
            model=model,
            requests=requests,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            outcome=outcome,
            called_at=dt(at),
        )
        for purpose, model, requests, input_tokens, output_tokens, outcome, at in found
    ]
