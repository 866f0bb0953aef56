"""`phi sandbox run`: phi on the local network with the offline defaults, and a first
conversation to watch.

Brings the network up (installing it on first use), logs phi in as `@phi.test` with its own
memory file, has alice mention phi, then polls and streams what phi does until Ctrl-C (or
until phi has answered alice, with `until_reply`). The network keeps running afterwards, so
`phi sandbox say alice ...` can go on talking to a later run. With `until_reply`, phi stops
after the batch that held alice's opening post, whatever it decided.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxConfig, SandboxInfo
from phi.config import Settings
from phi.runtime.app import choose_brains, open_runtime
from phi.runtime.main import stop_on_signals
from phi.runtime.poller import TickReport

__all__ = ["DEFAULT_GREETING", "sandbox_run", "sandbox_settings"]

DEFAULT_GREETING = "@phi.test hi phi! i'm alice. what do you remember about me?"


def sandbox_settings(settings: Settings, info: SandboxInfo, **update: object) -> Settings:
    """`settings` for phi on the sandbox: its own memory file (the real account's stays
    apart) and the cast's operator as owner."""
    return settings.model_copy(
        update={
            "memory_url": settings.sandbox_memory_url(),
            "owner_handle": info.account("operator").handle,
            **update,
        }
    )


def _timing(report: TickReport) -> str:
    own = max(report.seconds - report.model_seconds, 0.0)
    return (
        f"tick {report.seconds:.2f} s: model {report.model_seconds:.2f} s, phi itself {own:.2f} s"
    )


async def sandbox_run(
    settings: Settings,
    *,
    emit: Callable[[str], None],
    greeting: str = DEFAULT_GREETING,
    until_reply: bool = False,
    poll_seconds: float = 2.0,
) -> None:
    """Run phi on the sandbox (see the module docstring)."""
    sandbox = Sandbox(SandboxConfig.from_settings(settings))
    emit("starting the local AT Protocol network (the first run installs it: a few minutes)")
    info = await sandbox.up()
    emit(f"network up: PDS {info.pds_url}, AppView {info.appview_url}")
    local = sandbox_settings(settings, info, poll_seconds=poll_seconds)
    brains = choose_brains(local)
    emit(brains.agent)
    if line := brains.memory_line():
        emit(line)
    stop = anyio.Event()
    phi_config = info.client_config("phi", nsid_prefix=local.nsid_prefix)
    async with (
        open_runtime(local, phi_config, emit=emit) as runtime,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(stop_on_signals, stop)
        me = runtime.client.me.handle
        emit(f"phi is @{me}, its owner @{local.owner_handle}, its memory {local.memory_url}")
        await runtime.seed()
        async with PhiClient(info.client_config("alice", nsid_prefix=local.nsid_prefix)) as alice:
            (opening,) = await alice.post(greeting)
        await sandbox.wait_for_indexing()
        emit(f"@alice.test posted: {greeting}")
        hinted = False
        while not stop.is_set():
            report = await runtime.tick()
            if report.admitted or report.jobs:
                emit(_timing(report))
            if until_reply and any(n.uri == opening.uri for n in report.admitted):
                answered = any(r.in_reply_to == opening.uri for r in report.replies)
                if not answered:
                    emit("phi chose not to reply to alice this time")
                break
            if report.replies and not until_reply and not hinted:
                hinted = True
                emit(
                    "talk to phi from another terminal: "
                    "phi sandbox say alice '@phi.test ...' — Ctrl-C stops phi"
                )
            with anyio.move_on_after(runtime.poll_seconds):
                await stop.wait()
        tg.cancel_scope.cancel()
    emit("phi stopped; the network keeps running (phi sandbox down stops it)")
