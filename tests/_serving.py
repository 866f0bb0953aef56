"""Any ASGI app behind a real uvicorn on a free loopback port, in the test's own event loop."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn


class _Server(uvicorn.Server):
    """uvicorn that says when its startup ended, however it ended."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[int]:
    """Serve `app` (lifespan included) on 127.0.0.1 while the block runs; yields the port.
    The socket is bound here, port 0, so no other process can take the port in between."""

    # uvicorn calls the app with no arguments to tell a factory, and reads the ASGI version
    # from `__call__`: an app object whose `__call__` is wrapped (mutmut's, under
    # `scripts/mutate`) would pass for a factory. A plain function of three is neither.
    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        await app(scope, receive, send)

    server = _Server(uvicorn.Config(asgi, log_level="critical", lifespan="on"))
    sock = socket.create_server(("127.0.0.1", 0))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await server.ready.wait()
        assert server.started, "the app failed to start"
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        await task
        sock.close()
