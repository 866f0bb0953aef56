"""What the PostgreSQL store's maintenance says when it cannot reach the server: one line
that names the store (the password never in it), whichever command asked."""

from __future__ import annotations

import pytest

from phi.errors import StoreError
from phi.memory.store._pg_admin import PostgresAdmin

pytestmark = pytest.mark.anyio

NOWHERE = "postgresql://phi:s3cret@127.0.0.1:1/phi"
"""Nothing listens on port 1: psycopg's refusal spans two lines (with a hint)."""


async def test_an_unreachable_server_is_said_in_one_line() -> None:
    with pytest.raises(StoreError) as caught:
        await PostgresAdmin(NOWHERE, tools=None).settle(batch=10)
    message = str(caught.value)
    assert "\n" not in message and "\t" not in message
    assert "cannot open the PostgreSQL store at" in message and "127.0.0.1" in message
    assert "port 1 failed" in message  # psycopg's reason is kept, only folded
    assert "s3cret" not in message
