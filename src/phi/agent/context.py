"""Building a notification batch's context from the network (seed 001's data flow).

Per notification: the post that caused it and its thread (mentions, replies, quotes), or
phi's own post that was liked or reposted. The threads' other participants (capped) come
along, so phi knows everyone it is talking in front of. Strangers (no memory of them yet)
get their profile and recent posts fetched once: what that showed is written to their
namespace as a lowest-trust `exploration_note` with its sources (the background research
the prompt shows), which also makes them known, so they are not looked up again. The
network is the source of truth: nothing about the conversation is cached locally.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Final

from phi.agent.deps import AuthorLookup, Batch, NotificationContext
from phi.agent.gate import approvals_in
from phi.atproto import AtprotoError, NotFound, Notification, PhiClient
from phi.errors import InvalidInput
from phi.memory import Memory, NewRow, user_namespace
from phi.memory.model import Row, utc_now

__all__ = [
    "MAX_PARTICIPANTS",
    "background_note",
    "build_batch",
    "thread_participants",
    "with_rows",
    "write_background",
]

logger = logging.getLogger("phi.agent")

_POST_REASONS = frozenset({"mention", "reply", "quote"})
_SUBJECT_REASONS = frozenset({"like", "repost"})

MAX_PARTICIPANTS: Final = 5
"""Thread participants shown besides the notifications' authors: each costs a block, a
recall and, for a stranger, two lookups."""


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


def thread_participants(
    items: Sequence[NotificationContext], *, exclude: set[str], cap: int
) -> dict[str, str]:
    """DID → handle of the threads' other authors, nearest the newest post first, up to
    `cap`."""
    found: dict[str, str] = {}
    for item in reversed(items):
        posts = item.thread.posts if item.thread is not None else []
        for post in reversed(posts):
            if len(found) >= cap:
                return found
            if post.author_did not in exclude and post.author_did not in found:
                found[post.author_did] = post.author_handle
    return found


async def _lookup(client: PhiClient, did: str, recent_posts: int) -> AuthorLookup | None:
    try:
        profile = await client.get_profile(did)
        posts = await client.get_author_feed(did, limit=recent_posts)
    except AtprotoError as exc:
        logger.warning("profile of %s unavailable: %s", did, exc)
        return None
    return AuthorLookup(profile=profile, recent_posts=posts)


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def background_note(lookup: AuthorLookup) -> tuple[str, list[str]]:
    """What a stranger's profile and recent posts show, as one note, with its sources (the
    profile record and each post)."""
    p = lookup.profile
    name = f" ({p.display_name})" if p.display_name else ""
    bio = f'bio: "{_clip(p.description, 300)}"' if p.description else "no bio"
    lines = [
        f"@{p.handle}{name}, seen on their public profile: {bio}; "
        f"{p.followers_count} followers, {p.posts_count} posts."
    ]
    # The same words posted again are one line: repeated, they only teach a small model to
    # repeat them.
    texts = list(dict.fromkeys(_clip(post.text, 200) for post in lookup.recent_posts if post.text))
    if texts:
        lines.append("Recent posts:")
        lines.extend(f'- "{text}"' for text in texts)
    sources = [f"at://{p.did}/app.bsky.actor.profile/self"]
    sources += [post.uri for post in lookup.recent_posts]
    return "\n".join(lines), sources


async def write_background(
    memory: Memory, did: str, lookup: AuthorLookup, *, now: datetime | None = None
) -> Row:
    """Store what `lookup` showed of the person `did` as background research: an
    `exploration_note` (trust lowest) in their namespace, about them, with its sources."""
    content, sources = background_note(lookup)
    return await memory.remember(
        NewRow(
            content=content,
            namespace=user_namespace(did),
            kind="exploration_note",
            tags=["background"],
            source_uris=sources,
            author=did,
            created_at=now or utc_now(),
            meta={"learned_by": "first_appearance"},
        )
    )


def _uris(item: NotificationContext) -> list[str]:
    return [item.notification.uri, *([item.post.uri] if item.post is not None else [])]


async def build_batch(
    client: PhiClient,
    memory: Memory,
    notifications: Sequence[Notification],
    *,
    owner_handle: str | None,
    recent_posts: int = 5,
    max_participants: int = MAX_PARTICIPANTS,
    research: bool = True,
) -> Batch:
    """The context of one batch, in the order the notifications arrived (oldest first).

    A mention, reply or quote whose post was deleted is left out of the batch; any other
    failure to fetch a notification's thread or a person's profile leaves that notification
    in, with less context. With `research`, each stranger's lookup is written to memory as
    background research (off for a preview, which writes nothing).
    """
    ordered = sorted(notifications, key=lambda n: n.indexed_at)
    items = [item for n in ordered if (item := await _context(client, n)) is not None]
    authors = {i.notification.author_did for i in items}
    participants = thread_participants(
        items, exclude=authors | {client.me.did}, cap=max_participants
    )
    # What they wrote in this batch is the batch itself: their research and first-interaction
    # notes leave it out (repeated, it only gives a small model more to copy).
    said = {i.text for i in items} | {uri for i in items for uri in _uris(i)}
    lookups: dict[str, AuthorLookup] = {}
    researched: dict[str, AuthorLookup] = {}
    posters = [i.notification.author_did for i in items if i.notification.reason in _POST_REASONS]
    for did in dict.fromkeys([*posters, *participants]):
        if not await _is_stranger(memory, did):
            continue
        lookup = await _lookup(client, did, recent_posts)
        if lookup is None:
            continue
        others = [p for p in lookup.recent_posts if p.uri not in said and p.text not in said]
        lookup = replace(lookup, recent_posts=others)
        researched[did] = lookup
        if did in authors:  # a first interaction; participants are only overheard
            lookups[did] = lookup
    if research:
        for did, lookup in researched.items():
            await write_background(memory, did, lookup)
    approvals = await approvals_in(memory, items, owner_handle)
    return Batch(
        items=items, author_lookups=lookups, approvals=approvals, participants=participants
    )
