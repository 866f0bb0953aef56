"""Brave Search's Web Search API.

`GET https://api.search.brave.com/res/v1/web/search` with the key in `X-Subscription-Token`;
`q`, `count` (at most 20) and `freshness` (`pd`, `pw`, `pm`, `py`: the past day, week,
month, year). The answer's `web.results[]` carry `title`, `url`, `description` and `age`
(`web` is optional: absent, there are no web results). Source: Brave's API reference,
https://api-dashboard.search.brave.com/api-reference/web/search/get (query parameters,
`x-subscription-token` header) and
https://api.search.brave.com/app/documentation/web-search/responses (`WebSearchApiResponse`,
`web: Search`); checked November 2026.
"""

from __future__ import annotations

import re
from typing import Final

import httpx

from phi.agent.search._base import (
    SearchHit,
    SearchRequest,
    TimeRange,
    endpoint,
    items,
    response_object,
    text,
)

__all__ = ["BraveSearch"]

PATH: Final = "/res/v1/web/search"

FRESHNESS: Final[dict[TimeRange, str]] = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}

_HIGHLIGHT: Final = re.compile(r"</?strong>")
"""Brave marks the query's words in a description with `<strong>`: noise to the model."""


class BraveSearch:
    """Brave Search (`PHI_WEB_SEARCH_PROVIDER=brave`)."""

    name = "brave"
    public_url: str | None = "https://api.search.brave.com"

    async def search(self, http: httpx.AsyncClient, request: SearchRequest) -> list[SearchHit]:
        assert request.key is not None, "the settings refuse brave without a key"
        params = {"q": request.query, "count": str(request.limit)}
        if request.time_range is not None:
            params["freshness"] = FRESHNESS[request.time_range]
        response = await http.get(
            endpoint(request.base_url, PATH),
            params=params,
            headers={
                "Accept": "application/json",
                "X-Subscription-Token": request.key.get_secret_value(),
            },
        )
        payload = response_object(response, provider=self.name)
        web = payload.get("web")
        found = items(web.get("results")) if isinstance(web, dict) else []
        return [
            SearchHit(
                title=text(r, "title"),
                url=text(r, "url"),
                snippet=_HIGHLIGHT.sub("", text(r, "description")),
                published=text(r, "age") or None,
            )
            for r in found[: request.limit]
        ]
