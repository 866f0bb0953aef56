"""One fresh PostgreSQL schema per test, on the tests' own server.

The server is `PHI_TEST_POSTGRES_URL` (`./scripts/test` sets it), else the one
`scripts/test-postgres` runs in `.cache/test-postgres`: never the README's `phi postgres up`
server, whose schemas its examples fill. A missing server is an error, never a skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
import pytest

from phi.postgres import server_status


def server_dir() -> Path:
    """Where `scripts/test-postgres` keeps the tests' server (the same default is spelled
    there; `PHI_TEST_POSTGRES_DIR` moves both)."""
    moved = os.environ.get("PHI_TEST_POSTGRES_DIR")
    return (
        Path(moved) if moved else Path(__file__).resolve().parents[2] / ".cache" / "test-postgres"
    )


def server_url() -> str:
    if url := os.environ.get("PHI_TEST_POSTGRES_URL"):
        return url
    folder = server_dir()
    status = server_status(folder)
    if not status.running:
        pytest.fail(
            f"the tests' PostgreSQL ({folder}) is not running: start it with "
            "`scripts/test-postgres` (./scripts/test does), or set PHI_TEST_POSTGRES_URL"
        )
    return status.url


def in_schema(url: str, schema: str) -> str:
    """`url` with `schema` first on the search path (pgvector stays reachable in public)."""
    option = quote(f"-c search_path={schema},public")
    return f"{url}{'&' if '?' in url else '?'}options={option}"


def in_time_zone(url: str, zone: str) -> str:
    """`url` whose sessions run in time zone `zone` (added to libpq's `options`)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query["options"] = f"{query.get('options', '')} -c TimeZone={zone}".strip()
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


@asynccontextmanager
async def fresh_schema() -> AsyncIterator[str]:
    """A URL whose tables land in a new, empty schema, dropped afterwards."""
    url = server_url()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"no PostgreSQL at {url!r} ({exc}); run `scripts/test-postgres`")
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
        pytest.fail(f"no PostgreSQL at {url!r} ({exc}); run `scripts/test-postgres`")
    with conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        try:
            yield in_schema(url, schema)
        finally:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
