"""Throwaway stores for benchmarks: a fresh, empty location beside a base, removed after.

A base that is a folder gives a SQLite file in it; a `postgresql://` URL gives a new
schema in that database (its tables land there through the connection's search path).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import quote

import anyio
import psycopg

from phi.errors import StoreError

__all__ = ["scratch_location"]


def _is_postgres(base: str) -> bool:
    return base.startswith(("postgresql://", "postgres://"))


@asynccontextmanager
async def scratch_location(base: str | Path, name: str) -> AsyncIterator[str]:
    """A location no store uses yet, named after `name`, erased on exit."""
    text = str(base)
    if not _is_postgres(text):
        path = Path(text) / f"{name}.db"
        try:
            yield str(path)
        finally:
            for suffix in ("", "-wal", "-shm"):
                await anyio.Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    schema = "scratch_" + re.sub(r"[^a-z0-9_]", "_", name.lower())[:30] + "_" + uuid.uuid4().hex[:8]
    try:
        conn = await psycopg.AsyncConnection.connect(text, autocommit=True)
    except psycopg.Error as exc:
        raise StoreError(f"cannot reach PostgreSQL for a scratch store: {exc}") from exc
    async with conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
        option = quote(f"-c search_path={schema},public")
        try:
            yield f"{text}{'&' if '?' in text else '?'}options={option}"
        finally:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")
