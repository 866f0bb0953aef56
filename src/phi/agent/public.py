"""phi's public memory on its PDS: publishing cards (for review's promote) and searching them.

The cards are cosmik/semble `network.cosmik.card` records in phi's own repository: NOTE
cards (what `remember --public` and review's promote publish) and URL cards (`save_url`).
They are read back from the PDS, the public source of truth, not from the local store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from phi.atproto import CosmikCard, PhiClient
from phi.atproto.records import CardContentNote
from phi.memory.learning.review import CardPublisher

__all__ = ["CardHit", "card_publisher", "search_cards"]

_WORD: Final = re.compile(r"\w+", re.UNICODE)
CARDS_READ: Final = 500
"""Cards read per search: a public memory is small; past this, the newest are searched."""


def card_publisher(client: PhiClient) -> CardPublisher:
    """Publishes a NOTE card on `client`'s PDS and returns its AT-URI (review's `publish`)."""

    async def publish(text: str) -> str:
        ref = await client.create_record(CosmikCard.note(text))
        return ref.uri

    return publish


@dataclass(frozen=True, kw_only=True)
class CardHit:
    """One of phi's public cards that matches a search."""

    uri: str
    """The card record's AT-URI."""
    text: str
    """A NOTE card's text, or a URL card's URL with its title and description."""
    score: float
    """Share of the query's words the card holds."""


def _card_text(card: CosmikCard) -> str:
    content = card.content
    if isinstance(content, CardContentNote):
        return content.text
    meta = content.metadata
    about = [meta.title, meta.description] if meta is not None else []
    return " — ".join(p for p in [content.url, *about] if p)


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


async def search_cards(client: PhiClient, query: str, *, limit: int = 5) -> list[CardHit]:
    """phi's public cards holding the most of `query`'s words, best first (ties: newest)."""
    wanted = _words(query)
    if not wanted:
        return []
    stored = await client.list_records(CosmikCard, limit=CARDS_READ)
    hits = []
    for record in stored:
        text = _card_text(record.value)
        score = len(wanted & _words(text)) / len(wanted)
        if score > 0:
            hits.append(CardHit(uri=record.uri, text=text, score=score))
    hits.sort(key=lambda h: -h.score)  # stable: the PDS lists newest first
    return hits[:limit]
