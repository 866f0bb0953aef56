"""[DISCOVERY POOL] (seed 003): strangers the owner has been liking lately.

Derived from the owner's public like records (`app.bsky.feed.like` in their repo), read
with `com.atproto.repo.listRecords` on the owner's own PDS, found from their DID document
(the owner may live on any PDS, not phi's), grouped by the liked post's author, minus phi,
the owner and anyone phi has already talked to (a person with memories). Each person comes
with one post the owner liked. When the likes cannot be read (the DID does not resolve, the
PDS does not answer), the block says so in one line rather than going quiet: an empty pool
and a broken one must not look alike. Cached a few minutes: the owner does not like that
fast, and the poll runs every ten seconds.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import timedelta
from typing import Final

from phi.agent.context import with_rows
from phi.agent.deps import PhiDeps
from phi.atproto import AtprotoError, NotFound, RequestRefused
from phi.errors import PhiError
from phi.memory import user_namespace

__all__ = ["POOL_PEOPLE", "discovery_block"]

logger = logging.getLogger("phi.agent.discovery")

DISCOVERY_TTL: Final = timedelta(minutes=5)
LIKES_READ: Final = 100
"""The owner's latest likes looked at: "lately"."""
POOL_PEOPLE: Final = 5
_REASON_CHARS: Final = 200
"""The one line saying why the likes are unreadable is clipped to this."""


def _author(uri: str) -> str:
    return uri.removeprefix("at://").split("/", 1)[0]


def _why(exc: AtprotoError) -> str:
    """Why, in phi's words only: a server's own message never reaches the prompt here."""
    if isinstance(exc, RequestRefused):
        reason = f"{exc.what} was refused (HTTP {exc.status})"
    elif isinstance(exc, NotFound):
        reason = f"{exc.what} was not found"
    else:
        reason = str(exc)
    return " ".join(reason.split())[:_REASON_CHARS]


def _header(owner: str) -> str:
    return f"[DISCOVERY POOL — people @{owner} has been liking lately; you never talked]"


async def _pool(deps: PhiDeps, owner: str) -> str:
    try:
        owner_did = owner if owner.startswith("did:") else await deps.client.resolve_handle(owner)
        liked = await deps.client.liked_post_uris(owner_did, limit=LIKES_READ)
    except AtprotoError as exc:
        logger.warning("discovery pool: the owner's likes are unreadable: %s", exc)
        return f"{_header(owner)}\n(unavailable: cannot read @{owner}'s likes: {_why(exc)})"
    counts = Counter(_author(uri) for uri in liked)
    sample: dict[str, str] = {}
    for uri in liked:
        sample.setdefault(_author(uri), uri)
    candidates = [d for d in counts if d not in (deps.client.me.did, owner_did)]
    known = set(await with_rows(deps.memory, [user_namespace(d) for d in candidates]))
    strangers = [d for d in candidates if user_namespace(d) not in known]
    strangers.sort(key=lambda d: -counts[d])  # stable: ties keep the newest like first
    chosen = strangers[:POOL_PEOPLE]
    if not chosen:
        return ""
    try:
        posts = {p.uri: p for p in await deps.client.get_posts([sample[d] for d in chosen])}
    except PhiError as exc:
        logger.warning("discovery pool: sample posts unreadable: %s", exc)
        return ""
    lines = [_header(owner)]
    for did in chosen:
        post = posts.get(sample[did])
        if post is None:
            continue
        text = " ".join(post.text.split())[:160]
        lines.append(f'- @{post.author_handle} ({did}), {counts[did]} liked: "{text}"')
    return "\n".join(lines) if len(lines) > 1 else ""


async def discovery_block(deps: PhiDeps) -> str:
    owner = deps.owner_handle
    if owner is None:
        return ""
    return await deps.caches.get(
        "discovery", now=deps.now, ttl=DISCOVERY_TTL, render=lambda: _pool(deps, owner)
    )
