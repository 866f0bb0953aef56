"""Building a notification batch's context from the network (seed 001's data flow).

Per notification: the post that caused it and its thread (mentions, replies, quotes), or
phi's own post that was liked or reposted. Strangers (no memory of them yet) get their
profile and recent posts pre-fetched. The network is the source of truth: nothing about
the conversation is cached locally.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from phi.agent.deps import AuthorLookup, Batch, NotificationContext
from phi.agent.gate import approvals_in
from phi.atproto import AtprotoError, NotFound, Notification, PhiClient
from phi.errors import InvalidInput
from phi.memory import Memory, user_namespace

__all__ = ["build_batch", "with_rows"]

logger = logging.getLogger("phi.agent")

_POST_REASONS = frozenset({"mention", "reply", "quote"})
_SUBJECT_REASONS = frozenset({"like", "repost"})


async def _context(client: PhiClient, n: Notification) -> NotificationContext | None:
    """The notification with its post and thread; `None` when the post that caused it was
    deleted (nothing is left to answer). Any other failure leaves the notification to show,
    without its context: one notification's trouble never fails the batch."""
    try:
        if n.reason in _POST_REASONS:
            thread = await client.get_thread(n.uri)
            focus = next((p for p in thread.posts if p.uri == n.uri), None)
            return NotificationContext(notification=n, post=focus, thread=thread)
        if n.reason in _SUBJECT_REASONS and n.reason_subject:
            return NotificationContext(
                notification=n, subject=await client.get_post(n.reason_subject)
            )
    except NotFound as exc:
        if n.reason in _POST_REASONS:
            logger.info("dropped %s %s: its post was deleted (%s)", n.reason, n.uri, exc)
            return None
        logger.warning("subject of %s %s unavailable: %s", n.reason, n.uri, exc)
    except AtprotoError as exc:
        logger.warning("context of %s %s unavailable: %s", n.reason, n.uri, exc)
    return NotificationContext(notification=n)


async def with_rows(memory: Memory, namespaces: Sequence[str]) -> list[str]:
    """Those of `namespaces` that hold rows, each looked up by its own name (listing every
    namespace would cost as much as there are people)."""
    found = []
    for name in namespaces:
        infos = await memory.namespaces(prefix=name)
        if any(info.namespace == name and info.rows > 0 for info in infos):
            found.append(name)
    return found


async def _is_stranger(memory: Memory, did: str) -> bool:
    try:
        namespace = user_namespace(did)
    except InvalidInput:
        return False
    return not await with_rows(memory, [namespace])


async def build_batch(
    client: PhiClient,
    memory: Memory,
    notifications: Sequence[Notification],
    *,
    owner_handle: str | None,
    recent_posts: int = 5,
) -> Batch:
    """The context of one batch, in the order the notifications arrived (oldest first).

    A mention, reply or quote whose post was deleted is left out of the batch; any other
    failure to fetch a notification's thread or its author's profile leaves that
    notification in, with less context.
    """
    ordered = sorted(notifications, key=lambda n: n.indexed_at)
    items = [item for n in ordered if (item := await _context(client, n)) is not None]
    lookups: dict[str, AuthorLookup] = {}
    for item in items:
        did = item.notification.author_did
        if did in lookups or item.notification.reason not in _POST_REASONS:
            continue
        if not await _is_stranger(memory, did):
            continue
        try:
            profile = await client.get_profile(did)
            posts = await client.get_author_feed(did, limit=recent_posts)
        except AtprotoError as exc:
            logger.warning("profile of %s unavailable: %s", did, exc)
            continue
        lookups[did] = AuthorLookup(profile=profile, recent_posts=posts)
    approvals = await approvals_in(memory, items, owner_handle)
    return Batch(items=items, author_lookups=lookups, approvals=approvals)
