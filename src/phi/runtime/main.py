"""phi's main job: run until told to stop, with the control API beside the loop.

SIGINT and SIGTERM stop it gracefully: the tick in progress finishes (a reply is never cut in
half), then the control API and the connections close.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable

import anyio

from phi.agent.control_log import CONTROL_LOG, ControlLog
from phi.atproto import ClientConfig
from phi.config import Settings
from phi.runtime.app import choose_brains, open_runtime
from phi.runtime.control import control_token, create_control_app, serve_control

__all__ = ["serve_phi", "stop_on_signals"]

logger = logging.getLogger("phi.runtime")


async def stop_on_signals(stop: anyio.Event) -> None:
    """Set `stop` on the first SIGINT or SIGTERM."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for received in signals:
            logger.info("received %s: finishing the current tick, then stopping", received.name)
            stop.set()
            return


async def serve_phi(
    settings: Settings,
    client_config: ClientConfig,
    *,
    emit: Callable[[str], None],
    stop: anyio.Event,
) -> None:
    """Log in, announce the brain, serve the control API and poll until `stop`."""
    brains = choose_brains(settings)
    emit(brains.agent)
    if brains.memory != brains.agent:
        emit(f"memory passes: {brains.memory}")
    async with open_runtime(settings, client_config, emit=emit) as runtime:
        emit(f"logged in as @{runtime.client.me.handle} ({runtime.client.me.did})")
        token = await anyio.to_thread.run_sync(control_token, settings.home, settings.control_token)
        log = ControlLog(path=settings.home / CONTROL_LOG)
        app = create_control_app(runtime, token, log=log)
        async with serve_control(
            app, host=settings.control_host, port=settings.control_port
        ) as url:
            where = f"PHI_CONTROL_TOKEN or {settings.home / 'control.token'}"
            emit(f"control API on {url} (bearer token: {where})")
            await runtime.serve(stop)
    emit("stopped")
