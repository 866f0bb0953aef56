"""`_pg_split.at_once`: two halves of a read at once, and what a failing half leaves."""

from __future__ import annotations

import anyio
import pytest

from phi.errors import StoreError
from phi.memory.store import _pg_split

pytestmark = pytest.mark.anyio


async def test_at_once_cancels_and_waits_for_the_second_when_the_first_fails() -> None:
    second_ended = anyio.Event()
    cancelled: list[bool] = []

    async def slow() -> str:
        try:
            await anyio.sleep(30)
        except BaseException:
            cancelled.append(True)
            await anyio.sleep(0.01)  # a cancelled statement takes a moment to stop
            raise
        finally:
            second_ended.set()
        return "never"

    async def broken() -> int:
        await anyio.sleep(0.01)
        raise StoreError("first failed")

    with anyio.fail_after(5), pytest.raises(StoreError, match="first failed"):
        await _pg_split.at_once(broken, slow)
    assert cancelled == [True]
    assert second_ended.is_set()  # over before at_once gave the failure back
