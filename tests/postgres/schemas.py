"""One fresh PostgreSQL schema per test, on the server `scripts/services.sh` starts.

The server is `phi postgres up`'s (127.0.0.1, port `PHI_POSTGRES_PORT` or 5442, as
`scripts/services.sh` starts it) unless `PHI_TEST_POSTGRES_URL` names another. A missing
server is an error, never a skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from urllib.parse import quote

import psycopg
import pytest


def server_url() -> str:
    port = os.environ.get("PHI_POSTGRES_PORT", "5442")
    return os.environ.get(
        "PHI_TEST_POSTGRES_URL", f"postgresql://postgres@127.0.0.1:{port}/postgres"
    )


def in_schema(url: str, schema: str) -> str:
    """`url` with `schema` first on the search path (pgvector stays reachable in public)."""
    option = quote(f"-c search_path={schema},public")
    return f"{url}{'&' if '?' in url else '?'}options={option}"


@asynccontextmanager
async def fresh_schema() -> AsyncIterator[str]:
    """A URL whose tables land in a new, empty schema, dropped afterwards."""
    url = server_url()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"no PostgreSQL at {url!r} ({exc}); run `scripts/services.sh` or `phi postgres up`"
        )
    async with conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
        try:
            yield in_schema(url, schema)
        finally:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")


@contextmanager
def fresh_schema_sync() -> Iterator[str]:
    """`fresh_schema` for a synchronous test (the CLI and `TestClient` run their own event
    loops, which cannot start inside an async test's)."""
    url = server_url()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"no PostgreSQL at {url!r} ({exc}); run `scripts/services.sh` or `phi postgres up`"
        )
    with conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        try:
            yield in_schema(url, schema)
        finally:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
