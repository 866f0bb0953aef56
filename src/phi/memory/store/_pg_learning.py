"""The ledger's SQL in the PostgreSQL store (tables of `m002_learning`): processed
markers, versioned state (blocks, caches) and the model-call log. Kept apart from
`_pg_sql` as `_sqlite_learning` is from `_sqlite_sql`, so splitting `Store` into a row
store and a ledger moves whole modules."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from phi.memory.model import Row
from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_sql import ROW_COLUMNS, row_from, where_sql
from phi.memory.store.base import (
    ModelCallRecord,
    PassMark,
    RowFilter,
    StateEntry,
    UsageTotals,
)

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


async def insert_marks(conn: Conn, pass_name: str, row_ids: Sequence[str], at: datetime) -> None:
    await conn.execute(
        "INSERT INTO learning_marks (pass, id, marked_at)"
        " SELECT %s, id, %s FROM rows WHERE row_id = ANY(%s) ON CONFLICT DO NOTHING",
        (pass_name, at, list(set(row_ids))),
    )


async def select_unmarked(conn: Conn, pass_name: str, where: RowFilter, limit: int) -> list[Row]:
    """Rows within `where` that carry no marker of `pass_name`, oldest first."""
    cond, params = where_sql(where)
    cur = await conn.execute(
        f"SELECT {ROW_COLUMNS} FROM rows r WHERE {cond} AND NOT EXISTS"
        " (SELECT 1 FROM learning_marks m WHERE m.pass = %(pass)s AND m.id = r.id)"
        " ORDER BY r.created_at, r.id LIMIT %(limit)s",
        params | {"pass": pass_name, "limit": limit},
    )
    return [row_from(values) for values in await cur.fetchall()]


async def select_state(conn: Conn, scope: str, key: str) -> StateEntry | None:
    cur = await conn.execute(
        "SELECT value, version, written_at FROM learning_state WHERE scope = %s AND key = %s"
        " ORDER BY version DESC LIMIT 1",
        (scope, key),
    )
    found = await cur.fetchone()
    if found is None:
        return None
    value, version, written = found
    return StateEntry(
        scope=scope, key=key, value=value, version=version, written_at=written.astimezone(UTC)
    )


async def select_state_history(conn: Conn, scope: str, key: str, limit: int) -> list[StateEntry]:
    cur = await conn.execute(
        "SELECT value, version, written_at FROM learning_state WHERE scope = %s AND key = %s"
        " ORDER BY version DESC LIMIT %s",
        (scope, key, limit),
    )
    return [
        StateEntry(
            scope=scope, key=key, value=value, version=version, written_at=written.astimezone(UTC)
        )
        for value, version, written in await cur.fetchall()
    ]


async def insert_state(
    conn: Conn, scope: str, key: str, value: str, at: datetime, keep: int
) -> int:
    """Write a new version of `(scope, key)`, keeping the newest `keep` versions."""
    # Two writers of one key at once: the second waits here for the first's version.
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (scope + key,))
    cur = await conn.execute(
        "SELECT coalesce(max(version), 0) FROM learning_state WHERE scope = %s AND key = %s",
        (scope, key),
    )
    (latest,) = await cur.fetchone() or (0,)
    version = int(latest) + 1
    await conn.execute(
        "INSERT INTO learning_state (scope, key, version, value, written_at)"
        " VALUES (%s, %s, %s, %s, %s)",
        (scope, key, version, value, at),
    )
    await conn.execute(
        "DELETE FROM learning_state WHERE scope = %s AND key = %s AND version <= %s",
        (scope, key, version - keep),
    )
    return version


async def delete_state(conn: Conn, scope: str, key: str) -> int:
    cur = await conn.execute(
        "DELETE FROM learning_state WHERE scope = %s AND key = %s", (scope, key)
    )
    return cur.rowcount


async def select_state_keys(conn: Conn, scope: str) -> list[str]:
    cur = await conn.execute(
        "SELECT DISTINCT key FROM learning_state WHERE scope = %s ORDER BY key", (scope,)
    )
    return [key for (key,) in await cur.fetchall()]


async def insert_model_call(conn: Conn, call: ModelCallRecord) -> None:
    await conn.execute(
        "INSERT INTO model_calls (purpose, model, requests, input_tokens, output_tokens,"
        " outcome, called_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (
            call.purpose,
            call.model,
            call.requests,
            call.input_tokens,
            call.output_tokens,
            call.outcome,
            call.called_at,
        ),
    )


async def select_usage(conn: Conn) -> list[UsageTotals]:
    cur = await conn.execute(
        "SELECT purpose, count(*), sum(requests), sum(input_tokens), sum(output_tokens),"
        " count(*) FILTER (WHERE outcome <> 'ok') FROM model_calls"
        " GROUP BY purpose ORDER BY purpose"
    )
    return [
        UsageTotals(
            purpose=purpose,
            calls=int(calls),
            requests=int(requests),
            input_tokens=int(input_tokens),
            output_tokens=int(output_tokens),
            failures=int(failures),
        )
        for purpose, calls, requests, input_tokens, output_tokens, failures in await cur.fetchall()
    ]


# -- copying a store (`phi.memory.transfer`) ---------------------------------------------


async def select_marks(conn: Conn, row_ids: Sequence[str]) -> list[PassMark]:
    cur = await conn.execute(
        "SELECT m.pass, r.row_id, m.marked_at FROM learning_marks m"
        " JOIN rows r ON r.id = m.id WHERE r.row_id = ANY(%s)",
        (list(set(row_ids)),),
    )
    return [
        PassMark(pass_name=p, row_id=i, marked_at=at.astimezone(UTC))
        for p, i, at in await cur.fetchall()
    ]


async def select_state_versions(conn: Conn) -> list[StateEntry]:
    cur = await conn.execute(
        "SELECT scope, key, value, version, written_at FROM learning_state"
        " ORDER BY scope, key, version"
    )
    return [
        StateEntry(
            scope=scope, key=key, value=value, version=version, written_at=at.astimezone(UTC)
        )
        for scope, key, value, version, at in await cur.fetchall()
    ]


async def insert_state_versions(conn: Conn, entries: Sequence[StateEntry]) -> int:
    if not entries:
        return 0
    cur = await conn.execute(
        "INSERT INTO learning_state (scope, key, version, value, written_at)"
        " SELECT * FROM unnest(%s::text[], %s::text[], %s::int[], %s::text[],"
        " %s::timestamptz[]) ON CONFLICT DO NOTHING",
        (
            [e.scope for e in entries],
            [e.key for e in entries],
            [e.version for e in entries],
            [e.value for e in entries],
            [e.written_at for e in entries],
        ),
    )
    return cur.rowcount


async def select_model_calls(conn: Conn) -> list[ModelCallRecord]:
    cur = await conn.execute(
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
            called_at=at.astimezone(UTC),
        )
        for purpose, model, requests, input_tokens, output_tokens, outcome, at in (
            await cur.fetchall()
        )
    ]
