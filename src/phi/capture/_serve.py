"""The resident process itself (`python -m phi.capture --resident`): see `resident`."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TextIO

import anyio
from anyio import CancelScope
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from phi.capture.recall import prompt_context, session_context
from phi.capture.resident import MAX_REQUEST_BYTES, Resident, owned_privately, peer_uid
from phi.capture.spool import Spool, drain_into
from phi.errors import PhiError
from phi.private import private_dir, private_opener

if TYPE_CHECKING:
    from phi.memory import Memory

__all__ = ["serve"]

DRAIN_EVERY_S: Final = 5.0
"""How often the queue is looked at without a nudge (a nudge may be lost)."""
LOCK_WAIT_S: Final = 3.0
"""How long a new process waits for the lock: one that is stopping lets go of it soon."""
_BUDGETS: Final = (50, 20_000)
"""The smallest and largest context asked for, in tokens."""


@dataclass(kw_only=True)
class _Server:
    memory: Memory
    spool: Spool
    idle_s: float
    err: TextIO
    busy: int = 0
    last: float = field(default_factory=time.monotonic)
    wakeups: tuple[MemoryObjectSendStream[None], MemoryObjectReceiveStream[None]] = field(
        default_factory=lambda: anyio.create_memory_object_stream[None](1)
    )

    def wake(self) -> None:
        with contextlib.suppress(anyio.WouldBlock):  # a wake-up is pending already
            self.wakeups[0].send_nowait(None)

    async def handle(self, stream: SocketStream) -> None:
        async with stream:
            uid = peer_uid(stream.extra(SocketAttribute.raw_socket))
            if uid is not None and uid != os.getuid():
                return  # not this user's: no answer at all
            self.busy += 1
            try:
                line = await BufferedByteReceiveStream(stream).receive_until(
                    b"\n", MAX_REQUEST_BYTES
                )
                reply = await self.answer(json.loads(line))
                await stream.send(json.dumps(reply).encode() + b"\n")
            except (anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.BrokenResourceError):
                return  # the hook gave up (its time ran out) or sent no whole request
            except (ValueError, PhiError) as exc:
                # One bad request must not stop the process every hook relies on.
                print(f"phi capture resident: request refused: {exc}", file=self.err)
            finally:
                self.busy -= 1
                self.last = time.monotonic()

    async def answer(self, request: object) -> dict[str, object]:
        if not isinstance(request, dict):
            raise ValueError("a request is a JSON object")
        op = request.get("op")
        self.wake()
        if op == "drain":
            return {"ok": True}
        namespace, session = _text(request, "namespace"), request.get("session")
        budget = request.get("budget_tokens")
        if not isinstance(budget, int) or not _BUDGETS[0] <= budget <= _BUDGETS[1]:
            raise ValueError(f"budget_tokens {budget!r} is out of range {_BUDGETS}")
        session = session if isinstance(session, str) else None
        if op == "recall":
            text = await prompt_context(
                self.memory,
                _text(request, "prompt"),
                namespace=namespace,
                session=session,
                budget_tokens=budget,
            )
        elif op == "session_start":
            cwd = request.get("cwd")
            text = await session_context(
                self.memory,
                namespace=namespace,
                session=session,
                cwd=cwd if isinstance(cwd, str) else None,
                budget_tokens=budget,
            )
        else:
            raise ValueError(f"unknown op {op!r}")
        return {"context": text}

    async def drainer(self) -> None:
        while True:
            with anyio.move_on_after(DRAIN_EVERY_S):
                await self.wakeups[1].receive()
            await self.drain_once()

    async def drain_once(self) -> None:
        # wait_s=0: the lock is polled with a blocking sleep; another drainer (a hook run
        # with --wait) has it only briefly, and the next wake-up tries again.
        with self.spool.draining(wait_s=0) as mine:
            if not mine or not self.spool.pending():
                return
            self.busy += 1
            try:
                await drain_into(self.memory, self.spool, err=self.err)
            except PhiError as exc:
                print(f"phi capture: {self.spool.pending()} event(s) queued: {exc}", file=self.err)
            finally:
                self.busy -= 1
                self.last = time.monotonic()

    async def watch_idle(self, scope: CancelScope) -> None:
        while True:
            await anyio.sleep(min(1.0, max(self.idle_s / 4, 0.05)))
            idle = time.monotonic() - self.last
            # Events still queued (a store that stays locked) do not keep it up: the next
            # hook starts it again, and it drains first.
            if not self.busy and idle >= self.idle_s:
                scope.cancel()
                return


def _text(request: dict[str, object], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"request without {key!r}")
    return value


def _take_lock(fd: int) -> bool:
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def serve(resident: Resident, *, idle_s: float, err: TextIO, lock_fd: int | None = None) -> int:
    """Run the resident process until it has been idle for `idle_s`; 0 when another one
    holds the lock (it serves), 1 when the store cannot be opened (said on `err`).

    `lock_fd` is the lock already taken by the hook that started this process
    (`resident.start`); without it the lock is taken here."""
    from phi.capture._run import open_memory

    private_dir(resident.spool_dir)
    fd = (
        lock_fd
        if lock_fd is not None
        else private_opener(resident.lock_path, os.O_RDWR | os.O_CREAT)
    )
    try:
        if lock_fd is None and not _take_lock(fd):
            return 0
        path = resident.socket_path
        private_dir(path.parent)
        if not owned_privately(path.parent):
            print(
                f"phi capture resident: {path.parent} is not yours alone; not listening", file=err
            )
            return 1

        async def run() -> None:
            async with open_memory(resident.db) as memory:
                server = _Server(
                    memory=memory, spool=Spool(directory=resident.spool_dir), idle_s=idle_s, err=err
                )
                # A socket file there is stale (its process died: the lock is ours), and
                # anyio replaces it.
                listener = await anyio.create_unix_listener(path, mode=0o600)
                async with listener, anyio.create_task_group() as group:
                    group.start_soon(server.drainer)
                    group.start_soon(server.watch_idle, group.cancel_scope)
                    server.wake()  # what was queued while nobody was up
                    await listener.serve(server.handle, task_group=group)

        try:
            anyio.run(run)
        except PhiError as exc:
            print(f"phi capture resident: {exc}", file=err)
            return 1
        finally:
            path.unlink(missing_ok=True)
        return 0
    finally:
        os.close(fd)
