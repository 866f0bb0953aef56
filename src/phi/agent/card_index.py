"""Public cards across the network, through a card index.

Public cards are cosmik/semble `network.cosmik.card` records (URL cards and notes) in
anyone's repo; phi's own are in `phi.agent.public`. No AppView indexes them (its
`searchPosts` and `searchActors` find posts and people), so a network-wide search needs an
index that follows those records: Semble's semantic search answers
`GET <url>?query=...&limit=...` with `{"urls": [{"url", "metadata": {"title",
"description"}, "urlLibraryCount"}], ...}` (one entry per URL however many people saved it).
`PHI_CARD_SEARCH_URL` names such an endpoint; without it phi searches its own cards only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

import httpx

from phi.errors import PhiError

__all__ = ["CardIndexFailed", "NetworkCard", "search_card_index"]

INDEX_TIMEOUT: Final = 15.0
"""Seconds the index may take: a semantic search embeds the query first."""


class CardIndexFailed(PhiError):
    """The card index did not answer, or answered something that is not a result list."""

    def __init__(self, url: str, detail: str) -> None:
        self.url = url
        super().__init__(f"the card index at {url!r} failed: {detail}")


@dataclass(frozen=True, kw_only=True)
class NetworkCard:
    """One URL people across the network keep a card for."""

    url: str
    """The page."""
    title: str
    """Its title, as the card's metadata has it (may be empty)."""
    description: str
    """Its description (may be empty)."""
    saves: int
    """How many libraries hold a card for it."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _card(item: Any) -> NetworkCard | None:
    if not isinstance(item, dict) or not isinstance(item.get("url"), str):
        return None
    meta = item.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    saves = item.get("urlLibraryCount")
    return NetworkCard(
        url=item["url"],
        title=_text(meta.get("title")) or _text(item.get("title")),
        description=_text(meta.get("description")),
        saves=saves if isinstance(saves, int) else 0,
    )


async def search_card_index(url: str, query: str, *, limit: int = 10) -> list[NetworkCard]:
    """Cards across the network matching `query`, best first, from the index at `url`.

    Raises:
        CardIndexFailed: The index is unreachable, refused, or answered another shape.
    """
    try:
        async with httpx.AsyncClient(timeout=INDEX_TIMEOUT) as http:
            response = await http.get(url, params={"query": query, "limit": str(limit)})
    except httpx.HTTPError as exc:
        raise CardIndexFailed(url, f"{type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise CardIndexFailed(url, f"HTTP {response.status_code}")
    try:
        body = response.json()
    except json.JSONDecodeError:
        raise CardIndexFailed(url, "the answer is not JSON") from None
    items = body.get("urls") if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise CardIndexFailed(url, 'the answer has no "urls" list')
    return [card for card in map(_card, items) if card is not None][:limit]
