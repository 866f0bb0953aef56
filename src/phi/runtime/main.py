"""phi's main job: run until told to stop, with the control API beside the loop (and, with
`phi run --web`, the memory and activity pages over the same open memory and journal).

SIGINT and SIGTERM stop it gracefully: the tick in progress finishes (a reply is never cut in
half), then the web servers and the connections close.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import anyio
from fastapi import FastAPI

from phi.agent.control_log import CONTROL_LOG, ControlLog
from phi.atproto import ClientConfig
from phi.config import Settings
from phi.errors import UserError
from phi.runtime.app import choose_brains, open_runtime
from phi.runtime.control import (
    ControlServerFailed,
    control_hosts,
    control_token,
    create_control_app,
    serve_control,
)
from phi.runtime.poller import PhiRuntime
from phi.runtime.presence import ProfileNote, profile_note

__all__ = ["WebServerFailed", "WebServing", "serve_phi", "stop_on_signals"]

logger = logging.getLogger("phi.runtime")


async def stop_on_signals(stop: anyio.Event, say: Callable[[str], None] | None = None) -> None:
    """Set `stop` on the first SIGINT or SIGTERM, saying so to `say` (default: the log):
    the tick in progress may wait minutes on the model, and silence reads as a hang."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for received in signals:
            line = f"received {received.name}: finishing the current tick, then stopping"
            if say is None:
                logger.info("%s", line)
            else:
                say(line)
            stop.set()
            return


@dataclass(frozen=True, kw_only=True)
class WebServing:
    """The web app to serve beside the loop (`phi run --web`)."""

    app: Callable[[PhiRuntime], FastAPI]
    """Builds the app over the running phi (its open memory and its journal)."""
    host: str
    port: int


class WebServerFailed(UserError):
    """The web app beside the loop could not listen."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(
            f"the web app could not listen on {host}:{port}: {reason}; "
            "free the port or set PHI_WEB_HOST and PHI_WEB_PORT"
        )


@asynccontextmanager
async def _serve_web(
    web: WebServing | None, runtime: PhiRuntime, emit: Callable[[str], None]
) -> AsyncIterator[None]:
    if web is None:
        yield
        return
    async with AsyncExitStack() as stack:
        try:
            url = await stack.enter_async_context(
                serve_control(web.app(runtime), host=web.host, port=web.port)
            )
        except ControlServerFailed as exc:
            reason = str(exc.__cause__) if exc.__cause__ else "the app failed to start"
            raise WebServerFailed(web.host, web.port, reason) from exc
        emit(f"memory page on {url}/memory, run journal on {url}/activity")
        yield


async def serve_phi(
    settings: Settings,
    client_config: ClientConfig,
    *,
    emit: Callable[[str], None],
    stop: anyio.Event,
    web: WebServing | None = None,
) -> None:
    """Log in, announce the brain, serve the control API (and `web`), keep the online note
    in phi's bio (`phi.runtime.presence`) and poll until `stop`."""
    brains = choose_brains(settings)
    emit(brains.agent)
    if line := brains.memory_line():
        emit(line)
    async with open_runtime(settings, client_config, emit=emit) as runtime:
        emit(f"logged in as @{runtime.client.me.handle} ({runtime.client.me.did})")
        token = await anyio.to_thread.run_sync(control_token, settings.home, settings.control_token)
        log = ControlLog(path=settings.home / CONTROL_LOG)
        hosts = control_hosts(settings.control_host, settings.control_trusted_hosts)
        app = create_control_app(runtime, token, log=log, trusted_hosts=hosts)
        async with serve_control(
            app, host=settings.control_host, port=settings.control_port
        ) as url:
            where = f"PHI_CONTROL_TOKEN or {settings.home / 'control.token'}"
            emit(f"control API on {url} (bearer token: {where})")
            note = ProfileNote.from_settings(settings)
            async with (
                _serve_web(web, runtime, emit),
                profile_note(runtime.client, runtime.memory, note, emit=emit),
            ):
                await runtime.serve(stop)
    emit("stopped")
