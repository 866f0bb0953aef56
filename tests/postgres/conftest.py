"""Fixtures of the PostgreSQL store's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from phi.memory.store import PostgresStore
from tests.memory.conformance import CONFORMANCE_SPEC
from tests.postgres.schemas import fresh_schema


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A PostgreSQL URL whose store lives in a fresh schema of its own."""
    async with fresh_schema() as url:
        yield url


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[PostgresStore]:
    """A connected PostgreSQL store in a fresh schema, bound to the conformance model."""
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    yield store
    await store.close()
