"""Tavily's Search API.

`POST https://api.tavily.com/search` with `Authorization: Bearer tvly-...` and a JSON body:
`query`, `max_results` (default 5) and `time_range` (`day`, `week`, `month`, `year`). The
answer's `results[]` carry `title`, `url`, `content` (the relevant part of the page) and
`score`; `published_date` comes with news results only, so phi reads it as optional. Source:
Tavily's API reference,
https://docs.tavily.com/api-reference/endpoint/search (Authorizations, Body, Response);
checked November 2026.
"""

from __future__ import annotations

from typing import Final

import httpx

from phi.agent.search._base import (
    SearchHit,
    SearchRequest,
    bearer,
    endpoint,
    hits,
    response_object,
)

__all__ = ["TavilySearch"]

PATH: Final = "/search"


class TavilySearch:
    """Tavily (`PHI_WEB_SEARCH_PROVIDER=tavily`)."""

    name = "tavily"
    public_url: str | None = "https://api.tavily.com"

    async def search(self, http: httpx.AsyncClient, request: SearchRequest) -> list[SearchHit]:
        assert request.key is not None, "the settings refuse tavily without a key"
        body: dict[str, str | int] = {"query": request.query, "max_results": request.limit}
        if request.time_range is not None:
            body["time_range"] = request.time_range
        response = await http.post(
            endpoint(request.base_url, PATH), json=body, headers=bearer(request.key)
        )
        payload = response_object(response, provider=self.name)
        return hits(
            payload.get("results"),
            snippet="content",
            published="published_date",
            limit=request.limit,
        )
