"""`phi sandbox run`: phi on the local network with the offline defaults, and a first
conversation that shows its memory at work.

Brings the network up (installing it on first use), logs phi in as `@phi.test` with its own
memory file, and plays alice's script: she opens with something about herself, phi handles
it, then she comes back in a new thread asking about what she said first, so the only way
phi knows is its memory. The stream shows what phi recalled for each batch (the rows, their
kind and score: `ActivityLog.show`) and what it did. The schedule is held until the script is
done, so alice is answered before any musing or summary refresh takes the model. Then, with
`until_reply`, phi stops; without, it goes on polling until Ctrl-C. Either way the run ends
by printing what phi now holds about alice and where to look closer. The network keeps
running afterwards, so `phi sandbox say alice ...` can go on talking to a later run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import anyio

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxConfig, SandboxInfo
from phi.config import Settings
from phi.errors import NamespaceNotFound
from phi.memory import Memory, user_namespace
from phi.runtime.app import choose_brains, open_runtime
from phi.runtime.main import stop_on_signals
from phi.runtime.poller import PhiRuntime, TickReport

__all__ = ["DEFAULT_FOLLOW_UP", "DEFAULT_GREETING", "sandbox_run", "sandbox_settings"]

DEFAULT_GREETING: Final = (
    "@phi.test hi phi! i'm alice. i keep a pet crow called pepper, she steals shiny spoons."
)
"""alice's opening: something about herself for phi to keep."""
DEFAULT_FOLLOW_UP: Final = "@phi.test hi again, it's alice! do you remember my crow's name?"
"""alice's second post, in a new thread: only phi's memory holds the answer."""
HELD_ROWS: Final = 8
"""How many of alice's rows the closing summary lists."""
_SHOWN_CHARS: Final = 90


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


def _clip(text: str) -> str:
    flat = " / ".join(line.strip() for line in text.splitlines() if line.strip())
    return flat if len(flat) <= _SHOWN_CHARS else flat[: _SHOWN_CHARS - 1] + "…"


@dataclass(frozen=True, kw_only=True)
class _Alice:
    """alice as the script needs her: her client, and the network to index her posts."""

    client: PhiClient
    sandbox: Sandbox
    emit: Callable[[str], None]

    async def says(self, text: str) -> str:
        """Post `text` (a new thread), wait until the AppView has indexed it; its URI."""
        (post,) = await self.client.post(text)
        await self.sandbox.wait_for_indexing()
        self.emit(f"@{self.client.me.handle} posted: {text}")
        return post.uri


async def _until_handled(
    runtime: PhiRuntime, uri: str, stop: anyio.Event, emit: Callable[[str], None]
) -> bool:
    """Tick until phi's batch handled the post `uri` (or it was dropped, or set aside after
    its last failed run); False when stopped first.

    A failed run (the model timed out, say) is not phi's choice: the post waits in the
    pending queue and a later tick runs it again, so the wait goes on."""
    while not stop.is_set():
        report = await runtime.tick()
        if report.admitted or report.jobs:
            emit(_timing(report))
        if any(n.uri == uri for n in report.set_aside):
            emit("phi's run failed again: alice's post is set aside (phi runs pending)")
            return True
        if any(n.uri == uri for n in report.pending):
            emit("phi's run failed: alice's post waits for another run")
        elif any(n.uri == uri for n in report.admitted):
            if not any(r.in_reply_to == uri for r in report.replies):
                emit("phi chose not to reply to alice this time")
            return True
        for dropped, why in report.dropped:
            if dropped.uri == uri:
                emit(f"phi did not see alice's post: {why}")
                return True
        with anyio.move_on_after(runtime.poll_seconds):
            await stop.wait()
    return False


async def _serve(runtime: PhiRuntime, stop: anyio.Event, emit: Callable[[str], None]) -> None:
    """Poll until Ctrl-C, with the timing of every tick that did something."""
    while not stop.is_set():
        report = await runtime.tick()
        if report.admitted or report.jobs:
            emit(_timing(report))
        with anyio.move_on_after(runtime.poll_seconds):
            await stop.wait()


async def _show_memory(
    memory: Memory, info: SandboxInfo, settings: Settings, emit: Callable[[str], None]
) -> None:
    """What phi now holds about alice, and the commands and page to look closer."""
    alice = info.account("alice")
    namespace = user_namespace(alice.did)
    try:
        rows = await memory.recent(namespace=namespace, limit=HELD_ROWS)
    except NamespaceNotFound:
        rows = []
    if not rows:
        emit(f"phi holds nothing about @{alice.handle} yet")
        return
    emit(f"what phi now holds about @{alice.handle} ({namespace}), newest first:")
    for row in rows:
        emit(f"  {row.row_id}  {row.kind:<16} {_clip(row.content)}")
    emit(f"look closer: phi memory show {rows[0].row_id} --sandbox")
    emit(f'             phi memory search "crow" -n {namespace} --sandbox')
    emit(
        f"             phi web --sandbox, then http://127.0.0.1:{settings.web_port}/memory "
        f"(@{alice.handle} is a node there)"
    )


def _script(greeting: str, follow_up: str | None) -> Sequence[str]:
    return [greeting, follow_up] if follow_up else [greeting]


async def sandbox_run(
    settings: Settings,
    *,
    emit: Callable[[str], None],
    greeting: str = DEFAULT_GREETING,
    follow_up: str | None = DEFAULT_FOLLOW_UP,
    until_reply: bool = False,
    poll_seconds: float = 2.0,
) -> None:
    """Run phi on the sandbox (see the module docstring).

    Args:
        settings: The settings to derive phi's sandbox settings from.
        emit: Receives every line of the stream.
        greeting: alice's opening post.
        follow_up: alice's second post, which should refer back to her first; `None` or
            empty: she says only the greeting.
        until_reply: Stop once phi has handled alice's last post of the script.
        poll_seconds: Seconds between notification polls.
    """
    sandbox = Sandbox(SandboxConfig.from_settings(settings))
    info = await sandbox.up(say=emit)
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
        PhiClient(info.client_config("alice", nsid_prefix=local.nsid_prefix)) as alice_client,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(stop_on_signals, stop, emit)
        me = runtime.client.me.handle
        emit(f"phi is @{me}, its owner @{local.owner_handle}, its memory {local.memory_url}")
        await runtime.seed()
        alice = _Alice(client=alice_client, sandbox=sandbox, emit=emit)
        # alice first: a musing or summary refresh due at start would hold the (single,
        # slow) local model for minutes before her post is even read.
        runtime.schedule.hold()
        for text in _script(greeting, follow_up):
            if stop.is_set() or not await _until_handled(
                runtime, await alice.says(text), stop, emit
            ):
                break
        runtime.schedule.release()
        if not until_reply and not stop.is_set():
            emit(
                "talk to phi from another terminal: "
                "phi sandbox say alice '@phi.test ...' — Ctrl-C stops phi"
            )
            await _serve(runtime, stop, emit)
        await _show_memory(runtime.memory, info, local, emit)
        tg.cancel_scope.cancel()
    emit("phi stopped; the network keeps running (phi sandbox down stops it)")
