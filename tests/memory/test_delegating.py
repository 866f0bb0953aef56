"""How the shared store methods take a query's answer back to its value: a plain function's
on SQLite's worker thread, a coroutine function's on PostgreSQL's event loop, and neither
where the other is due."""

from __future__ import annotations

import pytest

from phi.memory.store._delegating import Answer, async_answer, sync_answer

pytestmark = pytest.mark.anyio


def _plain(conn: str) -> Answer[str]:
    return f"plain {conn}"


def _coroutine(conn: str) -> Answer[str]:
    async def answer() -> str:
        return f"async {conn}"

    return answer()


def test_a_plain_answer_is_taken_and_an_awaitable_one_refused() -> None:
    assert sync_answer(_plain, "c") == "plain c"
    with pytest.raises(TypeError, match=r"answered an awaitable where a plain function was due"):
        sync_answer(lambda conn: _closed(_coroutine(conn)), "c")


async def test_an_awaitable_answer_is_awaited_and_a_plain_one_refused() -> None:
    assert await async_answer(_coroutine, "c") == "async c"
    with pytest.raises(TypeError, match=r"answered a plain value where a coroutine function"):
        await async_answer(_plain, "c")


def _closed(answer: Answer[str]) -> Answer[str]:
    # Closed at once: a coroutine never awaited would warn (and warnings fail the tests).
    if hasattr(answer, "close"):
        answer.close()
    return answer
