"""phi's own search endpoint shape, for a search service the operator runs
(`PHI_WEB_SEARCH_PROVIDER=json`, the default when only `PHI_WEB_SEARCH_URL` is set).

`GET <PHI_WEB_SEARCH_URL>?q=...` (and `time_range=day|week|month|year` when asked), answering
`{"results": [{"title", "url", "snippet", "published"?}]}` or the bare list. A key, if set,
goes as a bearer token.
"""

from __future__ import annotations

import httpx

from phi.agent.search._base import (
    SearchHit,
    SearchRequest,
    bearer,
    checked_json,
    hits,
)

__all__ = ["JsonSearch"]


class JsonSearch:
    """A GET endpoint answering phi's own JSON shape."""

    name = "json"
    public_url: str | None = None

    async def search(self, http: httpx.AsyncClient, request: SearchRequest) -> list[SearchHit]:
        params = {"q": request.query}
        if request.time_range is not None:
            params["time_range"] = request.time_range
        response = await http.get(request.base_url, params=params, headers=bearer(request.key))
        payload = checked_json(response, provider=self.name)
        found = payload.get("results") if isinstance(payload, dict) else payload
        return hits(found, snippet="snippet", published="published", limit=request.limit)
