"""A loopback HTTP server answering fixed JSON per path, recording what was asked."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def json_app(routes: dict[str, object], seen: list[str]) -> Any:
    """An ASGI app answering each path in `routes` with its JSON (404 otherwise); each
    request's `path?query` is appended to `seen`. Serve it with `tests._serving.serving`."""

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        seen.append(f"{scope['path']}?{scope['query_string'].decode()}")
        found = scope["path"] in routes
        body = json.dumps(routes[scope["path"]] if found else {"error": "NotFound"}).encode()
        headers = [(b"content-type", b"application/json")]
        status = 200 if found else 404
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app
