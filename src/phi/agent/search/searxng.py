"""A SearXNG instance's JSON API (self-hosted; public instances mostly turn JSON off).

`GET <instance>/search?q=...&format=json`, with `time_range` (`day`, `month`, `year` in the
docs); the answer's `results[]` carry `title`, `url`, `content` and `publishedDate`. The
instance answers 403 when `json` is not among `search.formats` in its `settings.yml`. It
takes no count: phi keeps the first `limit` results. Sources: SearXNG's Search API page,
https://docs.searxng.org/dev/search_api (parameters, the 403), and its code:
`searx/webadapter.py` `parse_time_range` also accepts `week`, so phi sends `week` as is;
`searx/search/processors` leave an engine without time-range support out of a search that
has a range (so a range narrows the engines as well as the pages). Checked November 2026.
"""

from __future__ import annotations

from typing import Final

import httpx

from phi.agent.search._base import (
    SearchFailed,
    SearchHit,
    SearchRequest,
    bearer,
    endpoint,
    hits,
    response_object,
)

__all__ = ["SearxngSearch"]

PATH: Final = "/search"


class SearxngSearch:
    """A SearXNG instance (`PHI_WEB_SEARCH_PROVIDER=searxng`); a key, if set, goes as a
    bearer token (an instance behind an authenticating proxy)."""

    name = "searxng"
    public_url: str | None = None

    async def search(self, http: httpx.AsyncClient, request: SearchRequest) -> list[SearchHit]:
        params = {"q": request.query, "format": "json"}
        if request.time_range is not None:
            params["time_range"] = request.time_range
        response = await http.get(
            endpoint(request.base_url, PATH), params=params, headers=bearer(request.key)
        )
        if response.status_code == 403:
            raise SearchFailed(
                f"{self.name}: the instance refused format=json (HTTP 403): add json to "
                "search.formats in its settings.yml"
            )
        payload = response_object(response, provider=self.name)
        return hits(
            payload.get("results"),
            snippet="content",
            published="publishedDate",
            limit=request.limit,
        )
