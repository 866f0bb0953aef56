"""Tools for phi's public memory on cosmik/semble: bookmarks and connections."""

from __future__ import annotations

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from phi.agent.deps import PhiDeps
from phi.agent.public import search_cards
from phi.atproto import CosmikCard, CosmikConnection

__all__ = ["cosmik_tools"]

cosmik_tools = FunctionToolset[PhiDeps]()


@cosmik_tools.tool
async def save_url(
    ctx: RunContext[PhiDeps], url: str, title: str | None = None, description: str | None = None
) -> str:
    """Bookmark a page publicly (a URL card) so you and others can find it again.

    Args:
        url: The page (http or https).
        title: Its title.
        description: One line on why it is worth keeping.
    """
    if not url.startswith(("http://", "https://")):
        raise ModelRetry(f"{url!r} is not an http(s) URL")
    ref = await ctx.deps.client.create_record(
        CosmikCard.bookmark(url, title=title, description=description)
    )
    ctx.deps.wrote("public_memory")
    ctx.deps.activity.record(f"saved {url}")
    return f"saved: {ref.uri}"


@cosmik_tools.tool
async def create_connection(
    ctx: RunContext[PhiDeps],
    source: str,
    target: str,
    connection_type: str = "RELATED",
    note: str | None = None,
) -> str:
    """Publicly link two things (URLs or card URIs) and say how they relate.

    Args:
        source: Where the link starts (URL or AT-URI).
        target: Where it points (URL or AT-URI).
        connection_type: How they relate, e.g. RELATED, SUPPORTS, OPPOSES, EXPLAINS.
        note: Why they belong together.
    """
    ref = await ctx.deps.client.create_record(
        CosmikConnection(
            source=source, target=target, connection_type=connection_type.upper(), note=note
        )
    )
    ctx.deps.wrote()
    ctx.deps.activity.record(f"connected {source} → {target}")
    return f"connected: {ref.uri}"


@cosmik_tools.tool
async def search_public_memory(ctx: RunContext[PhiDeps], query: str, limit: int = 5) -> str:
    """Search your public memory: the cards (notes and bookmarks) you published on your PDS.
    Use it before publishing something you may have shared already, or to point someone to
    what you noted publicly.

    Args:
        query: Words to look for.
        limit: How many cards at most (1-20).
    """
    if not query.strip():
        raise ModelRetry("give some words to search for")
    hits = await search_cards(ctx.deps.client, query, limit=max(1, min(limit, 20)))
    if not hits:
        return f"no public card mentions {query!r}"
    return "\n".join(f"- {hit.text} ({hit.uri})" for hit in hits)
