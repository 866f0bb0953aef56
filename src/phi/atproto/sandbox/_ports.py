"""The sandbox's ports and the PostgreSQL schemas named after them.

A network listens on four ports from a base (PLC, PDS, AppView, the indexing hook). One whose
schema follows its base port can move off ports another program holds, and two networks on
different ports never share (and drop) each other's schemas.
"""

from __future__ import annotations

from typing import Final

import anyio

__all__ = ["DEFAULT_BASE_PORT", "MOVES", "schema_for", "taken"]

DEFAULT_BASE_PORT: Final = 2582
"""PLC's port by default (`PHI_SANDBOX_PORT`); the other services follow it."""
MOVES: Final = 25
"""How many blocks of four ports above a taken one `Sandbox.up` tries."""


def schema_for(base_port: int) -> str:
    """The schema suffix of a network on `base_port`: `phi_sandbox` on the default ports,
    else with the port spelled in letters (dev-env allows letters and `_` only)."""
    if base_port == DEFAULT_BASE_PORT:
        return "phi_sandbox"
    return "phi_sandbox_" + "".join(chr(ord("a") + int(d)) for d in str(base_port))


async def taken(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:`port`."""
    try:
        with anyio.fail_after(1.0):
            stream = await anyio.connect_tcp("127.0.0.1", port)
    except (OSError, TimeoutError):
        return False
    await stream.aclose()
    return True
