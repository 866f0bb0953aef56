"""The PostgreSQL store: the conformance suite, plus what only a shared server can do."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from phi.errors import StoreError
from phi.memory.store import PostgresStore, Store, open_store
from tests.memory.conformance import CONFORMANCE_SPEC, StoreConformance

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[Store]:
    opened = PostgresStore(pg_url)
    await opened.connect()
    await opened.bind_embedding(CONFORMANCE_SPEC)
    yield opened
    await opened.close()


class TestPostgresConformance(StoreConformance):
    pass


async def test_open_store_selects_postgres_by_url(pg_url: str) -> None:
    assert isinstance(open_store(pg_url), PostgresStore)
    assert isinstance(open_store("postgres://u@h/db"), PostgresStore)
    with pytest.raises(StoreError, match="'mysql'"):
        open_store("mysql://u@h/db")


async def test_unreachable_server_is_a_store_error() -> None:
    store = PostgresStore("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=1")
    with pytest.raises(StoreError, match="cannot open the PostgreSQL store"):
        await store.connect()
