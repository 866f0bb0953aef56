"""[CORE BLOCKS]: persona, zeitgeist and humans, as they are now, with their limits.

They are the texts phi curates about itself and its world (seed 002); the block tools edit
them (`phi.agent.tools.blocks`), `persona` only with the owner's approval.
"""

from __future__ import annotations

from typing import Final

from phi.agent.deps import PhiDeps
from phi.memory.learning import CORE_BLOCKS

__all__ = ["core_blocks_block"]

_ABOUT: Final = {
    "persona": "who you are; changing it needs your owner's approval",
    "zeitgeist": "what is going on around you",
    "humans": "the people you know, in general",
}


async def core_blocks_block(deps: PhiDeps) -> str:
    """Every core block with its fill and limit; an empty one says so."""
    parts = []
    for label in CORE_BLOCKS:
        block = await deps.blocks.view(label)
        body = block.content.strip() or "(empty)"
        parts.append(
            f"[CORE BLOCK {label} — {_ABOUT[label]}; {len(block.content)}/{block.limit} chars]"
            f"\n{body}"
        )
    return "\n\n".join(parts)
