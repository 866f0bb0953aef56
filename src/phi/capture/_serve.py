"""The resident process itself (`python -m phi.capture --resident`): see `resident`.

It takes two kinds of request on its socket: a JSON line (`{"op": "drain" | "recall" |
"session_start", ...}`, from the full path's `ask` and `nudge`), and a hook's raw event
(`hook1 ...`, from the fast path, `phi.capture._fast`), which it checks, redacts and queues
(fsynced) before saying `queued`, then answers as the hook would have printed.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TextIO

import anyio
import anyio.to_thread
from anyio import CancelScope
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from phi.capture._fast import PROTOCOL
from phi.capture._intake import (
    done_frame,
    hung_up,
    parse_head,
    parse_header,
    queued_frame,
    take,
)
from phi.capture._run import Refused, answer_wait_s, context_answer, recall_request
from phi.capture.recall import prompt_context, session_context
from phi.capture.remote_sink import configured_target, drain_remote
from phi.capture.resident import MAX_REQUEST_BYTES, Resident, owned_privately, peer_uid
from phi.capture.spool import Spool, drain_into
from phi.errors import PhiError
from phi.private import private_dir, private_opener
from phi.redact import redact

if TYPE_CHECKING:
    from phi.memory import Memory

__all__ = ["serve"]

DRAIN_EVERY_S: Final = 5.0
"""How often the queue is looked at without a nudge (a nudge may be lost)."""
READ_WAIT_S: Final = 30.0
"""How long a request may take to arrive whole: a client that sends nothing must not keep
the process busy (and so up) for good."""
INLINE_BYTES: Final = 1 << 16
"""Events up to this size are taken in the event loop; larger ones in a worker thread."""
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
    db: str | None = None
    """The store served (`None`: the configured one, or with `PHI_CAPTURE_URL` the team's
    server, which the queue then goes to)."""
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
            raw = stream.extra(SocketAttribute.raw_socket)
            uid = peer_uid(raw)
            if uid is not None and uid != os.getuid():
                return  # not this user's: no answer at all
            self.busy += 1
            try:
                buffered = BufferedByteReceiveStream(stream)
                with anyio.fail_after(READ_WAIT_S):
                    line = await buffered.receive_until(b"\n", MAX_REQUEST_BYTES)
                if line.startswith(PROTOCOL + b" "):
                    await self.take_hook(stream, buffered, line)
                    return
                reply = await self.answer(json.loads(line))
                await stream.send(json.dumps(reply).encode() + b"\n")
            except (
                anyio.IncompleteRead,
                anyio.DelimiterNotFound,
                anyio.BrokenResourceError,
                TimeoutError,
            ):
                return  # the hook gave up (its time ran out) or sent no whole request
            except (ValueError, PhiError) as exc:
                # One bad request must not stop the process every hook relies on.
                print(f"phi capture resident: request refused: {exc}", file=self.err)
            finally:
                self.busy -= 1
                self.last = time.monotonic()

    async def take_hook(
        self, stream: SocketStream, buffered: BufferedByteReceiveStream, line: bytes
    ) -> None:
        """A hook's event from the fast path: queued (durable) before `queued` is sent, then
        the hook's exit code and output. A request that is not whole, or whose hook hung up
        before it was queued, is dropped unanswered: that hook queues the event itself."""
        header_size, event_size = parse_head(line)
        with anyio.fail_after(READ_WAIT_S):
            request = parse_header(await buffered.receive_exactly(header_size))
            data = await buffered.receive_exactly(event_size)
        if hung_up(stream.extra(SocketAttribute.raw_socket)):
            return
        taking = functools.partial(take, request, data, spool_dir=self.spool.directory, db=self.db)
        try:
            # A usual event is taken in a millisecond or two, the fsync included: here, since
            # a hand-off to a thread and back costs more on a busy machine. A large one (a
            # whole file written) must not hold up other hooks while it is checked.
            small = len(data) <= INLINE_BYTES
            event, entry, options = taking() if small else await anyio.to_thread.run_sync(taking)
        except Refused as exc:
            await stream.send(done_frame(1, err=f"phi capture: {exc}\n"))
            return
        except Exception as exc:  # a bug in a host's reader, say: not this process's end
            # Unanswered: the hook queues the event itself, and shows what went wrong.
            said = redact(repr(exc))  # it may quote the event, secrets and all
            print(f"phi capture resident: could not take an event: {said}", file=self.err)
            return
        question = recall_request(event, entry, options)
        if question is None:  # nothing to answer: both frames at once, one wake-up for the hook
            await stream.send(queued_frame(0.0) + done_frame(0))
            self.wake()
            return
        await stream.send(queued_frame(answer_wait_s(event)))
        self.wake()
        context: object = None
        with anyio.move_on_after(answer_wait_s(event)):
            try:
                context = (await self.answer(question)).get("context")
            except Exception as exc:  # the event is queued: only the answer is lost
                print(f"phi capture resident: no answer: {redact(repr(exc))}", file=self.err)
        answer = context_answer(options.host, event, context)
        await stream.send(done_frame(0, out=f"{answer}\n" if answer else ""))

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
                # Team capture (`PHI_CAPTURE_URL`): the server stores the queue, as a
                # drainer does (`_run.drain`); read each time, as a drainer would.
                target = configured_target() if self.db is None else None
                if target is not None:
                    await drain_remote(self.spool, target, err=self.err)
                else:
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
                    memory=memory,
                    spool=Spool(directory=resident.spool_dir),
                    idle_s=idle_s,
                    err=err,
                    db=resident.db,
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
