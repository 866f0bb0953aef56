"""The control API of `phi run`: pause, resume, post or review now, health.

`create_control_app(controller, token)` is a thin HTTP adapter over a `Controller` (the
poller): each route calls one method. Every route but `GET /health` needs
`Authorization: Bearer <token>`. Every route, `/health` included, answers only the `Host`
names it trusts (loopback by default, `PHI_CONTROL_TRUSTED_HOSTS` besides): a page that
re-points its name at 127.0.0.1 (DNS rebinding) would otherwise read `/health` from a
visitor's browser. `serve_control` runs the app with uvicorn inside the caller's event loop,
next to the poller, and stops it on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Literal, Protocol

import anyio
import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, SecretStr

from phi.agent.control_log import ControlEventKind, ControlLog
from phi.errors import PhiError, UserError
from phi.hosts import LOOPBACK_HOSTS, TrustedHosts, is_loopback
from phi.private import FILE_MODE, check_secret_file, private_dir

__all__ = [
    "TOKEN_FILE",
    "ControlServerFailed",
    "Controller",
    "RunResult",
    "State",
    "control_hosts",
    "control_token",
    "create_control_app",
    "serve_control",
]

TOKEN_FILE: Final = "control.token"
"""Name of the generated token's file under phi's home."""


class Controller(Protocol):
    """What the control API drives: the running poller."""

    @property
    def paused(self) -> bool:
        """Whether the poller is paused (it then handles no notifications and no jobs)."""
        ...

    async def pause(self) -> None:
        """Stop handling notifications and scheduled jobs until `resume`."""
        ...

    async def resume(self) -> None:
        """Handle notifications and scheduled jobs again."""
        ...

    async def post_now(self) -> str:
        """Run a musing now, whatever the schedule; return the run's summary."""
        ...

    async def review_now(self) -> str:
        """Run a memory review now; return its summary."""
        ...

    async def health(self) -> dict[str, Any]:
        """Facts for `GET /health` (counters, last poll, last jobs...), JSON-serializable."""
        ...


class State(BaseModel):
    """The poller's state after `POST /pause` or `POST /resume`."""

    status: Literal["ok", "paused"]


class RunResult(BaseModel):
    """What `POST /post-now` and `POST /review-now` answer: the run's summary."""

    result: str


_bearer = HTTPBearer(auto_error=False)


def _status(controller: Controller) -> Literal["ok", "paused"]:
    return "paused" if controller.paused else "ok"


async def _record(log: ControlLog | None, kind: ControlEventKind) -> None:
    if log is not None:
        await log.record(kind)


def control_hosts(bind: str, trusted: Sequence[str] = ()) -> list[str]:
    """The `Host` names the control API answers when it listens on `bind`: the loopback
    names, `trusted` (`PHI_CONTROL_TRUSTED_HOSTS`; `*` is any), and `bind` itself when it is
    one address off loopback (a wildcard bind has no one name to trust)."""
    hosts = [*LOOPBACK_HOSTS, *trusted]
    if not is_loopback(bind) and bind not in ("0.0.0.0", "::", ""):
        hosts.append(bind)
    return hosts


def create_control_app(
    controller: Controller,
    token: str,
    *,
    log: ControlLog | None = None,
    trusted_hosts: Sequence[str] = LOOPBACK_HOSTS,
) -> FastAPI:
    """The control API over `controller`, guarded by the bearer `token`, answering only
    requests addressed to one of `trusted_hosts` (see `control_hosts`); with a `log`, its
    start (a restart of phi) and every pause and resume are appended to it.

    Routes: `GET /health` (open), `POST /pause`, `POST /resume`, `POST /post-now`,
    `POST /review-now`. A `UserError` from the controller answers 400, any other
    `PhiError` 500, both as `{"detail": message}`.
    """
    if not token:
        raise UserError("the control API needs a non-empty token")
    expected = token.encode()

    def require_token(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> None:
        # Compared as bytes: `compare_digest` refuses non-ASCII `str`, and a header arrives as
        # latin-1 text, so its bytes are recovered exactly and the token is taken as UTF-8.
        if credentials is None or not secrets.compare_digest(
            credentials.credentials.encode("latin-1"), expected
        ):
            raise HTTPException(
                401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
            )

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await _record(log, "started")
        yield

    app = FastAPI(
        title="phi control",
        summary="Pause, resume and prod the running phi.",
        version="0.1.0",
        lifespan=lifespan,
    )

    async def handle(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, PhiError)
        status = 400 if isinstance(exc, UserError) else 500
        return JSONResponse({"detail": str(exc)}, status_code=status)

    app.add_exception_handler(PhiError, handle)
    app.add_middleware(
        TrustedHosts,
        hosts=trusted_hosts,
        advice="add the name to PHI_CONTROL_TRUSTED_HOSTS",
    )
    guarded = [Depends(require_token)]

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """The poller's state (`ok` or `paused`) and the controller's health facts."""
        facts = await controller.health()
        return {**facts, "status": _status(controller)}

    @app.post("/pause", dependencies=guarded)
    async def pause() -> State:
        """`Controller.pause`."""
        await controller.pause()
        await _record(log, "paused")
        return State(status=_status(controller))

    @app.post("/resume", dependencies=guarded)
    async def resume() -> State:
        """`Controller.resume`."""
        await controller.resume()
        await _record(log, "resumed")
        return State(status=_status(controller))

    @app.post("/post-now", dependencies=guarded)
    async def post_now() -> RunResult:
        """`Controller.post_now`: a musing now."""
        return RunResult(result=await controller.post_now())

    @app.post("/review-now", dependencies=guarded)
    async def review_now() -> RunResult:
        """`Controller.review_now`: a memory review now."""
        return RunResult(result=await controller.review_now())

    return app


def control_token(home: Path, configured: SecretStr | None) -> str:
    """The control API's token: the configured one, else one kept in `<home>/control.token`.

    The file is created once with mode 0600 and a fresh random token, then read back on
    later starts, so scripts and the CLI on this machine can find it. Blocking file I/O:
    call it before the event loop starts, or on a worker thread.
    """
    if configured is not None and configured.get_secret_value().strip():
        return configured.get_secret_value().strip()
    path = home / TOKEN_FILE
    private_dir(home)
    fresh = secrets.token_urlsafe(32)
    try:
        # O_EXCL: of two processes starting at once, one writes and both read its token.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        try:
            stored = path.read_text(encoding="utf-8").strip()
        except UnicodeDecodeError as exc:
            raise UserError(
                f"the control token file {str(path)!r} is not UTF-8 text (byte {exc.start}); "
                "delete it to get a new token, or set PHI_CONTROL_TOKEN"
            ) from None
        if not stored:
            raise UserError(
                f"the control token file {str(path)!r} is empty; delete it to get a new token"
            ) from None
        # A token others can read is no longer phi's owner's alone: refused, not used.
        check_secret_file(path)
        return stored
    os.fchmod(fd, FILE_MODE)  # the umask may have taken bits off; exactly 0600
    with os.fdopen(fd, "w") as file:
        file.write(fresh + "\n")
    return fresh


class ControlServerFailed(PhiError):
    """The control API could not start (most often: the port is taken)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        self.host, self.port = host, port
        super().__init__(
            f"the control API could not listen on {host}:{port}: {reason}; "
            "free the port or set PHI_CONTROL_HOST and PHI_CONTROL_PORT"
        )


class _EmbeddedServer(uvicorn.Server):
    """uvicorn that says when it is up, and leaves signals to the program around it."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = anyio.Event()
        """Set once startup ended, whether it succeeded (`started`) or not."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn would take SIGINT and SIGTERM for itself and raise them again after its
        # shutdown; the poller owns them.
        yield


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ControlServerFailed(host, port, exc.strerror or str(exc)) from exc


@contextlib.asynccontextmanager
async def serve_control(
    app: FastAPI, *, host: str = "127.0.0.1", port: int = 8781
) -> AsyncIterator[str]:
    """Serve `app` with uvicorn in the current event loop while the block runs.

    Port 0 picks a free port. On exit the server stops accepting, lets requests in flight
    finish (up to 5 seconds) and closes, even when the block is cancelled.

    Yields:
        The base URL the server listens on, e.g. `http://127.0.0.1:8781`.

    Raises:
        ControlServerFailed: The address cannot be bound, or the app failed to start.
    """
    # Bound here rather than by uvicorn, which would exit the process on a taken port.
    sock = _listen(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    config = uvicorn.Config(
        app, log_config=None, log_level="warning", access_log=False, timeout_graceful_shutdown=5
    )
    server = _EmbeddedServer(config)

    async def run() -> None:
        try:
            await server.serve(sockets=[sock])
        except SystemExit:
            pass  # uvicorn exits when the app's lifespan startup fails; `started` tells.
        finally:
            sock.close()
            server.ready.set()

    # A plain asyncio task rather than a task group: the block's own exceptions must reach
    # the caller as they are, not wrapped in an exception group (uvicorn is asyncio-only).
    task = asyncio.create_task(run(), name=f"phi control API on {shown}:{bound_port}")
    try:
        await server.ready.wait()
        if not server.started:
            raise ControlServerFailed(host, port, "the app failed to start")
        yield f"http://{shown}:{bound_port}"
    finally:
        # Shielded so uvicorn closes its sockets even when the block is cancelled.
        with anyio.CancelScope(shield=True):
            server.should_exit = True
            await task
