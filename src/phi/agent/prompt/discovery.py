"""[DISCOVERY POOL] (seed 003): strangers the owner has been liking lately.

Derived from the owner's public like records (`app.bsky.feed.like` in their repo, read with
`com.atproto.repo.listRecords` on the PDS phi uses: no outside hub), grouped by the liked
post's author, minus phi, the owner and anyone phi has already talked to (a person with
memories). Each person comes with one post the owner liked. Cached a few minutes: the owner
does not like that fast, and the poll runs every ten seconds.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import timedelta
from typing import Final

import httpx

from phi.agent.context import with_rows
from phi.agent.deps import PhiDeps
from phi.atproto import NotFound
from phi.errors import PhiError
from phi.memory import user_namespace

__all__ = ["POOL_PEOPLE", "discovery_block", "owner_liked_uris"]

logger = logging.getLogger("phi.agent.discovery")

DISCOVERY_TTL: Final = timedelta(minutes=5)
LIKES_READ: Final = 100
"""The owner's latest likes looked at: "lately"."""
POOL_PEOPLE: Final = 5


async def owner_liked_uris(pds_url: str, owner_did: str, *, limit: int = LIKES_READ) -> list[str]:
    """URIs of the posts `owner_did` liked, newest first, from their public like records."""
    url = f"{pds_url.rstrip('/')}/xrpc/com.atproto.repo.listRecords"
    params = {"repo": owner_did, "collection": "app.bsky.feed.like", "limit": str(limit)}
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(url, params=params)
    response.raise_for_status()
    uris = []
    for record in response.json().get("records", []):
        subject = record.get("value", {}).get("subject", {})
        if isinstance(subject.get("uri"), str) and "/app.bsky.feed.post/" in subject["uri"]:
            uris.append(subject["uri"])
    return uris


def _author(uri: str) -> str:
    return uri.removeprefix("at://").split("/", 1)[0]


async def _pool(deps: PhiDeps, owner: str) -> str:
    try:
        owner_did = await deps.client.resolve_handle(owner)
        liked = await owner_liked_uris(deps.client.config.pds_url, owner_did)
    except (NotFound, httpx.HTTPError) as exc:
        # The pool is a nicety: an unreachable repo leaves it out of this prompt only.
        logger.warning("discovery pool: the owner's likes are unreadable: %s", exc)
        return ""
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
    lines = [f"[DISCOVERY POOL — people @{owner} has been liking lately; you never talked]"]
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
