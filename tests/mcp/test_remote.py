"""Remote MCP: `phi mcp --http --token-file` refuses a client without a valid bearer token
and confines each token to its namespace prefix."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from typer.testing import CliRunner

from mcp import Client
from phi.cli import app
from phi.errors import InvalidInput
from phi.mcp._scope import Scope, within
from phi.mcp.remote import load_tokens
from phi.memory import Memory, MiniLMEmbedder, NewRow

pytestmark = pytest.mark.anyio

TOKEN_A = "a" * 8 + "3f9c2e71b04d5a68c1e9f2d7"
TOKEN_B = "b" * 8 + "7d1e0c93a5b2f4e86d0c1a3b"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


@asynccontextmanager
async def client(url: str, token: str) -> AsyncIterator[Client]:
    """An MCP client sending `token`; the HTTP client is ours to close (the SDK's is not)."""
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, read_timeout_seconds=120) as mcp:
            yield mcp


def post(url: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(INITIALIZE).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def result(mcp: Client, tool: str, /, **arguments: Any) -> tuple[bool, Any]:
    done = await mcp.call_tool(tool, arguments)
    if done.is_error:
        return True, done.content[0].text  # type: ignore[union-attr]
    return False, done.structured_content


async def test_tokens_are_required_and_confined_to_their_prefix(
    tmp_path: Path, minilm: MiniLMEmbedder, serve_http: Callable[..., str]
) -> None:
    db = tmp_path / "remote.db"
    async with Memory.open(db, embedder=minilm) as memory:
        theirs = await memory.remember(
            NewRow(content="team b's launch date is March 3", namespace="team-b-notes")
        )
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# prefix token\nteam-a- {TOKEN_A}\nteam-b- {TOKEN_B}  # team b\n")
    tokens.chmod(0o600)  # others may not read it (tests/security/test_private_files.py)
    url = serve_http(db, "--token-file", str(tokens))

    assert post(url, {}) == (
        401,
        {"error": "missing bearer token (Authorization: Bearer <token>)"},
    )
    assert post(url, {"Authorization": f"Bearer {TOKEN_A[:-1]}x"}) == (
        401,
        {"error": "unknown bearer token"},
    )
    assert post(url, {"Authorization": f"Basic {TOKEN_A}"})[0] == 401
    # Finding 11a: exact, not "starts with" either way (a loosened compare let these in).
    for near in (f"{TOKEN_A}x", TOKEN_A[:-1], f"{TOKEN_A} {TOKEN_B}", TOKEN_A.upper()):
        assert post(url, {"Authorization": f"Bearer {near}"}) == (
            401,
            {"error": "unknown bearer token"},
        ), near
    assert post(url, {"Authorization": f"Bearer {TOKEN_A}"})[0] == 200

    async with client(url, TOKEN_A) as team_a:
        failed, mine = await result(
            team_a, "remember", content="team a ships on Friday", namespace="team-a-notes"
        )
        assert not failed
        failed, found = await result(team_a, "recall", query="when do we ship or launch?")
        assert not failed
        assert [hit["row_id"] for hit in found["results"]] == [mine["row_id"]]
        failed, message = await result(
            team_a, "remember", content="sneaky", namespace="team-b-notes"
        )
        assert failed
        assert "outside this server's prefix 'team-a-'" in message
        failed, message = await result(
            team_a, "recall", query="launch", namespaces=["team-b-notes"]
        )
        assert failed
        failed, message = await result(team_a, "history", row_id=theirs.row_id)
        assert (failed, message.endswith(f"no memory row with id {theirs.row_id!r}")) == (
            True,
            True,
        )

    async with client(url, TOKEN_B) as team_b:
        failed, found = await result(team_b, "recall", query="when do we ship or launch?")
        assert not failed
        assert [hit["row_id"] for hit in found["results"]] == [theirs.row_id]


def test_token_file_is_checked(tmp_path: Path) -> None:
    runner = CliRunner()
    short = tmp_path / "short"
    short.write_text("team-a- abc\n")
    short.chmod(0o600)
    db = str(tmp_path / "m.db")
    done = runner.invoke(app, ["mcp", "--http", "--token-file", str(short), "--db", db])
    assert done.exit_code == 2
    assert "token is 3 characters; use at least 24" in done.output
    done = runner.invoke(app, ["mcp", "--token-file", str(short), "--db", db])
    assert done.exit_code == 2
    assert "--token-file needs --http" in done.output


@pytest.mark.parametrize(
    ("namespace", "prefix", "inside"),
    [
        ("alpha", "alpha", True),
        ("alpha-notes", "alpha", True),
        ("alpha.x", "alpha", True),
        ("alpha:x", "alpha", True),
        ("alpha_x", "alpha", True),
        ("alphabet-secret", "alpha", False),
        ("alpha%2Fx", "alpha", False),
        ("alph", "alpha", False),
        ("team-a-notes", "team-a-", True),
        ("team-a-", "team-a-", True),
        ("team-ab", "team-a-", False),
        ("team-a", "team-a-", False),
    ],
)
def test_a_prefix_covers_namespaces_at_a_boundary_only(
    namespace: str, prefix: str, inside: bool
) -> None:
    """Finding 11a: `alpha` covers `alpha` and `alpha-...`, not `alphabet-...`."""
    assert within(namespace, prefix) is inside
    assert Scope(prefix=prefix).allows(namespace) is inside


def test_a_default_namespace_is_put_under_the_prefix_at_a_boundary() -> None:
    assert Scope(prefix="alpha").place("agent-sessions") == "alpha-agent-sessions"
    assert Scope(prefix="alpha").place("alpha.sessions") == "alpha.sessions"
    assert Scope(prefix="team-a-").place("agent-sessions") == "team-a-agent-sessions"
    assert Scope(prefix="alpha").place("alphabet-sessions") == "alpha-alphabet-sessions"
    assert Scope().place("agent-sessions") == "agent-sessions"


async def test_a_token_for_alpha_cannot_reach_alphabet(
    tmp_path: Path, minilm: MiniLMEmbedder, serve_http: Callable[..., str]
) -> None:
    """Finding 11a over the real server: the holder of `alpha` reads and writes `alpha` and
    `alpha-...`, and neither sees nor touches `alphabet-secret`."""
    db = tmp_path / "remote.db"
    async with Memory.open(db, embedder=minilm) as memory:
        secret = await memory.remember(
            NewRow(content="the launch code is in the blue folder", namespace="alphabet-secret")
        )
        notes = await memory.remember(
            NewRow(content="the launch party is on Friday", namespace="alpha-notes")
        )
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alpha {TOKEN_A}\nalphabet- {TOKEN_B}\n")
    tokens.chmod(0o600)
    url = serve_http(db, "--token-file", str(tokens))

    async with client(url, TOKEN_A) as alpha:
        failed, found = await result(alpha, "recall", query="the launch")
        assert not failed
        assert [hit["row_id"] for hit in found["results"]] == [notes.row_id]
        attempts: list[tuple[str, dict[str, Any]]] = [
            ("recall", {"query": "launch", "namespaces": ["alphabet-secret"]}),
            ("remember", {"content": "planted", "namespace": "alphabet-secret"}),
            ("remember", {"content": "planted", "namespace": "alphabetx"}),
        ]
        for tool, arguments in attempts:
            failed, message = await result(alpha, tool, **arguments)
            assert failed, (tool, arguments)
            assert "outside this server's prefix 'alpha'" in message
        failed, message = await result(alpha, "history", row_id=secret.row_id)
        assert failed and message.endswith(f"no memory row with id {secret.row_id!r}")
        failed, mine = await result(alpha, "remember", content="ok", namespace="alpha")
        assert (failed, mine["namespace"]) == (False, "alpha")
        failed, captured = await result(
            alpha, "capture", session="s1", kind="decision", content="ship it"
        )
        assert not failed

    async with Memory.open(db, embedder=minilm) as memory:
        secret_rows = [row.content async for row in memory.export(namespace="alphabet-secret")]
        sessions = [row.namespace async for row in memory.export(namespace="alpha-agent-sessions")]
    assert secret_rows == ["the launch code is in the blue folder"]
    assert sessions == ["alpha-agent-sessions"] * len(captured["row_ids"])


def test_a_token_given_twice_is_refused_at_load(tmp_path: Path) -> None:
    """Finding 11a: two lines with one token would give it whichever prefix came first."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"team-a- {TOKEN_A}\n\nteam-b- {TOKEN_A}\n")
    tokens.chmod(0o600)
    with pytest.raises(InvalidInput, match=rf"^{tokens}:3: the same token is given twice$"):
        load_tokens(tokens)
    done = CliRunner().invoke(
        app, ["mcp", "--http", "--token-file", str(tokens), "--db", str(tmp_path / "m.db")]
    )
    assert done.exit_code == 2
    assert "the same token is given twice" in done.output


def test_a_token_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    """Finding 11b: no traceback, one line naming the file, exit 2."""
    tokens = tmp_path / "tokens"
    tokens.write_bytes(f"caf\xe9 {TOKEN_A}\n".encode("latin-1"))
    tokens.chmod(0o600)
    db = tmp_path / "m.db"
    done = CliRunner().invoke(app, ["mcp", "--http", "--token-file", str(tokens), "--db", str(db)])
    assert done.exit_code == 2, done.output
    assert f"token file {str(tokens)!r} is not UTF-8 text (byte 3)" in done.output
    assert "Traceback" not in done.output
    assert len(done.output.strip().splitlines()) == 1
