"""What every search adapter shares: the request, the hit, the failure, and the checks
each answer passes before its shape is read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx
from pydantic import SecretStr

from phi.errors import PhiError

__all__ = [
    "SearchAdapter",
    "SearchFailed",
    "SearchHit",
    "SearchRequest",
    "TimeRange",
    "bearer",
    "checked_json",
    "endpoint",
    "items",
    "text",
]

TimeRange = Literal["day", "week", "month", "year"]
"""How recent the results must be; each adapter maps it to its API's own parameter."""


class SearchFailed(PhiError):
    """The search API could not be asked or did not answer usefully. The message is one
    line for the model and the log: it never holds the key."""


@dataclass(frozen=True, kw_only=True)
class SearchRequest:
    """One search, as the tool asked for it, with where and how to send it."""

    base_url: str
    """The API's base URL (`PHI_WEB_SEARCH_URL` or the provider's public one)."""
    key: SecretStr | None
    """The API key, if the provider takes one."""
    query: str
    """What to look for."""
    limit: int
    """How many results to return (1-10)."""
    time_range: TimeRange | None
    """Only pages from the last day, week, month or year; `None`: any time."""


@dataclass(frozen=True, kw_only=True)
class SearchHit:
    """One result, in the words of the provider (outside text)."""

    title: str
    """The page's title; "" when the provider gives none."""
    url: str
    """The page's address."""
    snippet: str
    """What the provider quotes or summarises of the page (its `description`, `content`)."""
    published: str | None = None
    """When the page was published or found, as the provider says it (`2 days ago`,
    `2026-11-20`); `None` when it does not say."""


class SearchAdapter(Protocol):
    """One search API: a module in this package."""

    name: str
    """The `PHI_WEB_SEARCH_PROVIDER` value that picks it."""
    public_url: str | None
    """Its public base URL; `None` when there is none (self-hosted)."""

    async def search(self, http: httpx.AsyncClient, request: SearchRequest) -> list[SearchHit]:
        """The hits for `request`, at most `request.limit`.

        Raises:
            SearchFailed: the API refused the request or answered in another shape.
        """
        ...


def endpoint(base_url: str, path: str) -> str:
    """`path` under `base_url`; a base that already ends in it (the full endpoint, as the
    provider's docs print it) is taken as is."""
    base = base_url.rstrip("/")
    return base if base.endswith(path) else base + path


def bearer(key: SecretStr | None) -> dict[str, str]:
    """An `Authorization` header for `key`, or none."""
    return {"Authorization": f"Bearer {key.get_secret_value()}"} if key else {}


_REFUSED = {
    401: "the provider refused the key (HTTP 401): check PHI_WEB_SEARCH_KEY",
    403: "the provider refused the request (HTTP 403)",
    429: "the provider's rate limit or quota is used up (HTTP 429): try again later",
}


def checked_json(response: httpx.Response, *, provider: str) -> Any:
    """The JSON body of a 200 answer.

    Raises:
        SearchFailed: another status, or a body that is not JSON (an HTML error page, a
            proxy's login form); the message names the status, never the body.
    """
    status = response.status_code
    if status != 200:
        reason = _REFUSED.get(status, f"HTTP {status}")
        raise SearchFailed(f"{provider}: {reason}")
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        kind = response.headers.get("content-type", "no content type").split(";")[0]
        raise SearchFailed(f"{provider}: the answer is not JSON ({kind})") from None


def text(item: dict[str, Any], name: str) -> str:
    """Field `name` of a result as text: "" when missing or not text."""
    value = item.get(name)
    return value.strip() if isinstance(value, str) else ""


def items(value: Any) -> list[dict[str, Any]]:
    """The objects of a JSON list (anything else in it, or a non-list, gives nothing)."""
    return [i for i in value if isinstance(i, dict)] if isinstance(value, list) else []


def response_object(response: httpx.Response, *, provider: str) -> dict[str, Any]:
    """The JSON object of a 200 answer (`checked_json`); any other JSON is refused."""
    payload = checked_json(response, provider=provider)
    if not isinstance(payload, dict):
        raise SearchFailed(f"{provider}: the answer is not a search response")
    return payload


def hits(found: Any, *, snippet: str, published: str, limit: int) -> list[SearchHit]:
    """The first `limit` results of the JSON list `found`, each read from its `title`,
    `url` and the provider's own `snippet` and `published` fields."""
    return [
        SearchHit(
            title=text(r, "title"),
            url=text(r, "url"),
            snippet=text(r, snippet),
            published=text(r, published) or None,
        )
        for r in items(found)[:limit]
    ]
