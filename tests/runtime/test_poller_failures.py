"""The poller when a run fails (issue 23, finding 7): a provider's 429 or 529, a request that
hangs past `PHI_MODEL_TIMEOUT`, a dropped connection, an error that is not the model's.

phi runs as `phi run` assembles it (`open_runtime` from settings: `PHI_MODEL=openai-chat:…`,
its memory file and run journal) on the session's local network, against an OpenAI chat
completions endpoint on 127.0.0.1 that each test scripts request by request. What a failed run
left unanswered is answered by a later tick, what it already did is not done twice, and a
batch that keeps failing is set aside where the operator sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from pydantic_ai import models
from tests.agent._brain import mentions
from typer.testing import CliRunner

from phi.atproto import PhiClient, Thread
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.cli import app as cli_app
from phi.config import Settings
from phi.memory.model import utc_now
from phi.runtime.app import open_runtime
from phi.runtime.journal import RunJournal
from phi.runtime.pending import read_pending
from phi.runtime.poller import PhiRuntime
from phi.web import create_app

pytestmark = pytest.mark.anyio


# -- an OpenAI chat completions endpoint on 127.0.0.1, scripted request by request ----------


@dataclass(frozen=True)
class Status:
    """Answer with this HTTP error (429 rate limited, 529 overloaded...)."""

    code: int


@dataclass(frozen=True)
class Hang:
    """Answer nothing until the client gives up (or `seconds` pass)."""

    seconds: float = 30.0


@dataclass(frozen=True)
class Drop:
    """Close the connection without an answer."""


@dataclass(frozen=True)
class Calls:
    """Answer with these tool calls: (tool, arguments)."""

    calls: tuple[tuple[str, dict[str, str]], ...]


@dataclass(frozen=True)
class Says:
    """Answer with text: the run ends."""

    text: str = "done"


Answer = Status | Hang | Drop | Calls | Says


@dataclass(frozen=True)
class Turn:
    """One request to the endpoint."""

    system: str
    """The system prompt it carried."""
    step: int
    """0 for a run's first request, then one more per round of tool results."""

    def shown(self) -> list[tuple[str, str]]:
        """(handle, uri) of each post in [NEW NOTIFICATIONS]."""
        return mentions(self.system)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def _completion(answer: Calls | Says) -> dict[str, Any]:
    if isinstance(answer, Says):
        message: dict[str, Any] = {"role": "assistant", "content": answer.text}
        finish = "stop"
    else:
        calls = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": tool, "arguments": json.dumps(args)},
            }
            for i, (tool, args) in enumerate(answer.calls)
        ]
        message = {"role": "assistant", "content": None, "tool_calls": calls}
        finish = "tool_calls"
    return {
        "id": "chatcmpl-double",
        "object": "chat.completion",
        "created": 0,
        "model": "double",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _http(code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> bytes:
    payload = json.dumps(body).encode()
    lines = [f"HTTP/1.1 {code} Whatever", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines.append(f"Content-Length: {len(payload)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


@dataclass
class ChatDouble:
    """`POST /v1/chat/completions` on 127.0.0.1; `script` decides each answer."""

    script: Callable[[Turn], Answer] = lambda turn: Says()
    turns: list[Turn] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _handlers: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            while await self._one(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection
        finally:
            self._handlers.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; whether the connection stays open."""
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        request_line, *header_lines = head.split("\r\n")
        headers = {
            k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)
        }
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        if request_line.split()[:2] != ["POST", "/v1/chat/completions"]:
            writer.write(_http(404, {"error": {"message": f"no route: {request_line}"}}))
            await writer.drain()
            return True
        messages = json.loads(body)["messages"]
        turn = Turn(
            system="\n\n".join(
                _text(m.get("content")) for m in messages if m["role"] in ("system", "developer")
            ),
            step=sum(1 for m in messages if m["role"] == "assistant"),
        )
        self.turns.append(turn)
        answer = self.script(turn)
        if isinstance(answer, Drop):
            return False
        if isinstance(answer, Hang):
            with anyio.move_on_after(answer.seconds):
                await reader.read()  # returns when the client hangs up
            return False
        if isinstance(answer, Status):
            kind = "rate_limit_error" if answer.code == 429 else "overloaded_error"
            error = {"error": {"message": f"double says {answer.code}", "type": kind}}
            # A short `retry-after-ms` keeps the SDK's own retries (it makes three tries) fast.
            writer.write(_http(answer.code, error, {"retry-after-ms": "20"}))
        else:
            writer.write(_http(200, _completion(answer)))
        await writer.drain()
        return True


# -- scripts ----------------------------------------------------------------------------------


def reply_to_everyone(turn: Turn) -> Answer:
    if turn.step > 0:
        return Says()
    return Calls(tuple(("reply_to", {"uri": uri, "text": f"hi @{h}"}) for h, uri in turn.shown()))


def failing(answer: Answer) -> Callable[[Turn], Answer]:
    return lambda turn: answer


# -- fixtures ---------------------------------------------------------------------------------


@dataclass
class Clock:
    """The runtime's clock, moved by the test (the waits between retries are minutes)."""

    now: datetime = field(default_factory=utc_now)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
async def quiet(phi: PhiClient, sandbox: Sandbox) -> None:
    """Start from no unread notifications (the network is shared by the session)."""
    await sandbox.wait_for_indexing()
    await phi.update_seen()


@pytest.fixture
async def chat() -> AsyncIterator[ChatDouble]:
    double = ChatDouble()
    await double.start()
    yield double
    await double.stop()


@pytest.fixture
def settings(phi_home: Path, chat: ChatDouble, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """phi's settings as `phi run` reads them, its model the endpoint above."""
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)  # 127.0.0.1 only
    monkeypatch.setenv("OPENAI_BASE_URL", chat.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-double")
    return Settings(
        _env_file=None,
        home=phi_home,
        model="openai-chat:double",
        memory_model="test",  # memory's passes stay off the endpoint the test scripts
        musing_hours=[],
        reflection_hour=None,
        model_timeout=4,
        retry_base_seconds=30,
        retry_max_seconds=50,
        retry_attempts=3,
    )


Running = Callable[..., Any]


@pytest.fixture
def running(settings: Settings, cast: SandboxInfo) -> Callable[..., Any]:
    @asynccontextmanager
    async def open_phi(
        clock: Callable[[], datetime] = utc_now, emit: Callable[[str], None] | None = None
    ) -> AsyncIterator[PhiRuntime]:
        async with open_runtime(settings, cast.client_config("phi"), emit=emit) as runtime:
            runtime.clock = clock
            yield runtime

    return open_phi


def phi_replies(thread: Thread, to: str) -> list[str]:
    """The texts of phi's replies to the post `to`."""
    return [
        p.text
        for p in thread.posts
        if p.author_handle == "phi.test" and p.reply_parent and p.reply_parent.uri == to
    ]


async def unread_count(phi: PhiClient) -> int:
    page = await phi.list_notifications(limit=100)
    return sum(1 for n in page.notifications if not n.is_read)


def cli(*args: str) -> Any:
    """`phi ARGS` in a worker thread (the CLI runs its own event loop)."""
    return anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli_app, list(args)))


# -- tests ------------------------------------------------------------------------------------

FAILURES = [
    pytest.param(Status(429), "ModelRateLimitError: status_code: 429", id="429"),
    pytest.param(Status(529), "ModelOverloadedError: status_code: 529", id="529"),
    pytest.param(Hang(), "ModelRequestTimeout: Request to model 'double' timed out", id="hang"),
    pytest.param(Drop(), "ModelConnectionError: Connection error", id="dropped"),
]


@pytest.mark.usefixtures("quiet")
@pytest.mark.parametrize(("failure", "error"), FAILURES)
async def test_a_failed_model_call_leaves_the_batch_for_a_later_tick(
    failure: Answer,
    error: str,
    chat: ChatDouble,
    running: Running,
    settings: Settings,
    phi: PhiClient,
    alice: PhiClient,
    sandbox: Sandbox,
) -> None:
    (asked,) = await alice.post("@phi.test is the heron back on the pond?")
    await sandbox.wait_for_indexing()
    clock = Clock()
    chat.script = failing(failure)
    async with running(clock) as phi_runtime:
        failed = await phi_runtime.tick()
        tried = len(chat.turns)
        clock.advance(29)  # the wait after a first failure is 30 s
        early = await phi_runtime.tick()
        after_early = len(chat.turns)
        chat.script = reply_to_everyone
        clock.advance(1)
        retried = await phi_runtime.tick()
    await sandbox.wait_for_indexing()
    assert phi_replies(await phi.get_thread(asked.uri), asked.uri) == ["hi @alice.test"]
    assert [n.uri for n in failed.pending] == [asked.uri]
    assert failed.output is not None and failed.output.startswith("failed: ")
    assert (early.admitted, after_early) == ([], tried)  # not before its wait is over
    assert [n.uri for n in retried.admitted] == [asked.uri]
    assert (retried.pending, retried.set_aside) == ([], [])
    assert await unread_count(phi) == 0
    journal = RunJournal.at_home(settings.home)
    ok, failed_run = await journal.recent()
    assert (ok.outcome, failed_run.outcome) == ("ok", "failed")
    assert failed_run.output.startswith(error)


@pytest.mark.usefixtures("quiet")
async def test_what_a_failed_run_did_is_not_done_again(
    chat: ChatDouble,
    running: Running,
    phi: PhiClient,
    alice: PhiClient,
    bob: PhiClient,
    sandbox: Sandbox,
) -> None:
    (answered,) = await alice.post("@phi.test do kingfishers nest in banks?")
    (liked,) = await bob.post("@phi.test just saw one, blue as anything")
    (waiting,) = await alice.post("@phi.test and what do they eat?")
    await sandbox.wait_for_indexing()

    def reply_like_then_overloaded(turn: Turn) -> Answer:
        if turn.step == 0:
            return Calls(
                (
                    ("reply_to", {"uri": answered.uri, "text": "they dig tunnels in banks"}),
                    ("like_post", {"uri": liked.uri}),
                )
            )
        return Status(529)

    def answer_and_like_everything(turn: Turn) -> Answer:
        if turn.step > 0:
            return Says()
        shown = [uri for _, uri in turn.shown()]
        return Calls(
            tuple(("reply_to", {"uri": u, "text": "small fish, mostly"}) for u in shown)
            + tuple(("like_post", {"uri": u}) for u in shown)
        )

    clock = Clock()
    chat.script = reply_like_then_overloaded
    async with running(clock) as phi_runtime:
        failed = await phi_runtime.tick()
        chat.script = answer_and_like_everything
        clock.advance(30)
        retried = await phi_runtime.tick()
    await sandbox.wait_for_indexing()
    assert phi_replies(await phi.get_thread(answered.uri), answered.uri) == [
        "they dig tunnels in banks"
    ]
    assert phi_replies(await phi.get_thread(waiting.uri), waiting.uri) == ["small fish, mostly"]
    bob_thread = await phi.get_thread(liked.uri)
    assert phi_replies(bob_thread, liked.uri) == []
    (bob_post,) = [p for p in bob_thread.posts if p.uri == liked.uri]
    assert bob_post.like_count == 1
    assert [n.uri for n in failed.pending] == [waiting.uri]
    assert [n.uri for n in retried.admitted] == [waiting.uri]
    assert [uri for _, uri in chat.turns[-2].shown()] == [waiting.uri]


@pytest.mark.usefixtures("quiet")
async def test_a_batch_that_keeps_failing_is_set_aside_and_listed(
    chat: ChatDouble,
    running: Running,
    settings: Settings,
    alice: PhiClient,
    sandbox: Sandbox,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (asked,) = await alice.post("@phi.test hello? anyone?")
    await sandbox.wait_for_indexing()
    clock = Clock()
    chat.script = failing(Status(429))
    waits = []
    async with running(clock) as phi_runtime:
        for wait in (30, 50, 0):  # 30 s, then 60 s capped at PHI_RETRY_MAX_SECONDS=50
            with caplog.at_level(logging.WARNING, logger="phi.runtime"):
                report = await phi_runtime.tick()
            (queue,) = await read_pending(phi_runtime.memory)
            waits += [(e.retry_at - clock.now).total_seconds() for e in queue.entries if e.retry_at]
            clock.advance(wait)
        tried = len(chat.turns)
        clock.advance(3600)
        later = await phi_runtime.tick()
        after_later = len(chat.turns)
        web = create_app(memory=phi_runtime.memory)
        transport = httpx.ASGITransport(app=web)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            shown = (await http.get("/api/pending")).json()
        health = await phi_runtime.health()
    listed = await cli("runs", "pending", "--json")
    printed = await cli("runs", "pending")

    assert waits == [30.0, 50.0]
    assert [n.uri for n in report.set_aside] == [asked.uri]
    assert (later.admitted, after_later) == ([], tried)  # never run again by itself
    assert f"set aside the mention from @alice.test ({asked.uri}) after 3 failed runs" in (
        caplog.text
    )
    (entry,) = json.loads(listed.output)
    assert (entry["status"], entry["uri"], entry["failures"], entry["retry_at"]) == (
        "set-aside",
        asked.uri,
        3,
        None,
    )
    assert entry["error"].startswith("ModelRateLimitError: status_code: 429")
    assert entry["account"] == phi_runtime.client.me.did
    assert shown == [entry]
    assert printed.exit_code == 0
    assert printed.output.startswith("set-aside  mention from @alice.test  3 failed runs")
    assert health["pending"] == {"waiting": 0, "set_aside": 1}


@pytest.mark.usefixtures("quiet")
async def test_a_run_failing_mid_batch_with_another_error_keeps_the_rest(
    chat: ChatDouble,
    running: Running,
    phi: PhiClient,
    alice: PhiClient,
    bob: PhiClient,
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (first,) = await alice.post("@phi.test are herons shy?")
    (second,) = await bob.post("@phi.test are egrets shy?")
    await sandbox.wait_for_indexing()

    def one_reply_a_step(turn: Turn) -> Answer:
        shown = [uri for _, uri in turn.shown()]
        order = [uri for uri in (first.uri, second.uri) if uri in shown]
        if turn.step < len(order):
            return Calls((("reply_to", {"uri": order[turn.step], "text": "quite shy"}),))
        return Says()

    clock = Clock()
    chat.script = one_reply_a_step
    async with running(clock) as phi_runtime:
        replied = phi_runtime.client.reply
        broken = [second.uri]

        async def reset_once(text: str, *, to: Any, langs: Any = None) -> Any:
            if to in broken:
                broken.remove(to)  # not one of phi's errors: nothing translated it
                raise ConnectionResetError("connection reset by peer")
            return await replied(text, to=to, langs=langs)

        monkeypatch.setattr(phi_runtime.client, "reply", reset_once)
        with caplog.at_level(logging.ERROR, logger="phi.runtime"):
            failed = await phi_runtime.tick()
        clock.advance(30)
        retried = await phi_runtime.tick()
    await sandbox.wait_for_indexing()
    assert phi_replies(await phi.get_thread(first.uri), first.uri) == ["quite shy"]
    assert phi_replies(await phi.get_thread(second.uri), second.uri) == ["quite shy"]
    assert [n.uri for n in failed.pending] == [second.uri]
    assert failed.output == "failed: connection reset by peer"
    assert "Traceback" in caplog.text and "ConnectionResetError" in caplog.text
    assert [n.uri for n in retried.admitted] == [second.uri]


@pytest.mark.usefixtures("quiet")
async def test_serve_outlives_a_tick_that_raises(
    chat: ChatDouble,
    running: Running,
    settings: Settings,
    phi: PhiClient,
    alice: PhiClient,
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (asked,) = await alice.post("@phi.test are you still running?")
    await sandbox.wait_for_indexing()
    chat.script = reply_to_everyone
    replied = anyio.Event()

    def watch(line: str) -> None:
        if line.startswith("replied to @alice.test"):
            replied.set()

    async with running(emit=watch) as phi_runtime:
        phi_runtime.poll_seconds = 0.1
        listed = phi_runtime.client.list_notifications
        calls = []

        async def malformed_once(**kwargs: Any) -> Any:
            calls.append(kwargs)
            if len(calls) == 1:
                raise ValueError("unexpected shape in listNotifications")  # not a PhiError
            return await listed(**kwargs)

        monkeypatch.setattr(phi_runtime.client, "list_notifications", malformed_once)
        stop = anyio.Event()
        with caplog.at_level(logging.ERROR, logger="phi.runtime"):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(phi_runtime.serve, stop)
                with anyio.fail_after(60):
                    await replied.wait()
                stop.set()
        health = await phi_runtime.health()
    await sandbox.wait_for_indexing()
    assert phi_replies(await phi.get_thread(asked.uri), asked.uri) == ["hi @alice.test"]
    assert health["counters"]["tick_errors"] == 1
    assert "tick failed" in caplog.text and "ValueError: unexpected shape" in caplog.text
