"""Bad arguments reach an MCP client as a tool error naming the problem; nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest

from mcp import Client
from phi.mcp import build_server
from phi.memory import Memory, NewRow

from .test_server import error

pytestmark = pytest.mark.anyio

LONE = "\ud800"

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("remember", {"content": f"a{LONE}", "namespace": "notes"}, "content is not valid UTF-8"),
    ("remember", {"content": "a", "namespace": "notes", "tags": [LONE]}, "tag is not valid"),
    (
        "remember",
        {"content": "a", "namespace": "notes", "source_uris": [f"https://x/{LONE}"]},
        "source URI is not valid",
    ),
    ("remember", {"content": "a", "namespace": "notes", "author": "bob"}, "not a DID: 'bob'"),
    (
        "remember",
        {"content": "a", "namespace": "notes", "author": "did:plc:bob\n"},
        "not a DID",
    ),
    ("remember", {"content": "a", "namespace": "notes\n"}, "invalid namespace"),
    ("capture", {"session": LONE, "kind": "decision", "content": "a"}, "meta is not valid"),
    ("capture", {"session": "s", "kind": "decision", "content": LONE}, "content is not valid"),
    ("recall", {"query": f"a{LONE}"}, "query is not valid"),
    ("recall", {"query": "a", "author": LONE}, "author is not valid"),
    ("recall", {"query": "a", "person": "did:plc:bob\n"}, "not a DID"),
    ("preload", {"hint": f"a{LONE}"}, "hint is not valid"),
    ("history", {"row_id": LONE}, "row id is not valid"),
    ("neighbors", {"row_id": LONE}, "row id is not valid"),
]


@pytest.mark.parametrize(("tool", "arguments", "message"), BAD_CALLS)
async def test_bad_arguments_are_named_tool_errors(
    memory: Memory, tool: str, arguments: dict[str, Any], message: str
) -> None:
    kept = await memory.remember(NewRow(content="an earlier note", namespace="notes"))
    async with Client(build_server(memory)) as client:
        assert message in await error(client, tool, **arguments)
    assert [row async for row in memory.export()] == [kept]
