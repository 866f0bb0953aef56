"""Tools that look at the web: checking links, and searching when an integration is set.

`check_urls` refuses private, loopback and link-local addresses (phi must not be a way into
the machine's own network). Web search is an optional integration: a GET endpoint
(`PHI_WEB_SEARCH_URL`) that takes `q` and answers JSON results; without it the tool is absent.
"""

from __future__ import annotations

from typing import Any

import httpx
from pydantic_ai import RunContext
from pydantic_ai.toolsets import FunctionToolset

from phi.agent.deps import PhiDeps
from phi.agent.urls import check_urls as check_url_list

__all__ = ["search_tools", "web_tools"]

web_tools = FunctionToolset[PhiDeps]()
search_tools = FunctionToolset[PhiDeps]()


@web_tools.tool
async def check_urls(ctx: RunContext[PhiDeps], urls: list[str]) -> str:
    """Check whether links work before sharing them: status, final address and page title.

    Args:
        urls: The links (http or https), at most 10.
    """
    del ctx
    if not urls:
        return "no URLs given"
    checks = await check_url_list(urls[:10])
    lines = []
    for c in checks:
        if c.ok:
            lines.append(f"- {c.url}: ok ({c.status}) {c.title or ''}".rstrip())
        else:
            lines.append(f"- {c.url}: not ok ({c.error or c.status})")
    return "\n".join(lines)


def _results(payload: Any) -> list[dict[str, Any]]:
    items = payload.get("results", []) if isinstance(payload, dict) else payload
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


@search_tools.tool
async def web_search(ctx: RunContext[PhiDeps], query: str, limit: int = 5) -> str:
    """Search the web (through the configured search integration).

    Args:
        query: What to look for.
        limit: How many results (1-10).
    """
    endpoint = ctx.deps.config.web_search_url
    if endpoint is None:
        return "web search is not configured"
    async with httpx.AsyncClient(timeout=15) as http:
        response = await http.get(endpoint, params={"q": query})
    if response.status_code != 200:
        return f"web search failed: HTTP {response.status_code}"
    found = _results(response.json())[: max(1, min(limit, 10))]
    if not found:
        return "no results"
    return "\n".join(
        f"- {r.get('title', '(untitled)')} — {r.get('url', '')}: {r.get('snippet', '')}"
        for r in found
    )
