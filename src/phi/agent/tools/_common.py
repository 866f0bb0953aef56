"""What the tool modules share: failures as results, finding batch items, resolving people."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from phi.agent.deps import PhiDeps
from phi.agent.outcomes import Refused
from phi.errors import PhiError

__all__ = [
    "ErrorsAsResults",
    "errors_as_results",
    "request_thread",
    "resolve_person",
]


READ_TOOLS = frozenset(
    {
        "recall",
        "get_own_posts",
        "search_posts",
        "read_timeline",
        "list_goals",
        "user_block_view",
        "check_urls",
        "web_search",
        "read_feed",
        "owner_feeds",
        "search_network_cards",
    }
)
"""Tools that only look: the activity stream shows their calls (the others say what they did)."""


@dataclass
class ErrorsAsResults(WrapperToolset[PhiDeps]):
    """Tools' own failures (a post not found, a record refused, a network error) come back
    to the model as the tool's result, so one bad call never ends the run."""

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[PhiDeps],
        tool: ToolsetTool[PhiDeps],
    ) -> Any:
        shown = ", ".join(f"{k}={v!r}" for k, v in tool_args.items())
        try:
            result = await self.wrapped.call_tool(name, tool_args, ctx, tool)
        except PhiError as exc:
            ctx.deps.activity.record(f"{name} failed: {exc}")
            return f"error: {exc}"
        except ModelRetry as exc:
            ctx.deps.activity.record(f"{name}({shown}) → asked again: {exc.message[:100]}")
            raise
        if isinstance(result, Refused):
            ctx.deps.activity.record(f"{name}({shown}) → refused: {result.refused[:100]}")
        elif name in READ_TOOLS:
            first = str(result).splitlines()[0] if str(result) else ""
            ctx.deps.activity.record(f"{name}({shown}) → {first[:100]}")
        return result


def errors_as_results(toolset: AbstractToolset[PhiDeps]) -> ErrorsAsResults:
    return ErrorsAsResults(toolset)


async def resolve_person(deps: PhiDeps, handle_or_did: str) -> tuple[str, str]:
    """(DID, handle) of a person: from the batch when they are in it, else the network.

    Raises `NotFound` with the handle in its message when it does not resolve.
    """
    wanted = handle_or_did.strip().removeprefix("@")
    if deps.batch is not None:
        for did, handle in deps.batch.author_handles().items():
            if wanted.lower() in (did, handle.lower()):
                return did, handle
    if wanted.startswith("did:"):
        profile = await deps.client.get_profile(wanted)
        return profile.did, profile.handle
    return await deps.client.resolve_handle(wanted), wanted


def request_thread(deps: PhiDeps, discussed_in: str | None) -> str | None:
    """Where an authorization request goes: the named batch post, or the batch's only post
    (a top-level post when neither is there)."""
    if deps.batch is None:
        return None
    if discussed_in is not None and deps.batch.item(discussed_in) is not None:
        return discussed_in
    posts = [i.notification.uri for i in deps.batch.items if i.post is not None]
    return posts[-1] if len(posts) == 1 else None
