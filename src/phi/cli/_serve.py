"""An ASGI app served by a CLI command (`phi web`, `phi mcp --http`) on a socket it bound.

The command binds before it announces its address, so `--port 0` (any free port) prints the
port it really got, and a taken port is one line before anything else starts (uvicorn, left
to bind, would log an error and exit).
"""

from __future__ import annotations

import os
import socket
from typing import Any

from phi.cli._edge import fail, note

__all__ = ["base_url", "listen", "serve"]


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host:port` (port 0: a free one); a one-line error if it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except (OSError, OverflowError) as exc:
        # `create_server` appends the address to `strerror`; the message names it already.
        reason = os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else str(exc)
        fail(
            f"cannot listen on {host}:{port} ({reason}); free the port or choose another "
            "with --port (--port 0 picks a free one)"
        )


def base_url(host: str, sock: socket.socket) -> str:
    """`http://HOST:PORT`: `host` as the user gave it, the port `sock` really got (never 0)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{sock.getsockname()[1]}"


async def serve(app: Any, sock: socket.socket, *, log_level: str, ready: str) -> None:
    """Serve `app` with uvicorn on `sock` until stopped (Ctrl-C, SIGTERM); say `ready` (a
    note) once it accepts requests, so whoever reads it may connect at once."""
    import uvicorn

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                note(ready)

    host, port = sock.getsockname()[:2]
    # Only for uvicorn's own messages: it serves the socket given.
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level)
    await Announcing(config).serve(sockets=[sock])
