"""The hook's recall paths in this process, where a mutation test can credit them: what is
asked of the resident process for each event, how long it is waited for, what the host
reads on stdout in each host's format, and what `--wait` answers from the store itself.

`test_recall.py` and the resident's tests show the same answers end to end (a hook process,
a resident process); here every step of `phi.capture._run` is pinned to its exact value.
The resident process is a fake one on a real unix socket (it records what it was asked and
answers what the test says), and `resident.start` is replaced so that no process is ever
started; the store is a real SQLite file searched with the real MiniLM (the session's).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from phi.capture import _run, resident
from phi.capture._check import CheckedEvent
from phi.capture._run import (
    HookOptions,
    Refused,
    answer_here,
    answer_wait_s,
    context_answer,
    drain,
    open_memory,
    recall_request,
    run_hook,
    take_event,
)
from phi.capture.hosts import CLAUDE_CODE, COPILOT_CLI, GEMINI_CLI, Host
from phi.capture.project import PROJECT_ENV, project_namespace
from phi.capture.recall import hook_output, prompt_context, session_context
from phi.capture.resident import Resident
from phi.capture.spool import Spool, SpoolEntry, drain_into
from phi.config import Settings
from phi.memory import Memory, MiniLMEmbedder
from tests.capture._sockets import short_tmpdir

OLD, MINE, LATER = "aaaa1111-s0", "bbbb2222-s1", "cccc3333-s2"
"""Sessions: an earlier one, the one asking, and one after it (ids cut to 8 in a context)."""
PIN = "Pin httpx to 0.27.2: 0.28 dropped the proxies argument PaymentsClient passes"
OWN = "Bump httpx in the web client to 0.28 as well"
"""Said in the asking session: the host has it in its context already, so never told."""
ELSEWHERE = "httpx 0.27.2 is pinned in the billing service too"
"""Said in another project: never told in this one."""
QUESTION = "why is httpx pinned to 0.27.2?"
BUDGET = 400


def event(name: str, session: str = MINE, **fields: object) -> str:
    return json.dumps({"hook_event_name": name, "session_id": session, **fields})


def hook(stdin: str | bytes, options: HookOptions) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    data = stdin.encode() if isinstance(stdin, str) else stdin
    code = run_hook(io.BytesIO(data), options, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@dataclass
class FakeResident:
    """A resident process on its real socket: records each JSON request line and answers
    `reply` to it."""

    path: Path
    reply: object
    requests: list[object] = field(default_factory=list)
    _got: threading.Condition = field(default_factory=threading.Condition)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(os.fspath(self.path))
        self._listener.listen()
        self._listener.settimeout(0.05)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(10)
                line = conn.makefile("rb").readline()
                with self._got:
                    self.requests.append(json.loads(line))
                    self._got.notify_all()
                with contextlib.suppress(OSError):  # a nudge does not wait for the answer
                    conn.sendall(json.dumps(self.reply).encode() + b"\n")

    def asked(self, count: int = 1) -> list[object]:
        """The requests, once `count` came in (a nudge returns before its request is read)."""
        with self._got:
            assert self._got.wait_for(lambda: len(self.requests) >= count, timeout=10)
            return list(self.requests)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._listener.close()


@dataclass
class Asked:
    """What `_recall_hook` passed to `ask`, each call."""

    calls: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def short(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private folder of `/tmp` (so the socket path fits `sun_path` and stays in the
    capture folder), also `$TMPDIR`; no project named by the environment."""
    with short_tmpdir(monkeypatch, prefix="phr") as folder:
        yield folder


@pytest.fixture
def spool_dir(short: Path) -> Path:
    folder = short / "capture"
    folder.mkdir(mode=0o700)
    return folder


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture(scope="session")
def warm(minilm: MiniLMEmbedder, tmp_path_factory: pytest.TempPathFactory) -> MiniLMEmbedder:
    """MiniLM loaded, and a store written and searched once, before the first test that
    embeds: those one-off costs (seconds) are that test's setup, not its run."""
    folder = tmp_path_factory.mktemp("warm")
    spool = Spool(directory=folder / "capture")
    spool.append(SpoolEntry(namespace="dev", payload=event("UserPromptSubmit", OLD, prompt=PIN)))

    async def go() -> None:
        async with Memory.open(folder / "memory.db", embedder=minilm) as memory:
            with spool.draining(wait_s=0):
                await drain_into(memory, spool, err=io.StringIO())
            await prompt_context(memory, QUESTION, namespace="dev", session=MINE, budget_tokens=1)

    anyio.run(go)
    return minilm


@pytest.fixture(autouse=True)
def embedder(monkeypatch: pytest.MonkeyPatch, minilm: MiniLMEmbedder) -> MiniLMEmbedder:
    """The configured embedder is the session's MiniLM: loaded once, not per store opened."""
    monkeypatch.setattr(Settings, "make_embedder", lambda self: minilm)
    return minilm


@pytest.fixture(autouse=True)
def starts(monkeypatch: pytest.MonkeyPatch) -> list[Resident]:
    """The residents a hook would have started; none is."""
    started: list[Resident] = []

    def start(found: Resident) -> bool:
        started.append(found)
        return False

    monkeypatch.setattr(resident, "start", start)
    return started


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Asked:
    """`ask` as `_recall_hook` calls it, recorded, then asked for real."""
    record = Asked()
    real = resident.ask

    def ask(
        found: Resident, request: dict[str, object], *, timeout_s: float, wait_start: bool = False
    ) -> dict[str, object] | None:
        record.calls.append(
            {
                "resident": found,
                "request": request,
                "timeout_s": timeout_s,
                "wait_start": wait_start,
            }
        )
        return real(found, request, timeout_s=timeout_s, wait_start=wait_start)

    monkeypatch.setattr(_run, "ask", ask)
    return record


@pytest.fixture
def serve(spool_dir: Path, db: Path) -> Iterator[Callable[[object], FakeResident]]:
    """`serve(reply)`: a fake resident for the spool and store of the tests' options."""
    fakes: list[FakeResident] = []

    def start(reply: object) -> FakeResident:
        path = Resident(spool_dir=spool_dir, db=str(db)).socket_path
        assert path.parent == spool_dir  # short enough: no folder under $TMPDIR involved
        fakes.append(FakeResident(path=path, reply=reply))
        return fakes[-1]

    yield start
    for fake in fakes:
        fake.close()


def options_for(spool_dir: Path, db: Path, **changes: Any) -> HookOptions:
    base = HookOptions(
        spool_dir=spool_dir, db=str(db), namespace="dev", recall=True, budget_tokens=BUDGET
    )
    return replace(base, **changes)


def queued(spool_dir: Path) -> list[dict[str, str]]:
    """The spool's lines as written (namespace, payload, event id)."""
    lines = (spool_dir / "spool.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def remember(spool_dir: Path) -> None:
    """Queue what earlier sessions said: the next `--wait` hook stores it first."""
    spool = Spool(directory=spool_dir)
    said = [("dev", OLD, PIN), ("dev", MINE, OWN), ("other", "dddd4444-s9", ELSEWHERE)]
    for namespace, session, text in said:
        payload = event("UserPromptSubmit", session, prompt=text, cwd="/home/dev/api")
        spool.append(SpoolEntry(namespace=namespace, payload=payload))


def recalled(db: Path, minilm: MiniLMEmbedder, ask: Callable[[Memory], Any]) -> Any:
    async def go() -> Any:
        async with Memory.open(db, embedder=minilm) as memory:
            return await ask(memory)

    return anyio.run(go)


def contents(db: Path, minilm: MiniLMEmbedder, namespace: str = "dev") -> list[str]:
    async def read(memory: Memory) -> list[str]:
        return [r.content async for r in memory.export(namespace=namespace)]

    return list(recalled(db, minilm, read))


# What is asked for an event (`recall_request`).


def entry_for(payload: str, namespace: str = "code:acme:api") -> SpoolEntry:
    return SpoolEntry(namespace=namespace, payload=payload)


def test_a_prompt_asks_for_its_recall_with_every_field() -> None:
    payload = event("UserPromptSubmit", prompt="  why httpx?  ", cwd="/w/api")
    options = HookOptions(spool_dir=Path("/nowhere"), budget_tokens=321)
    got = recall_request(
        CheckedEvent(name="UserPromptSubmit", cwd="/w/api"), entry_for(payload), options
    )
    assert got == {
        "op": "recall",
        "namespace": "code:acme:api",
        "session": MINE,
        "prompt": "  why httpx?  ",
        "cwd": "/w/api",
        "budget_tokens": 321,
    }
    assert list(got) == ["op", "namespace", "session", "prompt", "cwd", "budget_tokens"]


@pytest.mark.parametrize(
    ("fields", "prompt"),
    [({}, ""), ({"prompt": 7}, ""), ({"prompt": "resume"}, "resume"), ({"prompt": " "}, " ")],
    ids=["no-prompt", "prompt-not-text", "prompt", "blank-prompt"],
)
def test_a_session_start_asks_for_its_preload(fields: dict[str, object], prompt: str) -> None:
    payload = event("SessionStart", session=OLD, **fields)
    options = HookOptions(spool_dir=Path("/nowhere"))
    got = recall_request(CheckedEvent(name="SessionStart", cwd=None), entry_for(payload), options)
    assert got == {
        "op": "session_start",
        "namespace": "code:acme:api",
        "session": OLD,
        "prompt": prompt,
        "cwd": None,
        "budget_tokens": 1500,
    }


@pytest.mark.parametrize(
    "fields",
    [{}, {"prompt": ""}, {"prompt": " \n\t"}, {"prompt": 7}, {"prompt": None}, {"prompt": ["a"]}],
    ids=["none", "empty", "blank", "number", "null", "list"],
)
def test_a_prompt_without_text_asks_nothing(fields: dict[str, Any]) -> None:
    payload = event("UserPromptSubmit", **fields)
    options = HookOptions(spool_dir=Path("/nowhere"))
    assert (
        recall_request(CheckedEvent(name="UserPromptSubmit", cwd="/w"), entry_for(payload), options)
        is None
    )


@pytest.mark.parametrize(
    "name", ["Stop", "PreToolUse", "PostToolUse", "SessionEnd", "Notification", "PreCompact"]
)
def test_other_events_ask_nothing(name: str) -> None:
    payload = event(name, prompt="why httpx?")
    options = HookOptions(spool_dir=Path("/nowhere"))
    assert recall_request(CheckedEvent(name=name, cwd="/w"), entry_for(payload), options) is None


def test_a_prompt_is_waited_for_a_second_and_a_session_start_fifteen() -> None:
    assert answer_wait_s(CheckedEvent(name="UserPromptSubmit", cwd=None)) == 1.0
    assert answer_wait_s(CheckedEvent(name="SessionStart", cwd=None)) == 15.0
    assert answer_wait_s(CheckedEvent(name="Stop", cwd=None)) == 15.0


# What the host reads (`context_answer`).

TEXT = "phi remembers: pin httpx — 0.27.2"


@pytest.mark.parametrize(
    ("host", "name", "printed"),
    [
        (
            CLAUDE_CODE,
            "UserPromptSubmit",
            '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", '
            '"additionalContext": "phi remembers: pin httpx \\u2014 0.27.2"}}',
        ),
        (
            CLAUDE_CODE,
            "SessionStart",
            '{"hookSpecificOutput": {"hookEventName": "SessionStart", '
            '"additionalContext": "phi remembers: pin httpx \\u2014 0.27.2"}}',
        ),
        (
            GEMINI_CLI,
            "UserPromptSubmit",
            '{"hookSpecificOutput": {"hookEventName": "BeforeAgent", '
            '"additionalContext": "phi remembers: pin httpx — 0.27.2"}}',
        ),
        (
            GEMINI_CLI,
            "SessionStart",
            '{"hookSpecificOutput": {"hookEventName": "SessionStart", '
            '"additionalContext": "phi remembers: pin httpx — 0.27.2"}}',
        ),
        (COPILOT_CLI, "UserPromptSubmit", None),
        (COPILOT_CLI, "SessionStart", None),
    ],
    ids=["claude-prompt", "claude-start", "gemini-prompt", "gemini-start", "copilot", "copilot-s"],
)
def test_each_host_reads_the_context_in_its_own_format(
    host: Host, name: str, printed: str | None
) -> None:
    assert context_answer(host, CheckedEvent(name=name, cwd=None), TEXT) == printed


@pytest.mark.parametrize("context", [None, "", 7, ["text"], {"context": "text"}])
@pytest.mark.parametrize("host", [CLAUDE_CODE, GEMINI_CLI], ids=["claude", "gemini"])
def test_no_text_prints_nothing(host: Host, context: object) -> None:
    for name in ("UserPromptSubmit", "SessionStart"):
        assert context_answer(host, CheckedEvent(name=name, cwd=None), context) is None


# Taking an event (`take_event`): checked, normalized, redacted, queued.


def take(stdin: str, options: HookOptions, **where: Any) -> tuple[CheckedEvent, SpoolEntry]:
    return take_event(io.BytesIO(stdin.encode()), options, **where)


def test_an_event_is_queued_redacted_under_a_new_id(spool_dir: Path) -> None:
    options = HookOptions(spool_dir=spool_dir, namespace="dev")
    stdin = event("UserPromptSubmit", prompt="deploy with key AKIAIOSFODNN7EXAMPLE", cwd="/w/api")
    taken, entry = take(stdin, options)
    assert taken == CheckedEvent(name="UserPromptSubmit", cwd="/w/api")
    assert entry.namespace == "dev"
    assert json.loads(entry.payload) == {
        "hook_event_name": "UserPromptSubmit",
        "session_id": MINE,
        "prompt": "deploy with key [REDACTED:aws-access-key]",
        "cwd": "/w/api",
    }
    assert queued(spool_dir) == [
        {"namespace": "dev", "payload": entry.payload, "event": entry.event}
    ]
    _, again = take(stdin, options)
    assert isinstance(entry.event, str) and entry.event
    assert again.event not in (entry.event, None)


def test_an_event_the_fast_path_named_is_queued_under_its_id(spool_dir: Path) -> None:
    options = HookOptions(spool_dir=spool_dir, namespace="dev", event_id="01-from-the-fast-path")
    _, entry = take(event("Stop"), options)
    assert entry.event == "01-from-the-fast-path"
    assert [line["event"] for line in queued(spool_dir)] == ["01-from-the-fast-path"]


def test_a_hosts_event_is_queued_as_the_claude_code_event_it_is(spool_dir: Path) -> None:
    options = HookOptions(spool_dir=spool_dir, namespace="dev", host=GEMINI_CLI)
    raw = {"hook_event_name": "BeforeAgent", "session_id": "g1", "cwd": "/w", "prompt": "hi"}
    taken, entry = take(json.dumps(raw), options)
    assert taken == CheckedEvent(name="UserPromptSubmit", cwd="/w")
    assert json.loads(entry.payload) == {
        **raw,
        "hook_event_name": "UserPromptSubmit",
        "host": "gemini-cli",
    }


def test_in_the_resident_the_hooks_folder_and_environment_name_the_project(
    spool_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PROJECT_ENV, "this-process")
    options = HookOptions(spool_dir=spool_dir, namespace=None)
    folder = tmp_path / "hooks-folder"

    def project(stdin: str, environ: dict[str, str]) -> str:
        return take(stdin, options, cwd=str(folder), environ=environ)[1].namespace

    assert project(event("Stop"), {PROJECT_ENV: "team-api"}) == "team-api"
    # The hook's environment names none (this process's is not the hook's): its folder.
    assert project(event("Stop", cwd="sub/api"), {}) == project_namespace(folder / "sub" / "api")
    assert project(event("Stop"), {}) == project_namespace(folder)
    assert project(event("Stop", cwd="/srv/api"), {}) == project_namespace("/srv/api")
    # In the hook's own process: this process's environment, then the event's folder.
    assert take(event("Stop", cwd="/srv/api"), options)[1].namespace == "this-process"
    monkeypatch.delenv(PROJECT_ENV)
    assert take(event("Stop", cwd="/srv/api"), options)[1].namespace == project_namespace(
        "/srv/api"
    )
    assert take(event("Stop", cwd="/srv/api"), replace(options, namespace="dev"))[1].namespace == (
        "dev"
    )


@pytest.mark.parametrize(
    ("host", "stdin", "environ", "line"),
    [
        (
            CLAUDE_CODE,
            "not json",
            {},
            "hook event is not JSON: Expecting value: line 1 column 1 (char 0)",
        ),
        (
            GEMINI_CLI,
            json.dumps({"hook_event_name": "BeforeModel", "session_id": "g1"}),
            {},
            "Gemini CLI event 'BeforeModel' is not captured; register only SessionStart,"
            " BeforeAgent, BeforeTool, AfterTool, AfterAgent, SessionEnd, PreCompress,"
            " Notification (see examples/gemini-cli/settings.json)",
        ),
        (
            CLAUDE_CODE,
            event("Stop"),
            {PROJECT_ENV: "not a name!"},
            "PHI_CAPTURE_PROJECT='not a name!' is not a namespace: use 1-200 characters of"
            " A-Z a-z 0-9 . _ : % - starting with a letter or digit",
        ),
    ],
    ids=["not-json", "host-event", "project"],
)
def test_a_refused_event_says_why_in_one_line_and_queues_nothing(
    spool_dir: Path, host: Host, stdin: str, environ: dict[str, str], line: str
) -> None:
    options = HookOptions(spool_dir=spool_dir, namespace=None, host=host)
    with pytest.raises(Refused) as refused:
        take(stdin, options, cwd="/w", environ=environ)
    assert str(refused.value) == line
    assert not (spool_dir / "spool.jsonl").exists()


def test_an_event_that_cannot_be_queued_is_refused_naming_the_spool(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    spool_dir = tmp_path / "file" / "capture"
    with pytest.raises(Refused) as refused:
        take(event("Stop"), HookOptions(spool_dir=spool_dir, namespace="dev"))
    assert str(refused.value) == (
        f"could not queue the event in {spool_dir / 'spool.jsonl'}:"
        f" [Errno 20] Not a directory: {str(spool_dir)!r}"
    )


# Answered by the resident process (`recall` without `wait`).

CLAUDE_PROMPT = (
    '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", '
    '"additionalContext": "phi remembers: pin httpx \\u2014 0.27.2"}}\n'
)
CLAUDE_START = CLAUDE_PROMPT.replace("UserPromptSubmit", "SessionStart")
GEMINI_PROMPT = (
    '{"hookSpecificOutput": {"hookEventName": "BeforeAgent", '
    '"additionalContext": "phi remembers: pin httpx — 0.27.2"}}\n'
)
GEMINI_START = GEMINI_PROMPT.replace("BeforeAgent", "SessionStart")


def raw_event(host: Host, name: str, **fields: Any) -> str:
    """`name` (Claude Code's) as `host` sends it."""
    if host is GEMINI_CLI and name == "UserPromptSubmit":
        name = "BeforeAgent"
    return event(name, **fields)


@pytest.mark.parametrize(
    ("host", "name", "printed"),
    [
        (CLAUDE_CODE, "UserPromptSubmit", CLAUDE_PROMPT),
        (CLAUDE_CODE, "SessionStart", CLAUDE_START),
        (GEMINI_CLI, "UserPromptSubmit", GEMINI_PROMPT),
        (GEMINI_CLI, "SessionStart", GEMINI_START),
        (COPILOT_CLI, "UserPromptSubmit", ""),
    ],
    ids=["claude-prompt", "claude-start", "gemini-prompt", "gemini-start", "copilot-prompt"],
)
def test_the_residents_answer_is_printed_in_the_hosts_format(
    spool_dir: Path,
    db: Path,
    serve: Callable[[object], FakeResident],
    asked: Asked,
    starts: list[Resident],
    host: Host,
    name: str,
    printed: str,
) -> None:
    fake = serve({"context": TEXT})
    options = options_for(spool_dir, db, host=host)
    fields = {"prompt": QUESTION} if name == "UserPromptSubmit" else {}
    stdin = raw_event(host, name, cwd="/home/dev/api", **fields)
    assert hook(stdin, options) == (0, printed, "")
    prompt = name == "UserPromptSubmit"
    request = {
        "op": "recall" if prompt else "session_start",
        "namespace": "dev",
        "session": MINE,
        "prompt": QUESTION if prompt else "",
        "cwd": "/home/dev/api",
        "budget_tokens": BUDGET,
    }
    assert fake.asked() == [request]
    # A prompt waits a second and never for a resident still starting; a session start
    # waits up to fifteen, for one loading its model too.
    assert asked.calls == [
        {
            "resident": Resident(spool_dir=spool_dir, db=str(db)),
            "request": request,
            "timeout_s": 1.0 if prompt else 15.0,
            "wait_start": not prompt,
        }
    ]
    assert starts == []
    # The hook only queued the event: the resident stores it.
    (line,) = queued(spool_dir)
    assert (line["namespace"], json.loads(line["payload"])["hook_event_name"]) == ("dev", name)


@pytest.mark.parametrize(
    "reply",
    [{"ok": True}, {"context": None}, {"context": ""}, {"context": 7}, [TEXT], TEXT],
    ids=["no-context", "null", "empty", "number", "list", "text"],
)
def test_a_reply_without_context_text_prints_nothing(
    spool_dir: Path, db: Path, serve: Callable[[object], FakeResident], reply: object
) -> None:
    fake = serve(reply)
    stdin = event("UserPromptSubmit", prompt=QUESTION, cwd="/home/dev/api")
    assert hook(stdin, options_for(spool_dir, db)) == (0, "", "")
    assert len(fake.asked()) == 1


def test_a_prompt_with_no_resident_up_starts_one_and_goes_on_without_an_answer(
    spool_dir: Path, db: Path, asked: Asked, starts: list[Resident]
) -> None:
    stdin = event("UserPromptSubmit", prompt=QUESTION, cwd="/home/dev/api")
    began = time.monotonic()
    assert hook(stdin, options_for(spool_dir, db)) == (0, "", "")
    assert time.monotonic() - began < 1.0  # asked once: a prompt never waits for a start
    assert starts == [Resident(spool_dir=spool_dir, db=str(db))]
    assert [call["timeout_s"] for call in asked.calls] == [1.0]
    assert len(queued(spool_dir)) == 1


@pytest.mark.parametrize(
    "stdin",
    [
        event("Stop"),
        event("SessionEnd", reason="exit"),
        event("UserPromptSubmit", prompt=" \n"),
        event("UserPromptSubmit"),
    ],
    ids=["stop", "session-end", "blank-prompt", "no-prompt"],
)
def test_an_event_without_an_answer_nudges_the_resident(
    spool_dir: Path,
    db: Path,
    serve: Callable[[object], FakeResident],
    asked: Asked,
    starts: list[Resident],
    stdin: str,
) -> None:
    fake = serve({"ok": True})
    assert hook(stdin, options_for(spool_dir, db)) == (0, "", "")
    assert fake.asked() == [{"op": "drain"}]
    assert (asked.calls, starts) == ([], [])
    assert len(queued(spool_dir)) == 1


def test_a_nudge_with_no_resident_up_starts_one(
    spool_dir: Path, db: Path, starts: list[Resident]
) -> None:
    assert hook(event("Stop"), options_for(spool_dir, db)) == (0, "", "")
    assert starts == [Resident(spool_dir=spool_dir, db=str(db))]


# Answered in this process (`recall` with `wait`): the queue stored first, then the answer.


@pytest.mark.usefixtures("warm")
def test_with_wait_a_prompt_is_answered_from_the_store_after_the_queue_is_stored(
    spool_dir: Path,
    db: Path,
    minilm: MiniLMEmbedder,
    asked: Asked,
    starts: list[Resident],
    capsys: pytest.CaptureFixture[str],
) -> None:
    remember(spool_dir)
    options = options_for(spool_dir, db, wait=True)
    stdin = event("UserPromptSubmit", prompt=QUESTION, cwd="/home/dev/api")
    code, out, err = hook(stdin, options)
    assert (code, err) == (0, "")

    async def expected(memory: Memory) -> str | None:
        return await prompt_context(
            memory, QUESTION, namespace="dev", session=MINE, budget_tokens=BUDGET
        )

    text = recalled(db, minilm, expected)
    assert isinstance(text, str)
    assert PIN in text and "session aaaa1111" in text
    assert OWN not in text and ELSEWHERE not in text
    assert out == hook_output("UserPromptSubmit", text) + "\n"
    assert Spool(directory=spool_dir).pending() == 0
    assert contents(db, minilm) == [f"user: {PIN}", f"user: {OWN}", f"user: {QUESTION}"]
    assert (asked.calls, starts) == ([], [])
    assert capsys.readouterr() == ("", "")


@pytest.mark.usefixtures("warm")
def test_with_wait_a_session_start_is_answered_with_the_projects_preload(
    spool_dir: Path, db: Path, minilm: MiniLMEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    remember(spool_dir)
    # The session being started (resumed) gave a prompt already: not "the latest task here".
    later = event("UserPromptSubmit", LATER, prompt="rename the retry flag", cwd="/home/dev/api")
    Spool(directory=spool_dir).append(SpoolEntry(namespace="dev", payload=later))
    options = options_for(spool_dir, db, wait=True)
    code, out, err = hook(event("SessionStart", LATER, cwd="/home/dev/tidepool"), options)
    assert (code, err) == (0, "")

    async def expected(memory: Memory) -> str | None:
        return await session_context(
            memory, namespace="dev", session=LATER, cwd="/home/dev/tidepool", budget_tokens=BUDGET
        )

    text = recalled(db, minilm, expected)
    assert isinstance(text, str)
    assert text.startswith("Project memory: dev. The latest task here (session bbbb2222, ")
    assert f"for: work in tidepool {OWN}]" in text
    assert ELSEWHERE not in text
    assert out == hook_output("SessionStart", text) + "\n"
    assert Spool(directory=spool_dir).pending() == 0
    assert capsys.readouterr() == ("", "")


@pytest.mark.usefixtures("warm")
def test_with_wait_a_hosts_answer_is_in_its_format(spool_dir: Path, db: Path) -> None:
    remember(spool_dir)
    options = options_for(spool_dir, db, wait=True, host=GEMINI_CLI)
    stdin = raw_event(GEMINI_CLI, "UserPromptSubmit", prompt=QUESTION, cwd="/home/dev/api")
    code, out, err = hook(stdin, options)
    answer = json.loads(out)
    assert (code, err, list(answer)) == (0, "", ["hookSpecificOutput"])
    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert PIN in answer["hookSpecificOutput"]["additionalContext"]


@pytest.mark.usefixtures("warm")
def test_with_wait_a_first_session_is_answered_nothing(
    spool_dir: Path, db: Path, minilm: MiniLMEmbedder
) -> None:
    options = options_for(spool_dir, db, wait=True)
    for stdin in (
        event("SessionStart", cwd="/home/dev/api"),
        event("UserPromptSubmit", prompt=QUESTION, cwd="/home/dev/api"),
    ):
        assert hook(stdin, options) == (0, "", "")
    assert contents(db, minilm) == [f"user: {QUESTION}"]


@pytest.mark.parametrize(
    "stdin",
    [
        event("UserPromptSubmit", prompt=QUESTION),
        event("SessionStart", cwd="/home/dev/api"),
    ],
    ids=["prompt", "session-start"],
)
def test_with_wait_a_store_that_cannot_be_opened_keeps_the_event_queued(
    spool_dir: Path, db: Path, stdin: str
) -> None:
    db.write_text("not a database " * 100)
    assert hook(stdin, options_for(spool_dir, db, wait=True)) == (
        0,
        "",
        f"phi capture: 1 event(s) queued for later: {str(db)!r} is not a SQLite database"
        " (corrupt or another kind of file)\n",
    )
    assert Spool(directory=spool_dir).pending() == 1


@pytest.mark.usefixtures("warm")
@pytest.mark.parametrize(
    ("stdin", "recall", "answered"),
    [
        (event("UserPromptSubmit", prompt=QUESTION), True, True),
        (event("Stop"), True, False),
        (event("SessionStart", cwd="/home/dev/api"), False, True),
    ],
    ids=["answered", "not-answered", "preloaded"],
)
def test_with_wait_what_the_drain_sets_aside_is_said_on_the_hooks_stderr(
    spool_dir: Path,
    db: Path,
    minilm: MiniLMEmbedder,
    capsys: pytest.CaptureFixture[str],
    stdin: str,
    recall: bool,
    answered: bool,
) -> None:
    torn = b'{"namespace": "dev", "payload": "{\\"hook_'  # a crash mid-append
    (spool_dir / "spool.jsonl").write_bytes(torn)
    remember(spool_dir)
    code, out, err = hook(stdin, options_for(spool_dir, db, wait=True, recall=recall))
    assert (code, PIN in out) == (0, answered)
    assert err.startswith(
        f"phi capture: set aside an unreadable spool line ({len(torn)} bytes; 1 kept in"
    )
    assert len(err.splitlines()) == 1
    assert capsys.readouterr() == ("", "")
    assert Spool(directory=spool_dir).pending() == 0
    assert contents(db, minilm)[:2] == [f"user: {PIN}", f"user: {OWN}"]


@pytest.mark.usefixtures("warm")
def test_answer_here_reads_the_request_it_is_given(
    spool_dir: Path, db: Path, minilm: MiniLMEmbedder
) -> None:
    remember(spool_dir)
    options = options_for(spool_dir, db)
    request: dict[str, object] = {
        "op": "recall",
        "namespace": "dev",
        "session": 7,  # not text: no session of its own, so its own rows count too
        "prompt": QUESTION,
        "budget_tokens": 1,  # not read: the options' budget is
    }
    err = io.StringIO()
    text = answer_here(options, request, err=err)
    assert isinstance(text, str) and PIN in text and OWN in text
    start = {**request, "op": "session_start", "session": OLD, "cwd": 7}
    preload = answer_here(options, start, err=err)
    assert isinstance(preload, str)
    assert f"for: {OWN}]" in preload  # no folder in the hint: cwd was not text
    assert err.getvalue() == ""


# Storing what is queued, and the session-start preload without `recall`.


@pytest.mark.usefixtures("warm")
@pytest.mark.parametrize(
    ("host", "shape"),
    [(CLAUDE_CODE, "text"), (GEMINI_CLI, "json"), (COPILOT_CLI, "nothing")],
    ids=["claude", "gemini", "copilot"],
)
def test_without_recall_a_session_start_prints_its_projects_preload(
    spool_dir: Path, db: Path, monkeypatch: pytest.MonkeyPatch, host: Host, shape: str
) -> None:
    monkeypatch.setenv(PROJECT_ENV, "dev")  # the project of the event, not of the options
    remember(spool_dir)
    options = HookOptions(spool_dir=spool_dir, db=str(db), namespace=None, host=host)
    code, out, err = hook(event("SessionStart", cwd="/home/dev/tidepool"), options)
    assert (code, err) == (0, "")
    text = drain(
        replace(options, namespace="dev"),
        wait_s=0,
        preload=True,
        cwd="/home/dev/tidepool",
        err=io.StringIO(),
    )
    assert isinstance(text, str)
    assert text.startswith("What you remember from earlier sessions (phi's memory):\n\n")
    assert "[RELEVANT MEMORY — dev — for: work in tidepool]" in text and PIN in text
    if shape == "text":
        assert out == f"{text}\n"
    elif shape == "json":
        answer = {
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}
        }
        assert out == json.dumps(answer, ensure_ascii=False) + "\n"
    else:
        assert out == ""
    assert Spool(directory=spool_dir).pending() == 0


@pytest.mark.usefixtures("warm")
@pytest.mark.parametrize("host", [CLAUDE_CODE, GEMINI_CLI], ids=["claude", "gemini"])
def test_without_recall_a_first_session_start_prints_nothing(
    spool_dir: Path, db: Path, host: Host
) -> None:
    options = HookOptions(spool_dir=spool_dir, db=str(db), namespace="dev", host=host)
    assert hook(event("SessionStart", cwd="/home/dev/api"), options) == (0, "", "")


def test_the_store_is_opened_as_configured(
    db: Path, phi_home: Path, monkeypatch: pytest.MonkeyPatch, minilm: MiniLMEmbedder
) -> None:
    opened: list[dict[str, Any]] = []
    real = Memory.open

    def spy(location: str | Path, **kwargs: Any) -> Memory:
        opened.append({"location": location, **kwargs})
        return real(location, **kwargs)

    monkeypatch.setattr(Memory, "open", spy)
    monkeypatch.setenv("PHI_POSTGRES_POOL_MAX", "3")
    monkeypatch.setenv("PHI_AUTO_UPGRADE", "false")
    open_memory(str(db))
    open_memory(None)
    assert opened == [
        {"location": str(db), "embedder": minilm, "auto_upgrade": False, "pool_max": 3},
        {
            "location": str(phi_home / "memory.db"),
            "embedder": minilm,
            "auto_upgrade": False,
            "pool_max": 3,
        },
    ]


@pytest.fixture
def unreachable(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Team capture configured (`PHI_CAPTURE_URL`) to a loopback port that refuses."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:  # bound, not listening
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}/mcp"
        monkeypatch.setenv("PHI_CAPTURE_URL", url)
        monkeypatch.setenv("PHI_CAPTURE_TOKEN", "team-token")
        yield url


def test_with_team_capture_the_queue_goes_to_the_server_not_a_store(
    spool_dir: Path, phi_home: Path, unreachable: str, capsys: pytest.CaptureFixture[str]
) -> None:
    remember(spool_dir)
    err = io.StringIO()
    options = HookOptions(spool_dir=spool_dir, namespace="dev")
    assert drain(options, wait_s=0, err=err) is None
    said = f"phi capture: 3 event(s) queued for later: cannot reach {unreachable}: ConnectError: "
    assert err.getvalue().startswith(said)
    assert len(err.getvalue().splitlines()) == 1
    # The server is the store: none is opened here, not even for a preload.
    assert drain(options, wait_s=0, err=io.StringIO(), preload=True) is None
    assert not (phi_home / "memory.db").exists()
    assert Spool(directory=spool_dir).pending() == 3
    assert capsys.readouterr() == ("", "")


@pytest.mark.usefixtures("warm")
def test_a_store_named_takes_the_queue_even_with_team_capture_configured(
    spool_dir: Path, db: Path, minilm: MiniLMEmbedder, unreachable: str
) -> None:
    remember(spool_dir)
    err = io.StringIO()
    assert drain(HookOptions(spool_dir=spool_dir, db=str(db)), wait_s=0, err=err) is None
    assert err.getvalue() == ""
    assert contents(db, minilm) == [f"user: {PIN}", f"user: {OWN}"]


@pytest.mark.parametrize(
    "stdin",
    [event("UserPromptSubmit", prompt=QUESTION), event("SessionStart", cwd="/home/dev/api")],
    ids=["prompt", "session-start"],
)
def test_with_wait_team_capture_sends_the_queue_to_the_server_and_answers_nothing(
    spool_dir: Path,
    phi_home: Path,
    unreachable: str,
    capsys: pytest.CaptureFixture[str],
    stdin: str,
) -> None:
    """With team capture configured, a `--wait` hook's queue goes to the server (here one
    that refuses: kept for later), never into the laptop's own store."""
    options = HookOptions(spool_dir=spool_dir, namespace="dev", recall=True, wait=True)
    code, out, err = hook(stdin, options)
    assert (code, out) == (0, "")
    said = f"phi capture: 1 event(s) queued for later: cannot reach {unreachable}: ConnectError: "
    assert err.startswith(said)
    assert Spool(directory=spool_dir).pending() == 1
    assert not (phi_home / "memory.db").exists()  # the laptop's own store is not written
    assert capsys.readouterr() == ("", "")
