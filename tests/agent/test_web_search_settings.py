"""From the `PHI_WEB_SEARCH_*` settings, through the agent config `phi run` and
`phi prompt --preview` build, to the tools the model is offered: `web_search`
only when a search API is configured, the provider's public URL by default, and the
operator's `.env` driving a search end to end against a local server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import get_args

import pytest
from pydantic import SecretStr, ValidationError
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from starlette.responses import JSONResponse

from phi.agent import AgentConfig, PhiDeps
from phi.agent.core import toolset_for
from phi.agent.search import ADAPTERS, WebSearch
from phi.config import Settings, WebSearchProvider
from phi.runtime.app import agent_config

from ._search_api import TAVILY_KEY, Api, ask, local_api, tavily_answer, web_deps

pytestmark = pytest.mark.anyio


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    async with local_api() as state:
        yield state


@pytest.fixture(autouse=True)
def _no_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings read `.env` in the working folder: the test's own, empty one."""
    monkeypatch.chdir(tmp_path)
    for name in ("PHI_WEB_SEARCH_URL", "PHI_WEB_SEARCH_KEY", "PHI_WEB_SEARCH_PROVIDER"):
        monkeypatch.delenv(name, raising=False)


def configured(monkeypatch: pytest.MonkeyPatch, **env: str) -> AgentConfig:
    """The agent's config as `phi run` and `phi prompt --preview` build it from `env`."""
    for name, value in env.items():
        monkeypatch.setenv(f"PHI_WEB_SEARCH_{name.upper()}", value)
    return agent_config(Settings())


async def offered_tools(config: AgentConfig) -> list[str]:
    offered: list[str] = []

    async def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.extend(t.name for t in info.function_tools)
        return ModelResponse(parts=[TextPart("done")])

    d = web_deps(WebSearch(provider="json", base_url="http://127.0.0.1:1"))
    d.config = config
    agent = Agent(FunctionModel(brain), deps_type=PhiDeps, toolsets=[toolset_for(config)])
    await agent.run("go", deps=d)
    return offered


async def test_no_search_settings_means_no_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    config = configured(monkeypatch)
    assert config.web_search is None
    offered = await offered_tools(config)
    assert "web_search" not in offered
    assert "check_urls" in offered


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"url": "http://127.0.0.1:9000/search"},
            WebSearch(provider="json", base_url="http://127.0.0.1:9000/search"),
        ),
        (
            {"provider": "brave", "key": "brave-key"},
            WebSearch(
                provider="brave",
                base_url="https://api.search.brave.com",
                key=SecretStr("brave-key"),
            ),
        ),
        (
            {"provider": "tavily", "key": TAVILY_KEY},
            WebSearch(
                provider="tavily", base_url="https://api.tavily.com", key=SecretStr(TAVILY_KEY)
            ),
        ),
        (
            {"provider": "searxng", "url": "http://127.0.0.1:8888"},
            WebSearch(provider="searxng", base_url="http://127.0.0.1:8888"),
        ),
        (
            {"provider": "brave", "key": "k", "url": "https://proxy.example/brave"},
            WebSearch(provider="brave", base_url="https://proxy.example/brave", key=SecretStr("k")),
        ),
    ],
    ids=["url-alone-is-json", "brave", "tavily", "searxng", "brave-through-a-proxy"],
)
async def test_settings_pick_the_provider_and_offer_the_tool(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: WebSearch
) -> None:
    config = configured(monkeypatch, **env)
    assert config.web_search == expected
    assert "web_search" in await offered_tools(config)


async def test_an_operators_dotenv_searches_end_to_end(
    api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.answer = tavily_answer
    env = tmp_path / ".env"
    env.write_text(
        f"PHI_WEB_SEARCH_PROVIDER=tavily\nPHI_WEB_SEARCH_KEY={TAVILY_KEY}\n"
        f"PHI_WEB_SEARCH_URL={api.url}\n"
    )
    env.chmod(0o600)
    web = WebSearch.from_settings(Settings())
    assert web is not None
    _, _, answer = await ask(web, query="messi", time_range="day")
    assert api.seen[0].body == {"query": "messi", "max_results": 5, "time_range": "day"}
    assert "1. Lionel Messi Facts | Britannica — https://www.britannica.com/" in answer


async def test_an_empty_answer_is_no_results(api: Api) -> None:
    api.answer = lambda seen: JSONResponse({"results": []})
    _, _, answer = await ask(WebSearch(provider="json", base_url=api.url), query="nothing")
    assert answer == "no results for 'nothing'"


@pytest.mark.parametrize("provider", get_args(WebSearchProvider))
def test_every_provider_has_an_adapter_and_a_url_or_needs_one(
    provider: WebSearchProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings' rule (who needs a key, who a URL) and the adapters' public URLs agree:
    a provider the settings accept without a URL has a public one."""
    monkeypatch.setenv("PHI_WEB_SEARCH_PROVIDER", provider)
    monkeypatch.setenv("PHI_WEB_SEARCH_KEY", "k")
    adapter = ADAPTERS[provider]
    assert adapter.name == provider
    if adapter.public_url is None:
        with pytest.raises(ValidationError, match="needs PHI_WEB_SEARCH_URL"):
            Settings()
        return
    web = WebSearch.from_settings(Settings())
    assert web is not None and web.base_url == adapter.public_url
