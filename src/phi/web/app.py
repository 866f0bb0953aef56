"""The FastAPI app: phi's memory over HTTP, and the `/memory` page.

`create_app(open_memory)` opens the memory in the app's lifespan and closes it on
shutdown. It answers only requests addressed to a trusted `Host` (loopback names by
default). Reads are open unless `token_for_reads` (a server other machines can reach);
write and control routes need the configured bearer token, and with no token the API is
read-only. phi's errors become HTTP statuses in `_add_error_handlers`,
the one place this surface maps them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from fastapi import Depends, FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from phi.errors import InvalidInput, NamespaceNotFound, PhiError, RowNotFound, UserError
from phi.hosts import LOOPBACK_HOSTS, TrustedHosts
from phi.memory import Memory
from phi.runtime.journal import RunJournal
from phi.web._deps import require_read_token
from phi.web.activity import activity_router
from phi.web.routes import router

__all__ = ["STATIC", "create_app"]

STATIC: Final = Path(__file__).parent / "static"


def _add_error_handlers(app: FastAPI) -> None:
    def status_of(exc: PhiError) -> int:
        if isinstance(exc, RowNotFound | NamespaceNotFound):
            return 404
        if isinstance(exc, UserError):
            return 400
        return 500

    async def handle(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, PhiError)
        return JSONResponse({"detail": str(exc)}, status_code=status_of(exc))

    app.add_exception_handler(PhiError, handle)


def create_app(
    open_memory: Callable[[], Memory] | None = None,
    *,
    memory: Memory | None = None,
    token: str | None = None,
    trusted_hosts: Sequence[str] = LOOPBACK_HOSTS,
    token_for_reads: bool = False,
    journal: RunJournal | None = None,
) -> FastAPI:
    """The web app over phi's memory.

    Pass `open_memory` (the app opens it in its lifespan and closes it on shutdown, as
    `phi web` does) or an already open `memory` that its owner keeps open (as `phi run`
    will, serving the agent's own memory). `trusted_hosts` are the `Host` names it answers
    (`"*"`: any); `token_for_reads` makes every API read need the bearer `token` too.
    `journal` is the run journal the `/activity` page shows (none: that page's API 404s).
    """
    if (open_memory is None) == (memory is None):
        raise TypeError("pass exactly one of open_memory and memory")
    if token_for_reads and not token:
        raise InvalidInput("reads need the bearer token but none is configured; set PHI_WEB_TOKEN")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if open_memory is None:
            yield
            return
        async with open_memory() as opened:
            app.state.memory = opened
            yield

    app = FastAPI(
        title="phi memory",
        summary="phi's memory: search, rows, history, people and the graph.",
        version="0.1.0",
        lifespan=lifespan,
        # FastAPI's /docs and /redoc load their scripts from a CDN: blank offline. /docs is
        # our own page over /openapi.json instead (static/docs.html, nothing fetched).
        docs_url=None,
        redoc_url=None,
    )
    app.state.token = token or None
    app.state.token_for_reads = token_for_reads
    app.state.journal = journal
    if memory is not None:
        app.state.memory = memory
    _add_error_handlers(app)
    app.include_router(router, dependencies=[Depends(require_read_token)])
    app.include_router(activity_router, dependencies=[Depends(require_read_token)])
    app.add_middleware(TrustedHosts, hosts=trusted_hosts)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/memory", include_in_schema=False)
    async def memory_page() -> FileResponse:
        return FileResponse(STATIC / "memory.html")

    @app.get("/docs", include_in_schema=False)
    async def docs_page() -> FileResponse:
        return FileResponse(STATIC / "docs.html")

    @app.get("/activity", include_in_schema=False)
    async def activity_page() -> FileResponse:
        return FileResponse(STATIC / "activity.html")

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/memory")

    return app
