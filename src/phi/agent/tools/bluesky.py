"""Tools that act on the network: replying, liking, reposting, posting, reading, following."""

from __future__ import annotations

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from phi.agent import gate
from phi.agent.deps import Action, Approval, PhiDeps, PhiPost
from phi.agent.guard import refuse_degenerate
from phi.agent.outcomes import Refused
from phi.agent.tools._common import request_thread, resolve_person
from phi.atproto import Post

__all__ = ["bluesky_tools"]

bluesky_tools = FunctionToolset[PhiDeps]()


def _render(posts: list[Post], limit: int) -> str:
    if not posts:
        return "(no posts)"
    return "\n".join(
        f"- @{p.author_handle} ({p.created_at:%Y-%m-%d %H:%M}) {p.uri}: {' '.join(p.text.split())}"
        for p in posts[:limit]
    )


@bluesky_tools.tool
async def reply_to(ctx: RunContext[PhiDeps], uri: str, text: str) -> str | Refused:
    """Reply to a post of the current batch, in its thread. This is how you talk to someone.

    Args:
        uri: The AT-URI of the post to answer, exactly as shown in [NEW NOTIFICATIONS].
        text: What to say (long text becomes a short self-thread).
    """
    deps = ctx.deps
    item = deps.batch.item(uri) if deps.batch is not None else None
    if deps.batch is not None and item is None:
        raise ModelRetry(f"{uri} is not a post of this batch; reply only to the posts shown")
    if any(p.in_reply_to == uri for p in deps.activity.posts):
        return Refused(refused=f"you already replied to {uri} in this batch")
    # Degenerate text (empty, an echo, a loop) is never posted: see `phi.agent.guard`.
    answering = item.text if item is not None else None
    if (not_posted := refuse_degenerate(ctx, "reply_to", text, answering=answering)) is not None:
        return not_posted
    refs = await deps.client.reply(text, to=uri)
    n = item.notification if item is not None else None
    root = item.thread_root if item is not None else uri
    deps.activity.posts.append(
        PhiPost(
            uri=refs[0].uri,
            text=text,
            thread_root=root,
            in_reply_to=uri,
            to_did=n.author_did if n else None,
            to_handle=n.author_handle if n else None,
            to_text=item.text if item is not None else None,
        )
    )
    deps.wrote("self_awareness")
    deps.activity.record(f"replied to @{n.author_handle if n else uri}: {text}")
    return f"replied: {refs[0].uri}"


def _in_batch(deps: PhiDeps, uri: str) -> None:
    if deps.batch is None or uri not in deps.batch.uris:
        raise ModelRetry(f"{uri} is not a post of the current batch; use a URI shown there")


@bluesky_tools.tool
async def like_post(ctx: RunContext[PhiDeps], uri: str) -> str:
    """Like a post of the current batch: a light acknowledgement when words are not needed.

    Args:
        uri: The AT-URI of a post shown in [NEW NOTIFICATIONS].
    """
    _in_batch(ctx.deps, uri)
    ref = await ctx.deps.client.like(uri)
    ctx.deps.activity.acted_on.append(uri)
    ctx.deps.wrote()
    ctx.deps.activity.record(f"liked {uri}")
    return f"liked: {ref.uri}"


@bluesky_tools.tool
async def repost_post(ctx: RunContext[PhiDeps], uri: str) -> str:
    """Repost a post of the current batch to your followers. Rarely: only what you stand behind.

    Args:
        uri: The AT-URI of a post shown in [NEW NOTIFICATIONS].
    """
    _in_batch(ctx.deps, uri)
    ref = await ctx.deps.client.repost(uri)
    ctx.deps.activity.acted_on.append(uri)
    ctx.deps.wrote()
    ctx.deps.activity.record(f"reposted {uri}")
    return f"reposted: {ref.uri}"


@bluesky_tools.tool
async def post(ctx: RunContext[PhiDeps], text: str) -> str | Refused:
    """Write a new top-level post (not a reply): a thought of your own, for your followers.

    Args:
        text: The post; over 300 characters becomes a self-thread.
    """
    deps = ctx.deps
    # Degenerate text (empty, a loop) is never posted: see `phi.agent.guard`.
    if (not_posted := refuse_degenerate(ctx, "post", text)) is not None:
        return not_posted
    refs = await deps.client.post(text)
    deps.activity.posts.append(PhiPost(uri=refs[0].uri, text=text, thread_root=refs[0].uri))
    deps.wrote("self_awareness")
    deps.activity.record(f"posted: {text}")
    return f"posted: {refs[0].uri}"


@bluesky_tools.tool
async def get_own_posts(ctx: RunContext[PhiDeps], limit: int = 10) -> str:
    """Your own recent posts, newest first: check what you already said before saying more.

    Args:
        limit: How many (1-50).
    """
    posts = await ctx.deps.client.list_own_posts(limit=max(1, min(limit, 50)))
    return _render(posts, limit)


@bluesky_tools.tool
async def search_posts(ctx: RunContext[PhiDeps], query: str, limit: int = 10) -> str:
    """Search public posts on the network.

    Args:
        query: Words to search for.
        limit: How many results (1-25).
    """
    posts = await ctx.deps.client.search_posts(query, limit=max(1, min(limit, 25)))
    return _render(posts, limit)


@bluesky_tools.tool
async def read_timeline(ctx: RunContext[PhiDeps], limit: int = 15) -> str:
    """The latest posts from accounts you follow: what your part of the network is saying.

    Args:
        limit: How many posts (1-50).
    """
    posts = await ctx.deps.client.get_timeline(limit=max(1, min(limit, 50)))
    return _render(posts, limit)


@bluesky_tools.tool
async def follow_user(
    ctx: RunContext[PhiDeps], handle: str, why: str, discussed_in: str | None = None
) -> str | Refused:
    """Follow an account. Owner-gated: without your owner's approval this posts an
    authorization request instead, and the follow happens when the owner likes it.

    Args:
        handle: The handle (or DID) to follow.
        why: One line on why, shown to your owner.
        discussed_in: URI of the batch post where this came up (the request replies there).
    """
    deps = ctx.deps
    did, shown = await resolve_person(deps, handle)
    action = Action.of("follow_user", handle=shown.lower())
    outcome = await gate.gated(deps, action, why, thread_uri=request_thread(deps, discussed_in))
    if not isinstance(outcome, Approval):
        return outcome
    ref = await deps.client.follow(did)
    deps.wrote()
    deps.activity.record(f"followed @{shown}")
    return f"followed @{shown}: {ref.uri}"
