"""Team capture's client in this process, exactly: which settings name a server (and each
mistake's one-line refusal), the token file's checks, what part of a transcript travels, and
the drain of real spool files into a real `phi mcp --http` app (uvicorn on 127.0.0.1, port 0,
in the test's own event loop) on a real SQLite store: in order, under the token's prefix and
name, never doubled, a refused event set aside, a busy or unreachable server leaving the
rest queued. test_team_capture.py shows the same through child processes; these are the fast
tests `scripts/mutate` runs against `phi.capture.remote_sink`."""

from __future__ import annotations

import io
import json
import shlex
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import apsw
import pytest
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ImageContent, TextContent
from pydantic import SecretStr

from phi.capture._record import encode_entry
from phi.capture.remote_sink import (
    TRANSCRIPT_TAIL_BYTES,
    RemoteTarget,
    _arguments,
    configured_target,
    drain_remote,
    transcript_tail,
)
from phi.capture.spool import Spool, SpoolEntry
from phi.config import Settings, SettingsError
from phi.errors import NamespaceNotFound
from phi.mcp.remote import TokenScope, build_remote_app
from phi.memory import Memory, MiniLMEmbedder, Row
from phi.memory.store.sqlite import SQLiteStore
from phi.private import InsecureFile
from tests._serving import serving

pytestmark = pytest.mark.anyio

TOKEN = "a1" * 4 + "5e0c93a5b2f4e86d0c1a3b7d"
"""alice's: `alice TOKEN rw:alice- ro:team-`."""
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
URL = "https://memory.example/mcp"
NO_URL = (
    "a capture token is set but PHI_CAPTURE_URL is not; set the server's endpoint"
    " (e.g. https://memory.example/mcp) or remove the token"
)
NO_TOKEN = (
    "PHI_CAPTURE_URL is set without a token; set PHI_CAPTURE_TOKEN or PHI_CAPTURE_TOKEN_FILE"
    " (a 0600 file holding the token)"
)
READ_ONLY = (
    "is read-only for this client (its token may read it, not write it); write with a token"
    " that has it read-write"
)


# -- which server, and the token --------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_capture_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The settings of these tests are the ones each gives, not the shell's."""
    for name in ("PHI_CAPTURE_URL", "PHI_CAPTURE_TOKEN", "PHI_CAPTURE_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no `.env` of the checkout's


def target(**given: Any) -> RemoteTarget | None:
    return RemoteTarget.from_settings(Settings(_env_file=None, **given))


def refused(**given: Any) -> str:
    with pytest.raises(SettingsError) as caught:
        target(**given)
    message = str(caught.value)
    assert "\n" not in message and TOKEN not in message
    return message


def token_file(tmp_path: Path, text: str | bytes, *, mode: int = 0o600) -> Path:
    path = tmp_path / "capture-token"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_a_url_and_a_token_name_the_server(tmp_path: Path) -> None:
    assert target() is None  # nothing set: local capture
    for url in ("http://127.0.0.1:8765/mcp", URL):
        assert target(capture_url=url, capture_token=SecretStr(TOKEN)) == RemoteTarget(
            url=url, token=TOKEN
        )
    # The token from a file: alone on its line, blanks around it dropped.
    path = token_file(tmp_path, f"  {TOKEN}\n\n")
    assert target(capture_url=URL, capture_token_file=path) == RemoteTarget(url=URL, token=TOKEN)
    assert TOKEN not in repr(RemoteTarget(url=URL, token=TOKEN))


def test_the_configured_target_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert configured_target() is None
    monkeypatch.setenv("PHI_CAPTURE_URL", URL)
    monkeypatch.setenv("PHI_CAPTURE_TOKEN", TOKEN)
    assert configured_target() == RemoteTarget(url=URL, token=TOKEN)


def test_each_half_set_target_is_refused_in_one_line(tmp_path: Path) -> None:
    path = token_file(tmp_path, TOKEN)
    assert refused(capture_token=SecretStr(TOKEN)) == NO_URL
    assert refused(capture_token_file=path) == NO_URL
    assert refused(capture_url=URL, capture_token=SecretStr(TOKEN), capture_token_file=path) == (
        "both PHI_CAPTURE_TOKEN and PHI_CAPTURE_TOKEN_FILE are set; keep one"
    )
    assert refused(capture_url=URL) == NO_TOKEN
    assert refused(capture_url=URL, capture_token=SecretStr("")) == NO_TOKEN
    for url in ("ftp://memory.example/mcp", "memory.example/mcp", "HTTPS://memory.example/mcp"):
        assert refused(capture_url=url, capture_token=SecretStr(TOKEN)) == (
            f"PHI_CAPTURE_URL {url!r} is not an http(s) URL; give the server's endpoint,"
            " e.g. https://memory.example/mcp"
        )


def test_each_bad_token_file_is_refused_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert refused(capture_url=URL, capture_token_file=missing) == (
        f"cannot read PHI_CAPTURE_TOKEN_FILE {str(missing)!r}: [Errno 2] No such file or"
        f" directory: {str(missing)!r}"
    )
    alone = "PHI_CAPTURE_TOKEN_FILE {!r} must hold the token alone on one line"
    for text in ("", " \n\t\n", f"{TOKEN} {TOKEN}\n", f"{TOKEN}\n{TOKEN}\n"):
        path = token_file(tmp_path, text)
        assert refused(capture_url=URL, capture_token_file=path) == alone.format(str(path)), text
    path = token_file(tmp_path, b"caf\xe9\n")
    assert refused(capture_url=URL, capture_token_file=path) == (
        f"cannot read PHI_CAPTURE_TOKEN_FILE {str(path)!r}: 'utf-8' codec can't decode byte"
        " 0xe9 in position 3: invalid continuation byte"
    )


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620], ids=["644", "640", "604", "620"])
def test_a_token_file_others_can_open_is_refused(tmp_path: Path, mode: int) -> None:
    path = token_file(tmp_path, TOKEN, mode=mode)
    with pytest.raises(InsecureFile) as caught:
        target(capture_url=URL, capture_token_file=path)
    assert str(caught.value) == (
        f"{str(path)!r} holds a secret and other users can access it (mode {mode:04o}); run"
        f" `chmod 600 {shlex.quote(str(path))}` and try again"
    )


def test_a_token_file_is_read_as_utf8_under_any_locale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shell whose locale is ASCII reads the same token: the locale stood in for where
    `pathlib` asks for it, `io.text_encoding` (as test_remote_mutants.py does)."""
    token = "caf\u00e9" + TOKEN
    path = token_file(tmp_path, token + "\n")
    monkeypatch.setattr(io, "text_encoding", lambda encoding, *_: encoding or "ascii")
    assert target(capture_url=URL, capture_token_file=path) == RemoteTarget(url=URL, token=token)


def test_a_token_file_under_home_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    token_file(tmp_path, TOKEN)
    assert target(capture_url=URL, capture_token_file=Path("~/capture-token")) == RemoteTarget(
        url=URL, token=TOKEN
    )


# -- the transcript's tail --------------------------------------------------------------------


def event(**fields: Any) -> str:
    return json.dumps({"session_id": "s", "hook_event_name": "Stop", **fields})


def numbered(count: int) -> list[bytes]:
    """`count` lines of exactly 1,000 bytes each (newline included), each named by number."""
    return [f"{n:04d}".encode() + b"x" * 995 + b"\n" for n in range(count)]


def test_a_short_transcript_goes_whole_and_redacted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(f'{{"n": 1}}\n{{"said": "use {GITHUB_TOKEN}"}}\n')
    assert transcript_tail(event(transcript_path=str(path))) == (
        '{"n": 1}\n{"said": "use [REDACTED:github-token]"}\n'
    )
    path.write_bytes(b'{"said": "caf\xe9"}\n')  # not UTF-8: replaced, not refused
    assert transcript_tail(event(transcript_path=str(path))) == '{"said": "caf\ufffd"}\n'
    path.write_bytes(b"")
    assert transcript_tail(event(transcript_path=str(path))) == ""


def test_a_transcript_of_exactly_the_limit_goes_whole(tmp_path: Path) -> None:
    lines = numbered(1000)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines))
    assert path.stat().st_size == TRANSCRIPT_TAIL_BYTES == 1_000_000
    assert transcript_tail(event(transcript_path=str(path))) == b"".join(lines).decode()


def test_one_byte_over_the_limit_drops_the_line_cut_in_two(tmp_path: Path) -> None:
    lines = numbered(1000)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"y" + b"".join(lines))  # the first line is one byte longer
    assert transcript_tail(event(transcript_path=str(path))) == b"".join(lines[1:]).decode()


def test_a_long_transcript_goes_as_its_last_whole_lines(tmp_path: Path) -> None:
    lines = [*numbered(3000), b"end\n"]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines))
    # The last 1,000,000 bytes start 4 bytes into line 2000: it is dropped, the rest kept.
    assert transcript_tail(event(transcript_path=str(path))) == b"".join(lines[2001:]).decode()


def test_a_subagents_own_transcript_is_the_one_sent(tmp_path: Path) -> None:
    main, agent = tmp_path / "main.jsonl", tmp_path / "agent.jsonl"
    main.write_text("main\n")
    agent.write_text("agent\n")
    both = event(transcript_path=str(main), agent_transcript_path=str(agent))
    assert transcript_tail(both) == "agent\n"
    assert transcript_tail(event(agent_transcript_path=str(agent))) == "agent\n"
    assert transcript_tail(event(agent_transcript_path="", transcript_path=str(main))) == "main\n"


def test_a_transcript_under_home_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "t.jsonl").write_text("line\n")
    assert transcript_tail(event(transcript_path="~/t.jsonl")) == "line\n"


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        "[1, 2]",
        '"a string"',
        event(),
        event(transcript_path=""),
        event(transcript_path=5),
        event(transcript_path=["/tmp/x"]),
        event(agent_transcript_path=7),
        event(transcript_path="/no/such/transcript.jsonl"),
    ],
    ids=[
        "not-json",
        "a-list",
        "a-string",
        "no-path",
        "empty-path",
        "a-number",
        "a-list-path",
        "a-number-agent-path",
        "missing",
    ],
)
def test_no_transcript_goes_without_a_file_this_laptop_can_read(payload: str) -> None:
    assert transcript_tail(payload) is None


def test_a_folder_named_as_transcript_sends_none(tmp_path: Path) -> None:
    assert transcript_tail(event(transcript_path=str(tmp_path))) is None


def test_the_tool_gets_the_event_its_id_namespace_and_transcript(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"n": 1}\n')
    payload = event(transcript_path=str(path))
    entry = SpoolEntry(namespace="tidepool", payload=payload, event="e1")
    assert _arguments(entry) == {
        "payload": payload,
        "event": "e1",
        "namespace": "tidepool",
        "transcript": '{"n": 1}\n',
    }
    path.write_text("")  # an empty transcript is not sent
    assert _arguments(entry) == {"payload": payload, "event": "e1", "namespace": "tidepool"}
    bare = SpoolEntry(namespace="tidepool", payload=event(), event="e2")
    assert _arguments(bare) == {"payload": event(), "event": "e2", "namespace": "tidepool"}


# -- the drain into a server --------------------------------------------------------------------


@asynccontextmanager
async def team_server(memory: Memory) -> AsyncIterator[str]:
    """`phi mcp --http` with alice's token, in this process; yields its endpoint."""
    tokens = [TokenScope(token=TOKEN, prefix="alice-", name="alice", also_read=("team-",))]
    async with serving(build_remote_app(memory, tokens)) as port:
        yield f"http://127.0.0.1:{port}/mcp"


async def drain(spool: Spool, url: str, token: str = TOKEN) -> tuple[int, str]:
    """One drain as the drainer runs it: how many were stored, and what it said."""
    err = io.StringIO()
    with spool.draining(wait_s=1) as mine:
        assert mine
        stored = await drain_remote(spool, RemoteTarget(url=url, token=token), err=err)
    return stored, err.getvalue()


def prompt(text: str, *, session: str = "s1") -> str:
    return json.dumps(
        {"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": text}
    )


def queue(spool: Spool, *entries: tuple[str, str, str]) -> list[SpoolEntry]:
    """Append (namespace, payload, event id) entries; returns them."""
    made = [SpoolEntry(namespace=ns, payload=payload, event=eid) for ns, payload, eid in entries]
    for entry in made:
        spool.append(entry)
    return made


async def rows(memory: Memory, namespace: str) -> list[Row]:
    try:
        return [row async for row in memory.export(namespace=namespace)]
    except NamespaceNotFound:
        return []


def said(uuid: str, text: str) -> str:
    entry = {
        "uuid": uuid,
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
    }
    return json.dumps(entry)


async def test_the_queue_arrives_in_order_under_the_tokens_prefix_and_name(
    memory: Memory, tmp_path: Path
) -> None:
    transcript = tmp_path / "laptop" / "transcript.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(said("u1", "the clock was naive") + "\n" + said("u2", "fixed") + "\n")
    spool = Spool(directory=tmp_path / "capture")
    first, *_ = queue(
        spool,
        ("tidepool", prompt("one"), "e1"),
        ("tidepool", prompt("two"), "e2"),
        ("alice-notes", prompt("three"), "e3"),
        ("tidepool", event(session_id="s1", transcript_path=str(transcript)), "e4"),
    )
    async with team_server(memory) as url:
        assert await drain(spool, url) == (4, "")
        assert spool.pending() == 0 and spool.rejected() == 0
        assert spool.path.read_bytes() == b""  # all stored: the queue is emptied
        stored = [
            (r.content, r.written_by, r.meta["session"], r.meta.get("event"), r.meta.get("said"))
            for r in await rows(memory, "alice-tidepool")
        ]
        assert [s[:2] for s in stored] == [
            ("user: one", "alice"),
            ("user: two", "alice"),
            ("assistant: the clock was naive", "alice"),  # the transcript travelled
            ("assistant: fixed", "alice"),
        ]
        assert [s[3] for s in stored[:2]] == ["e1", "e2"]
        assert [s[4] for s in stored[2:]] == ["u1", "u2"]
        assert {s[2] for s in stored} == {"s1"}
        notes = await rows(memory, "alice-notes")
        assert [(r.content, r.written_by, r.meta["event"]) for r in notes] == [
            ("user: three", "alice", "e3")
        ]
        # Delivered again (a drainer killed after the server stored it): still one event.
        spool.append(first)
        assert await drain(spool, url) == (1, "")
        assert [r.content for r in await rows(memory, "alice-tidepool")] == [s[0] for s in stored]


async def test_an_event_the_server_refuses_is_set_aside_and_the_rest_arrive(
    memory: Memory, tmp_path: Path
) -> None:
    spool = Spool(directory=tmp_path / "capture")
    _, team, bad, _ = queue(
        spool,
        ("tidepool", prompt("one"), "e1"),
        ("team-plan", prompt("sneaky"), "e2"),  # alice may read the team's, not write it
        ("tidepool", '{"session_id": "s1"}', "e3"),
        ("tidepool", prompt("four"), "e4"),
    )
    async with team_server(memory) as url:
        stored, said_ = await drain(spool, url)
    assert stored == 2
    why = {
        team: f"the server refused the event: namespace 'team-plan' {READ_ONLY}",
        bad: "the server refused the event: hook event refused: hook_event_name: Field required",
    }
    assert said_.splitlines() == [
        f"phi capture: set aside an event the store refused ({len(encode_entry(entry)) - 1}"
        f" bytes; {n} kept in {spool.rejects_path}): {reason}"
        for n, (entry, reason) in enumerate(why.items(), 1)
    ]
    kept = [json.loads(line) for line in spool.rejects_path.read_text().splitlines()]
    assert [k["reason"] for k in kept] == [f"an event the store refused: {r}" for r in why.values()]
    assert [json.loads(k["line"])["event"] for k in kept] == ["e2", "e3"]
    assert spool.pending() == 0
    assert [r.content for r in await rows(memory, "alice-tidepool")] == ["user: one", "user: four"]
    assert await rows(memory, "team-plan") == []


async def test_a_busy_server_store_stops_the_drain_and_the_rest_waits_in_order(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    db = tmp_path / "server.db"
    spool = Spool(directory=tmp_path / "capture")
    async with (
        Memory(store=SQLiteStore(db, busy_timeout=0.05), embedder=minilm) as memory,
        team_server(memory) as url,
    ):
        queue(spool, ("tidepool", prompt("one"), "e1"))
        assert await drain(spool, url) == (1, "")
        queue(spool, ("tidepool", prompt("two"), "e2"), ("tidepool", prompt("three"), "e3"))
        queued = spool.path.read_bytes()
        holder = apsw.Connection(str(db))
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            busy = await drain(spool, url)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert busy == (
            0,
            f"phi capture: 2 event(s) queued for later: try again later: the store {str(db)!r}"
            " stayed locked by another process for over 0.05 s; try again when it is less busy\n",
        )
        assert (spool.pending(), spool.rejected()) == (2, 0)
        assert spool.path.read_bytes() == queued  # nothing moved past
        queue(spool, ("tidepool", prompt("four"), "e4"))
        assert await drain(spool, url) == (3, "")
        contents = [r.content for r in await rows(memory, "alice-tidepool")]
    assert contents == ["user: one", "user: two", "user: three", "user: four"]


async def test_a_server_out_of_reach_leaves_every_event_queued(
    memory: Memory, tmp_path: Path
) -> None:
    spool = Spool(directory=tmp_path / "capture")
    queue(spool, *[("tidepool", prompt(f"p{n}"), f"e{n}") for n in range(3)])
    queued = spool.path.read_bytes()
    with socket.socket() as probe:  # a port nobody listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"
        assert await drain(spool, url) == (
            0,
            f"phi capture: 3 event(s) queued for later: cannot reach {url}: ConnectError:"
            " All connection attempts failed\n",
        )
    assert (spool.pending(), spool.rejected(), spool.path.read_bytes()) == (3, 0, queued)
    # Once the server is back, they all arrive, in order.
    async with team_server(memory) as live:
        assert await drain(spool, live) == (3, "")
    assert [r.content for r in await rows(memory, "alice-tidepool")] == [
        "user: p0",
        "user: p1",
        "user: p2",
    ]


async def test_a_token_the_server_does_not_know_leaves_every_event_queued(
    memory: Memory, tmp_path: Path
) -> None:
    spool = Spool(directory=tmp_path / "capture")
    queue(spool, ("tidepool", prompt("one"), "e1"), ("tidepool", prompt("two"), "e2"))
    stranger = "f" * 32
    async with team_server(memory) as url:
        stored, said_ = await drain(spool, url, token=stranger)
    assert stored == 0
    assert said_.startswith(f"phi capture: 2 event(s) queued for later: cannot reach {url}: ")
    assert said_.count("\n") == 1 and stranger not in said_
    assert (spool.pending(), spool.rejected()) == (2, 0)
    assert await rows(memory, "alice-tidepool") == []


async def test_a_refusal_in_several_parts_is_read_whole(tmp_path: Path) -> None:
    """What the client makes of a tool error it did not expect the shape of: every text
    part, in order, a space between; a part without text adds none; the SDK's own prefix
    dropped. A scripted server: phi's own sends one text part."""
    server = MCPServer("scripted")

    @server.tool()
    async def capture_event(
        payload: str, event: str, namespace: str | None = None, transcript: str = ""
    ) -> CallToolResult:
        return CallToolResult(
            is_error=True,
            content=[
                TextContent(type="text", text="Error executing tool capture_event: first"),
                ImageContent(type="image", data="AAAA", mime_type="image/png"),
                TextContent(type="text", text="second"),
            ],
        )

    spool = Spool(directory=tmp_path / "capture")
    queue(spool, ("tidepool", prompt("one"), "e1"))
    async with serving(server.streamable_http_app(host="127.0.0.1")) as port:
        stored, said_ = await drain(spool, f"http://127.0.0.1:{port}/mcp")
    assert stored == 0
    (kept,) = [json.loads(line) for line in spool.rejects_path.read_text().splitlines()]
    assert (
        kept["reason"] == "an event the store refused: the server refused the event: first  second"
    )
    assert said_.endswith(": the server refused the event: first  second\n")
