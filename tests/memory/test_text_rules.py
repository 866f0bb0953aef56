"""One rule for text on every surface (issue 23, finding 9): what some store cannot keep (a
NUL character: PostgreSQL refuses it; a lone surrogate: nothing encodes it as UTF-8) is
refused by the library before any store sees it, with the same message naming the field
and the position, on SQLite and PostgreSQL, from the library, the CLI, the HTTP API (a real
server on loopback) and MCP. Nothing is written."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from mcp import Client
from phi.cli import app as cli
from phi.errors import InvalidInput
from phi.mcp import build_server
from phi.memory import Memory, NewRow, Turn
from phi.memory.model import validate_text
from phi.memory.store import RowFilter, open_store
from phi.web import create_app
from tests.postgres.schemas import fresh_schema_sync

pytestmark = pytest.mark.anyio

NUL = "\x00"
LONE = "\ud800"
TOKEN = "s3cret-token"

BAD_ROWS: list[tuple[dict[str, Any], str]] = [
    ({"content": f"ab{NUL}c"}, r"content holds a NUL character at position 2\b"),
    ({"tags": ["ok", f"t{NUL}"]}, r"tag holds a NUL character at position 1\b"),
    ({"source_uris": [f"at://x.test/{NUL}"]}, r"source URI holds a NUL character at position 12"),
    ({"author": f"did:plc:a{NUL}"}, r"author holds a NUL character at position 9"),
    ({"supersedes": f"r{NUL}"}, r"supersedes holds a NUL character at position 1"),
    ({"thread": f"at://t/{NUL}"}, r"meta holds a NUL character at position 7"),
    ({"meta": {"k": f"x{NUL}"}}, r"meta\['k'\] holds a NUL character at position 1"),
    ({"meta": {f"k{NUL}": 1}}, r"meta key 'k\\x00' holds a NUL character at position 1"),
    (
        {"meta": {"turns": [{"text": "fine"}, {"text": f"{NUL}"}]}},
        r"meta\['turns'\]\[1\]\['text'\] holds a NUL character at position 0",
    ),
    (
        {"meta": {"a": [f"x{LONE}"]}},
        r"meta\['a'\]\[0\] is not valid UTF-8 text: .* lone surrogate at position 1",
    ),
]


@pytest.mark.parametrize(("change", "message"), BAD_ROWS)
async def test_a_row_no_store_can_keep_is_refused_by_field_and_position(
    memory: Memory, change: dict[str, Any], message: str
) -> None:
    arguments: dict[str, Any] = {"content": "hello", "namespace": "notes", **change}
    with pytest.raises(InvalidInput, match=message):
        await memory.remember(NewRow(**arguments))
    with pytest.raises(InvalidInput, match=message):  # in a batch with a good row: neither
        await memory.remember_many(
            [NewRow(content="a good row", namespace="notes"), NewRow(**arguments)]
        )
    assert (await memory.stats()).rows == 0


async def test_an_interaction_and_reads_and_state_follow_the_same_rule(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="content holds a NUL character at position 13"):
        await memory.remember(
            NewRow.interaction([Turn(speaker="@ann.test", text=f"hi{NUL}")], namespace="notes")
        )
    kept = await memory.remember(NewRow(content="hello there", namespace="notes"))
    with pytest.raises(InvalidInput, match="query holds a NUL character at position 5"):
        await memory.search(f"hello{NUL}")
    with pytest.raises(InvalidInput, match="query holds a NUL character at position 5"):
        await memory.search_kinds(f"hello{NUL}", {"note": 3})
    with pytest.raises(InvalidInput, match="hint holds a NUL character"):
        await memory.preload(f"hello{NUL}")
    with pytest.raises(InvalidInput, match="row id holds a NUL character at position 0"):
        await memory.get(f"{NUL}{kept.row_id}")
    with pytest.raises(InvalidInput, match="state value holds a NUL character at position 3"):
        await memory.state.write("gate", "k", f"abc{NUL}")
    with pytest.raises(InvalidInput, match="state key holds a NUL character at position 1"):
        await memory.state.write("gate", f"k{NUL}", "v")
    assert await memory.state.keys("gate") == []
    assert [row async for row in memory.export()] == [kept]


def test_the_message_is_one_line_and_clipped() -> None:
    long = "x" * 5000 + NUL + "y" * 5000
    with pytest.raises(InvalidInput) as caught:
        validate_text(long, what="content")
    message = str(caught.value)
    assert "\n" not in message and len(message) < 300, message
    assert "content holds a NUL character at position 5000" in message
    assert validate_text("tab\tand newline\n are fine", what="content")


async def rows_in(location: str) -> int:
    store = open_store(location)
    await store.connect()
    try:
        return await store.count(RowFilter(statuses=None))
    finally:
        await store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_cli_refuses_nul_from_standard_input_in_one_line(backend: str, tmp_path: Path) -> None:
    runner = CliRunner()

    def check(db: str) -> None:
        added = ["memory", "add", "-", "-n", "notes", "--db", db]
        result = runner.invoke(cli, added, input="a\x00b")
        assert result.exit_code == 2, result.output
        *notes, last = result.output.splitlines()  # a note that the store was made, at most
        assert last.startswith("error: content holds a NUL character at position 1"), last
        assert len(notes) <= 1 and "Traceback" not in result.output, result.output
        assert anyio.run(rows_in, db) == 0

    if backend == "sqlite":
        check(str(tmp_path / "memory.db"))
        return
    with fresh_schema_sync() as url:
        check(url)


@asynccontextmanager
async def serving(memory: Memory) -> AsyncIterator[str]:
    """The web app over `memory` on a free loopback port, in this test's event loop. The
    socket listens before the server starts: a request waits in its backlog until then."""
    config = uvicorn.Config(create_app(memory=memory, token=TOKEN), log_level="warning")
    server = uvicorn.Server(config)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.serve, [sock])
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"content": f"a{NUL}"}, "content holds a NUL character at position 1"),
        ({"tags": [f"{NUL}t"]}, "tag holds a NUL character at position 0"),
        ({"source_uris": [f"at://{NUL}"]}, "source URI holds a NUL character at position 5"),
    ],
)
async def test_http_refuses_nul_with_a_400_naming_it(
    memory: Memory, body: dict[str, Any], message: str
) -> None:
    async with serving(memory) as base, httpx.AsyncClient(base_url=base) as http:
        refused = await http.post(
            "/api/memory/rows",
            json={"content": "hello", "namespace": "notes", **body},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert refused.status_code == 400, refused.text
        assert message in refused.json()["detail"]
        searched = await http.get("/api/memory/search", params={"q": f"hello{NUL}"})
        assert searched.status_code == 400
        assert "query holds a NUL character at position 5" in searched.json()["detail"]
    assert (await memory.stats()).rows == 0


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("remember", {"content": f"a{NUL}", "namespace": "notes"}, "content holds a NUL"),
        ("remember", {"content": "a", "namespace": "notes", "tags": [NUL]}, "tag holds a NUL"),
        ("capture", {"session": f"s{NUL}", "kind": "decision", "content": "a"}, "meta holds"),
        ("capture", {"session": "s", "kind": "decision", "content": f"{NUL}"}, "content holds"),
        ("recall", {"query": f"a{NUL}"}, "query holds a NUL character at position 1"),
    ],
)
async def test_mcp_refuses_nul_as_a_named_tool_error(
    memory: Memory, tool: str, arguments: dict[str, Any], message: str
) -> None:
    async with Client(build_server(memory)) as client:
        result = await client.call_tool(tool, arguments)
        assert result.is_error
        assert message in result.content[0].text  # type: ignore[union-attr]
    assert (await memory.stats()).rows == 0
