"""Blocks about phi itself: identity, time, goals, self-awareness, self state, observations,
recent operations, public memory, and the entry-specific blocks of scheduled runs.

Identifiers go in the labels (NSIDs, rkeys, handles) so phi uses exact values in tool calls.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from pydantic import BaseModel, Field

from phi.agent.deps import PhiDeps
from phi.atproto import CosmikCard, Goal, Observation, collection_name
from phi.atproto.observations import POOL_SIZE

__all__ = [
    "goal_texts",
    "goals_block",
    "identity_block",
    "now_block",
    "observations_block",
    "operations_block",
    "public_memory_block",
    "run_block",
    "self_awareness_block",
    "self_state_block",
]

CANONICAL_TTL = timedelta(minutes=5)
"""PDS reads (goals, operations, self state): cheap but not free at a 10-second poll."""
DERIVED_TTL = timedelta(hours=1)
"""Small-model passes over phi's posts: longer, keyed by the latest post and the goals."""


def operation_collections(prefix: str) -> list[str]:
    """The collections whose writes make up [RECENT OPERATIONS]."""
    return [
        "app.bsky.feed.post",
        "app.bsky.feed.like",
        "app.bsky.feed.repost",
        "app.bsky.graph.follow",
        collection_name("goal", prefix),
        collection_name("observation", prefix),
        collection_name("cosmikCard", prefix),
        collection_name("cosmikConnection", prefix),
    ]


async def identity_block(deps: PhiDeps) -> str:
    me = deps.client.me
    return (
        "[YOUR INFRASTRUCTURE]\n"
        f"handle: @{me.handle}\ndid: {me.did}\npds: {deps.client.config.pds_url}\n"
        f"records: {deps.config.nsid_prefix}.*"
    )


async def now_block(deps: PhiDeps) -> str:
    return f"[NOW]\n{deps.now.strftime('%Y-%m-%d %H:%M UTC (%A)')}"


async def _goals(deps: PhiDeps) -> str:
    goals = await deps.client.list_records(Goal, limit=50)
    nsid = Goal.collection(deps.config.nsid_prefix)
    if not goals:
        return f"[GOALS — {nsid}]\n(none set yet)"
    lines = [f"[GOALS — {nsid}, rkey in brackets]"]
    for stored in reversed(goals):
        g = stored.value
        lines.append(
            f"- [{stored.rkey}] {g.title}: {g.description} (progress: {g.progress_signal})"
        )
    return "\n".join(lines)


async def goals_block(deps: PhiDeps) -> str:
    return await deps.caches.get(
        "goals", now=deps.now, ttl=CANONICAL_TTL, render=lambda: _goals(deps)
    )


async def goal_texts(deps: PhiDeps) -> list[str]:
    """phi's goals as `title: description` lines, oldest first (for the syntheses), read
    again only when [GOALS] changed."""
    shown = await goals_block(deps)

    async def render() -> str:
        goals = await deps.client.list_records(Goal, limit=50)
        return "\n".join(f"{g.value.title}: {g.value.description}" for g in reversed(goals))

    key = hashlib.sha256(shown.encode()).hexdigest()
    joined = await deps.caches.get(
        "goal_texts", now=deps.now, ttl=CANONICAL_TTL, render=render, key=key
    )
    return [line for line in joined.split("\n") if line]


class _Critique(BaseModel):
    line: str = Field(description="one first-person sentence, at most 30 words")


async def self_awareness_block(deps: PhiDeps) -> str:
    """One line of phi's own voice turned inward, about recent posts against the goals."""
    small = deps.small
    if small is None or not deps.config.synthesize:
        return ""
    posts = await deps.client.list_own_posts(limit=10)
    if not posts:
        return ""
    goals = await goals_block(deps)
    key = hashlib.sha256(f"{posts[0].uri}\n{goals}".encode()).hexdigest()

    async def render() -> str:
        recent = "\n".join(f"- {p.text[:200]}" for p in posts)
        answer = await small.ask(
            "synthesize",
            f"{goals}\n\nmy recent posts, newest first:\n{recent}",
            instructions=(
                "you are phi looking at your own recent posts. in one first-person sentence, "
                "name a pattern to push against or a drift from your goals. no praise."
            ),
            output_type=_Critique,
        )
        return f"[SELF-AWARENESS]\n{answer.line.strip()}" if answer else ""

    return await deps.caches.get(
        "self_awareness", now=deps.now, ttl=DERIVED_TTL, render=render, key=key
    )


async def _operations(deps: PhiDeps) -> list[str]:
    ops = await deps.client.recent_operations(
        operation_collections(deps.config.nsid_prefix), limit=10
    )
    return [f"- {deps.age(op.created_at)} [{op.rkey}] {op.summary}" for op in reversed(ops)]


async def operations_block(deps: PhiDeps) -> str:
    async def render() -> str:
        lines = await _operations(deps)
        if not lines:
            return ""
        return "[RECENT OPERATIONS — your last writes, oldest first]\n" + "\n".join(lines)

    return await deps.caches.get("operations", now=deps.now, ttl=CANONICAL_TTL, render=render)


async def self_state_block(deps: PhiDeps) -> str:
    async def render() -> str:
        ops = await deps.client.recent_operations(["app.bsky.graph.follow"], limit=1)
        posts = await deps.client.list_own_posts(limit=1)
        parts = []
        if posts:
            parts.append(f"last post: {deps.age(posts[0].created_at)}")
        parts.append(f"last follow: {deps.age(ops[0].created_at)}" if ops else "last follow: never")
        return "[SELF STATE]\n" + "; ".join(parts)

    return await deps.caches.get("self_state", now=deps.now, ttl=CANONICAL_TTL, render=render)


async def observations_block(deps: PhiDeps) -> str:
    stored = await deps.client.list_records(Observation, limit=100)
    nsid = Observation.collection(deps.config.nsid_prefix)
    if not stored:
        return ""
    lines = [f"[ACTIVE OBSERVATIONS — {nsid}, {len(stored)}/{POOL_SIZE}, rkey in brackets]"]
    for s in sorted(stored, key=lambda s: s.value.created_at):
        age = deps.age(s.value.created_at)
        why = f" — {s.value.reasoning}" if s.value.reasoning else ""
        lines.append(f"- [{s.rkey}] {s.value.content}{why} ({age})")
    return "\n".join(lines)


async def public_memory_block(deps: PhiDeps) -> str:
    async def render() -> str:
        cards = await deps.client.list_records(CosmikCard, limit=100)
        if not cards:
            return ""
        shown = "100+" if len(cards) >= 100 else str(len(cards))
        return f"[PUBLIC MEMORY]\nyou keep {shown} public cards (cosmik/semble) on your PDS."

    return await deps.caches.get("public_memory", now=deps.now, ttl=CANONICAL_TTL, render=render)


async def run_block(deps: PhiDeps) -> str:
    """What scheduled runs bring: the latest post for musing and reflection, check results."""
    if deps.entry in ("musing", "reflection") and deps.last_post_text:
        return f"[YOUR LATEST POST]\n{deps.last_post_text}"
    if deps.entry == "service_check" and deps.service_report:
        return f"[SERVICE CHECK]\n{deps.service_report}"
    return ""
