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
    db = str(tmp_path / "m.db")
    done = runner.invoke(app, ["mcp", "--http", "--token-file", str(short), "--db", db])
    assert done.exit_code == 2
    assert "token is 3 characters; use at least 24" in done.output
    done = runner.invoke(app, ["mcp", "--token-file", str(short), "--db", db])
    assert done.exit_code == 2
    assert "--token-file needs --http" in done.output
