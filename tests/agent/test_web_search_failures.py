"""`web_search` failing: every failure is one line for the model and the log (`web search
failed: <provider>: ...`), and neither holds the key or a password in the URL."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable

import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from phi.agent import AgentConfig
from phi.agent.search import WebSearch
from phi.config import WebSearchProvider
from tests._serving import serving

from ._search_api import BRAVE_KEY, TAVILY_KEY, Api, Seen, ask, local_api

pytestmark = pytest.mark.anyio


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    async with local_api() as state:
        yield state


FAILURES: list[tuple[str, Callable[[Seen], Response], str]] = [
    (
        "401",
        lambda seen: JSONResponse({"error": "bad key"}, status_code=401),
        "the provider refused the key (HTTP 401): check PHI_WEB_SEARCH_KEY",
    ),
    (
        "429",
        lambda seen: JSONResponse({"error": "quota"}, status_code=429),
        "the provider's rate limit or quota is used up (HTTP 429): try again later",
    ),
    ("500", lambda seen: Response("boom", status_code=500), "HTTP 500"),
    (
        "html",
        lambda seen: Response("<html>login</html>", media_type="text/html"),
        "the answer is not JSON (text/html)",
    ),
    (
        "not a response",
        lambda seen: JSONResponse(["a", "list"]),
        "the answer is not a search response",
    ),
]


@pytest.mark.parametrize(("provider", "key"), [("brave", BRAVE_KEY), ("tavily", TAVILY_KEY)])
@pytest.mark.parametrize(("case", "answer_with", "reason"), FAILURES, ids=[f[0] for f in FAILURES])
async def test_a_failure_is_one_line_without_the_key(
    api: Api,
    caplog: pytest.LogCaptureFixture,
    provider: WebSearchProvider,
    key: str,
    case: str,
    answer_with: Callable[[Seen], Response],
    reason: str,
) -> None:
    caplog.set_level("DEBUG")
    api.answer = answer_with
    web = WebSearch(provider=provider, base_url=api.url, key=SecretStr(key))
    _, _, answer = await ask(web, query="q")
    assert answer == f"web search failed: {provider}: {reason}"
    assert key not in caplog.text
    assert f"web search failed: {provider}: {reason}" in caplog.text


async def test_a_proxy_that_echoes_the_key_does_not_leak_it(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    # The content type is the one piece of the answer a failure quotes.
    api.answer = lambda seen: Response("x", headers={"content-type": f"text/{TAVILY_KEY}"})
    web = WebSearch(provider="tavily", base_url=api.url, key=SecretStr(TAVILY_KEY))
    _, _, answer = await ask(web, query="q")
    assert (
        answer
        == "web search failed: tavily: the answer is not JSON (text/[REDACTED:web-search-key])"
    )
    assert TAVILY_KEY not in caplog.text


async def test_a_slow_api_times_out_in_one_line() -> None:
    release = asyncio.Event()

    async def slow(request: Request) -> Response:
        await release.wait()
        return JSONResponse({})

    app = Starlette(routes=[Route("/{path:path}", slow)])
    async with serving(app) as port:
        web = WebSearch(
            provider="brave",
            base_url=f"http://127.0.0.1:{port}",
            key=SecretStr(BRAVE_KEY),
            timeout=0.3,
        )
        _, _, answer = await ask(web, query="q")
        release.set()
    assert answer == "web search failed: brave: no answer within 0.3 s"


async def test_an_unreachable_api_is_one_line_without_the_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    web = WebSearch(
        provider="searxng",
        base_url=f"http://phi:hunter2secret@127.0.0.1:{port}",
        key=SecretStr("searx-proxy-key-42"),
    )
    _, _, answer = await ask(web, query="q")
    assert answer == (
        f"web search failed: searxng: cannot reach http://127.0.0.1:{port}: "
        "All connection attempts failed"
    )
    assert "hunter2secret" not in answer and "searx-proxy-key-42" not in answer
    assert "hunter2secret" not in caplog.text and "searx-proxy-key-42" not in caplog.text


async def test_the_key_is_not_in_the_config_repr() -> None:
    web = WebSearch(provider="brave", base_url="https://x", key=SecretStr(BRAVE_KEY))
    assert BRAVE_KEY not in repr(AgentConfig(web_search=web))
