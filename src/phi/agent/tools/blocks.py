"""Tools over phi's core blocks: `persona` (who phi is), `zeitgeist` (what is going on
around it) and `humans` (the people it knows, in general).

phi may view them any time and edit `zeitgeist` and `humans` freely. A change to `persona`
alters who phi is, so it passes the owner gate (`phi.agent.gate`): without the owner's like
it posts an authorization request naming the exact edit. Every write is checked against the
block's limit before anything is asked or stored; a write over it comes back as a retry.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic_ai import RunContext
from pydantic_ai.toolsets import FunctionToolset

from phi.agent import gate
from phi.agent.deps import Action, Approval, PhiDeps
from phi.agent.outcomes import Refused
from phi.agent.tools._common import request_thread
from phi.agent.tools.memory import _written

__all__ = ["GATED_BLOCKS", "CoreLabel", "block_tools"]

CoreLabel = Literal["persona", "zeitgeist", "humans"]

GATED_BLOCKS: Final[frozenset[CoreLabel]] = frozenset({"persona"})
"""Blocks whose change alters who phi is: only with the owner's approval."""

block_tools = FunctionToolset[PhiDeps]()


async def _approved(
    deps: PhiDeps, label: CoreLabel, action: Action, why: str, discussed_in: str | None
) -> Approval | Refused | str | None:
    """None when `label` is not gated; else what the gate says."""
    if label not in GATED_BLOCKS:
        return None
    return await gate.gated(deps, action, why, thread_uri=request_thread(deps, discussed_in))


@block_tools.tool
async def core_block_view(ctx: RunContext[PhiDeps], label: CoreLabel) -> str:
    """Read one of your core blocks as it is now.

    Args:
        label: `persona` (who you are), `zeitgeist` (what is going on), `humans` (people).
    """
    return (await ctx.deps.blocks.view(label)).render()


@block_tools.tool
async def core_block_append(
    ctx: RunContext[PhiDeps], label: CoreLabel, text: str, discussed_in: str | None = None
) -> str | Refused:
    """Add a line to a core block. `persona` is owner-gated: without approval this posts an
    authorization request; when your owner likes it, call again with the same arguments.

    Args:
        label: `persona`, `zeitgeist` or `humans`.
        text: The line to add.
        discussed_in: URI of the batch post where this came up (persona only).
    """
    deps = ctx.deps
    await _written(deps.blocks.append(label, text, dry_run=True))
    action = Action.of("core_block_append", label=label, text=text)
    verdict = await _approved(deps, label, action, f"{label}: add a line", discussed_in)
    if verdict is not None and not isinstance(verdict, Approval):
        return verdict
    block = await _written(deps.blocks.append(label, text))
    deps.activity.record(f"block {label}: appended {text!r}")
    return f"appended to {label} ({len(block.content)}/{block.limit} chars)"


@block_tools.tool
async def core_block_replace(
    ctx: RunContext[PhiDeps],
    label: CoreLabel,
    old: str,
    new: str,
    discussed_in: str | None = None,
) -> str | Refused:
    """Replace exact text in a core block (view it first). `persona` is owner-gated, as for
    `core_block_append`.

    Args:
        label: `persona`, `zeitgeist` or `humans`.
        old: Text now in the block.
        new: What replaces it (empty to delete).
        discussed_in: URI of the batch post where this came up (persona only).
    """
    deps = ctx.deps
    await _written(deps.blocks.replace(label, old, new, dry_run=True))
    action = Action.of("core_block_replace", label=label, old=old, new=new)
    verdict = await _approved(deps, label, action, f"{label}: replace text", discussed_in)
    if verdict is not None and not isinstance(verdict, Approval):
        return verdict
    block = await _written(deps.blocks.replace(label, old, new))
    deps.activity.record(f"block {label}: replaced {old!r}")
    return f"replaced in {label} ({len(block.content)}/{block.limit} chars)"
