"""The MCP `forget_row` tool: one row and what was made from it alone, within the client's
namespaces, a row of someone else's namespace as unknown as a missing one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from dirty_equals import IsPositiveInt
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from phi.errors import RowNotFound
from phi.mcp import McpOptions, build_server
from phi.memory import Memory, MiniLMEmbedder, NewRow

pytestmark = pytest.mark.anyio


async def _call(client: Client, tool: str, /, **arguments: Any) -> Any:
    return await client.call_tool(tool, arguments)


async def test_forget_row_only_when_allowed_and_only_within_the_prefix(memory: Memory) -> None:
    theirs = await memory.remember(NewRow(content="Bob pins httpx 0.27", namespace="bob-notes"))
    old = await memory.remember(NewRow(content="we pin httpx 0.27", namespace="alice-notes"))
    new = await memory.remember(
        NewRow(content="we pin httpx 0.28 now", namespace="alice-notes", supersedes=old.row_id)
    )
    fact = await memory.remember(
        NewRow(
            content="alice's team uses httpx 0.28",
            namespace="alice-facts",
            meta={"derived_from": [new.row_id]},
        )
    )
    copied = await memory.remember(
        NewRow(content="httpx 0.28", namespace="bob-notes", meta={"derived_from": [new.row_id]})
    )
    async with Client(build_server(memory, McpOptions(namespace_prefix="alice-"))) as alice:
        names = {tool.name for tool in (await alice.list_tools()).tools}
        assert "forget_row" not in names  # a hard delete is offered only when allowed
    options = McpOptions(namespace_prefix="alice-", allow_forget=True)
    async with Client(build_server(memory, options)) as alice:
        refused = await _call(alice, "forget_row", row_id=theirs.row_id, confirm=theirs.row_id)
        missing = await _call(alice, "forget_row", row_id="nope", confirm="nope")
        assert refused.is_error and missing.is_error
        # Word for word a missing row's message: nothing tells that bob's row exists.
        said = f"Error executing tool forget_row: {RowNotFound(theirs.row_id)}"
        assert refused.content[0].text == said
        assert missing.content[0].text == said.replace(theirs.row_id, "nope")
        unconfirmed = await _call(alice, "forget_row", row_id=new.row_id, confirm=old.row_id)
        assert unconfirmed.is_error
        assert "confirm must repeat the row id" in unconfirmed.content[0].text
        done = await _call(alice, "forget_row", row_id=new.row_id, confirm=new.row_id)
        assert not done.is_error, done.content
        assert done.structured_content == {
            "row_id": new.row_id,
            "rows": 2,
            "edges": IsPositiveInt,  # the supersedes edge and whatever links ingest made
            "kinds": {"note": 2},
            "erased": [new.row_id, fact.row_id],
            "derived": [fact.row_id],
            "reinstated": [old.row_id],
            "published": [],
        }
    assert (await memory.get(theirs.row_id)).content == "Bob pins httpx 0.27"
    assert (await memory.get(copied.row_id)).namespace == "bob-notes"  # outside: it stays
    assert (await memory.get(old.row_id)).status == "active"
    with pytest.raises(RowNotFound):
        await memory.get(fact.row_id)


async def test_forget_row_refuses_a_row_the_token_may_only_read(memory: Memory) -> None:
    team = await memory.remember(NewRow(content="the team pins httpx", namespace="team-notes"))
    mine = await memory.remember(NewRow(content="I pin httpx", namespace="alice-notes"))
    copied = await memory.remember(
        NewRow(content="httpx pinned", namespace="team-facts", meta={"derived_from": [mine.row_id]})
    )
    reader = McpOptions(namespace_prefix="alice-", allow_forget=True, also_read=("team-",))
    async with Client(build_server(memory, reader)) as alice:
        refused = await _call(alice, "forget_row", row_id=team.row_id, confirm=team.row_id)
        assert refused.is_error
        assert "namespace 'team-notes' is read-only for this client" in refused.content[0].text
        done = await _call(alice, "forget_row", row_id=mine.row_id, confirm=mine.row_id)
        # The copy in the team's namespace is not the client's to erase: it stays.
        assert done.structured_content["erased"] == [mine.row_id]
    viewer = McpOptions(namespace_prefix="team-", allow_forget=True, read_only=True)
    async with Client(build_server(memory, viewer)) as bob:
        refused = await _call(bob, "forget_row", row_id=team.row_id, confirm=team.row_id)
        assert refused.is_error and "read-only for this client" in refused.content[0].text
    assert (await memory.get(team.row_id)).namespace == "team-notes"
    assert (await memory.get(copied.row_id)).namespace == "team-facts"


TOKEN_A = "a" * 8 + "5e1c0b9d27f84a36e0c9b1d4"
TOKEN_B = "b" * 8 + "c3a9e7f1046d2b58a1f0e9c2"


@asynccontextmanager
async def _remote(url: str, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as mcp,
    ):
        yield mcp


async def test_forget_row_over_http_stays_within_the_token(
    tmp_path: Path, minilm: MiniLMEmbedder, serve_http: Callable[..., str]
) -> None:
    db = tmp_path / "remote.db"
    async with Memory.open(db, embedder=minilm) as memory:
        theirs = await memory.remember(NewRow(content="b pins httpx", namespace="team-b-notes"))
        mine = await memory.remember(NewRow(content="a pins httpx", namespace="team-a-notes"))
    tokens = tmp_path / "tokens"
    tokens.write_text(f"team-a- {TOKEN_A}\nteam-b- {TOKEN_B}\n")
    tokens.chmod(0o600)
    url = serve_http(db, "--token-file", str(tokens), "--allow-forget")
    async with _remote(url, TOKEN_A) as team_a:
        refused = await _call(team_a, "forget_row", row_id=theirs.row_id, confirm=theirs.row_id)
        assert refused.is_error
        assert refused.content[0].text.endswith(str(RowNotFound(theirs.row_id)))
        done = await _call(team_a, "forget_row", row_id=mine.row_id, confirm=mine.row_id)
        assert not done.is_error, done.content
        assert done.structured_content["erased"] == [mine.row_id]
    async with Memory.open(db, embedder=minilm) as memory:
        assert (await memory.get(theirs.row_id)).content == "b pins httpx"
        with pytest.raises(RowNotFound):
            await memory.get(mine.row_id)
