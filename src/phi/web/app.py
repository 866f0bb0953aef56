"""The FastAPI app: phi's memory over HTTP, and the `/memory` page.

`create_app(open_memory)` opens the memory in the app's lifespan and closes it on
shutdown. Reads are open; write and control routes need the configured bearer token, and
with no token the API is read-only. phi's errors become HTTP statuses in `_add_error_handlers`,
the one place this surface maps them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from phi.errors import NamespaceNotFound, PhiError, RowNotFound, UserError
from phi.memory import Memory
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


def create_app(open_memory: Callable[[], Memory], *, token: str | None = None) -> FastAPI:
    """The web app over the memory `open_memory()` returns (opened in the lifespan)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_memory() as memory:
            app.state.memory = memory
            yield

    app = FastAPI(
        title="phi memory",
        summary="phi's memory: search, rows, history, people and the graph.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.token = token or None
    _add_error_handlers(app)
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/memory", include_in_schema=False)
    async def memory_page() -> FileResponse:
        return FileResponse(STATIC / "memory.html")

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/memory")

    return app
