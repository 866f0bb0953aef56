"""Fixtures of the PostgreSQL store's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.postgres.schemas import fresh_schema


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A PostgreSQL URL whose store lives in a fresh schema of its own."""
    async with fresh_schema() as url:
        yield url
