"""Remote MCP in this process: the token file's rules and messages, the refusals as an ASGI
server receives them, and each token's own confined server behind a real uvicorn on
127.0.0.1 (test_remote.py runs the same through `phi mcp --http` in a child process)."""

from __future__ import annotations

import io
import json
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from phi.errors import InvalidInput
from phi.mcp.remote import AsgiApp, TokenScope, build_remote_app, load_tokens
from phi.mcp.server import McpOptions
from phi.memory import Memory, NewRow
from tests._serving import serving

from .test_remote import INITIALIZE, TOKEN_A, TOKEN_B, client, result

pytestmark = pytest.mark.anyio

Message = MutableMapping[str, Any]
TOKENS = [TokenScope(token=TOKEN_A, prefix="team-a-"), TokenScope(token=TOKEN_B, prefix="team-b-")]


def token_file(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "tokens"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    path.chmod(0o600)
    return path


def refused(path: Path, text: str | bytes) -> str:
    with pytest.raises(InvalidInput) as caught:
        load_tokens(token_file(path, text))
    return str(caught.value)


def test_a_token_file_gives_each_token_its_prefix(tmp_path: Path) -> None:
    text = (
        "# prefix token  # a comment may hold '#' too\n"
        "\n"
        f"  team-a- {TOKEN_A}   # team a # since March\n"
        f"team-b-\t{'b' * 24}\n"
    )
    assert load_tokens(token_file(tmp_path, text)) == [
        TokenScope(token=TOKEN_A, prefix="team-a-"),
        TokenScope(token="b" * 24, prefix="team-b-"),
    ]


def test_each_mistake_in_a_token_file_is_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    # A third field makes the line a `NAME TOKEN GRANT...` one (team capture, issue 26).
    assert refused(tmp_path, f"team-a- {TOKEN_A}\nteam-b- {TOKEN_B} extra\n") == (
        f"{path}:2: grant 'extra' is not 'rw:PREFIX' or 'ro:PREFIX' (e.g. 'ro:team-')"
    )
    assert refused(tmp_path, f"team-a- {TOKEN_A}\n{TOKEN_B}\n") == (
        f"{path}:2: expected 'PREFIX TOKEN' or 'NAME TOKEN GRANT...', got 1 field(s)"
    )
    assert refused(tmp_path, f"team-a- {'a' * 23}\n") == (
        f"{path}:1: token is 23 characters; use at least 24 (e.g. `openssl rand -hex 16`)"
    )
    assert refused(tmp_path, "# nothing yet\n\n") == f"token file {str(path)!r} holds no tokens"
    assert refused(tmp_path, f"caf\xe9 {TOKEN_A}\n".encode("latin-1")) == (
        f"token file {str(path)!r} is not UTF-8 text (byte 3); write it as "
        "'PREFIX TOKEN' lines, e.g. with `openssl rand -hex 16`"
    )
    missing = tmp_path / "missing"
    with pytest.raises(InvalidInput) as caught:
        load_tokens(missing)
    assert str(caught.value) == (
        f"cannot read token file {str(missing)!r}: No such file or directory"
    )


def test_a_utf8_token_file_reads_the_same_whatever_the_locale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server started from a shell whose locale is ASCII (C without UTF-8 mode) reads the
    same file the same. The locale is stood in for where `pathlib` asks for it,
    `io.text_encoding`: a child process with `LC_ALL=C PYTHONUTF8=0` shows the same but takes
    seconds to start."""
    path = token_file(tmp_path, f"caf\u00e9- {TOKEN_A}\n")
    monkeypatch.setattr(io, "text_encoding", lambda encoding, *_: encoding or "ascii")
    assert [t.prefix for t in load_tokens(path)] == ["caf\u00e9-"]


async def call(
    app: AsgiApp, scope: Message, messages: list[Message] | None = None
) -> list[Message]:
    """Hand `app` one connection as an ASGI server would; what it sent back."""
    incoming = list(messages or [{"type": "http.request", "body": b"", "more_body": False}])
    sent: list[Message] = []

    async def receive() -> Message:
        return incoming.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def request(*headers: tuple[bytes, bytes], kind: str = "http") -> Message:
    return {"type": kind, "method": "POST", "path": "/mcp", "headers": list(headers)}


def refusal(error: str) -> list[Message]:
    body = json.dumps({"error": error}).encode()
    return [
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="phi-memory"'),
            ],
        },
        {"type": "http.response.body", "body": body},
    ]


async def test_a_request_without_a_known_bearer_token_is_refused_before_mcp(
    memory: Memory,
) -> None:
    app = build_remote_app(memory, TOKENS)
    missing = refusal("missing bearer token (Authorization: Bearer <token>)")
    assert await call(app, request()) == missing
    assert await call(app, request((b"accept", b"*/*"))) == missing
    assert await call(app, request((b"authorization", f"Basic {TOKEN_A}".encode()))) == missing
    assert await call(app, request((b"authorization", TOKEN_A.encode()))) == missing
    unknown = refusal("unknown bearer token")
    for near in (f"{TOKEN_A}x", TOKEN_A[:-1], TOKEN_A.upper(), ""):
        sent = await call(app, request((b"authorization", f"Bearer {near}".encode())))
        assert sent == unknown, near
    # Neither a websocket nor any other kind of connection is served at all.
    bearer = (b"authorization", f"Bearer {TOKEN_A}".encode())
    assert await call(app, request(bearer, kind="websocket")) == []


async def test_the_app_starts_and_stops_each_tokens_server(memory: Memory) -> None:
    app = build_remote_app(memory, TOKENS)
    sent = await call(
        app,
        {"type": "lifespan"},
        [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}],
    )
    assert sent == [{"type": "lifespan.startup.complete"}, {"type": "lifespan.shutdown.complete"}]


async def test_each_token_reaches_its_own_confined_server(memory: Memory) -> None:
    theirs = await memory.remember(
        NewRow(content="team b launches on March 3", namespace="team-b-notes")
    )
    options = McpOptions(allow_forget=True, session_namespace="sessions")
    async with serving(build_remote_app(memory, TOKENS, options)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        # Spelled `bearer`, with spaces before the token: still the token.
        async with httpx.AsyncClient() as http:
            answer = await http.post(
                url,
                json=INITIALIZE,
                headers={
                    "Authorization": f"bearer   {TOKEN_B}",
                    "Accept": "application/json, text/event-stream",
                },
            )
            assert answer.status_code == 200, answer.text
            # A page that re-points its name at 127.0.0.1 is refused even with a token.
            rebound = await http.post(
                url,
                json=INITIALIZE,
                headers={
                    "Authorization": f"Bearer {TOKEN_B}",
                    "Host": "attacker.example",
                    "Accept": "application/json, text/event-stream",
                },
            )
            assert rebound.status_code == 421, rebound.text
        async with client(url, TOKEN_A) as team_a:
            tools = {tool.name for tool in (await team_a.list_tools()).tools}
            assert "forget" in tools  # the options given reach every token's server
            failed, message = await result(
                team_a, "remember", content="sneaky", namespace="team-b-notes"
            )
            assert (failed, message) == (
                True,
                "Error executing tool remember: namespace 'team-b-notes' is outside this "
                "server's prefix 'team-a-'; use a namespace like 'team-a-notes'",
            )
            failed, captured = await result(
                team_a, "capture", session="s1", kind="decision", content="ship it"
            )
            assert not failed
        async with client(url, TOKEN_B) as team_b:
            failed, found = await result(team_b, "recall", query="when does team b launch?")
            assert not failed
            assert [hit["row_id"] for hit in found["results"]] == [theirs.row_id]
    sessions = [row.namespace async for row in memory.export(namespace="team-a-sessions")]
    assert sessions == ["team-a-sessions"] * len(captured["row_ids"])
