"""`capture_event` in this process: the MCP server a token reaches, called through the SDK's
in-process client, on a real SQLite store. Where a token's scope puts the hook's rows, who
they say wrote them, that an event id stores once, that the transcript the client sent is
the one read (a path in the payload never is), the transcript's size bound, and which
failures are tool errors (set aside by the client) or protocol errors (kept queued).
test_team_capture.py shows the same through `phi mcp --http` and the hook as child processes;
these are the fast tests `scripts/mutate` runs against `phi.mcp.hook_tool`."""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import apsw
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from mcp import Client
from phi.errors import NamespaceNotFound
from phi.mcp.hook_tool import MAX_TRANSCRIPT_CHARS
from phi.mcp.server import McpOptions, build_server
from phi.memory import Memory, MiniLMEmbedder, Row
from phi.memory.store.sqlite import SQLiteStore

pytestmark = pytest.mark.anyio

TOOL = "capture_event"
SDK_PREFIX = f"Error executing tool {TOOL}: "
ALICE = McpOptions(namespace_prefix="alice-", also_read=("team-",))
"""alice's token: `rw:alice- ro:team-`."""
READ_ONLY = (
    "is read-only for this client (its token may read it, not write it); write with a token"
    " that has it read-write"
)


def prompt(text: str, *, session: str = "s1") -> str:
    return json.dumps(
        {"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": text}
    )


def said(uuid: str, text: str) -> str:
    """One assistant entry of a Claude Code transcript."""
    entry = {
        "uuid": uuid,
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
    }
    return json.dumps(entry)


@asynccontextmanager
async def connected(
    memory: Memory, options: McpOptions = ALICE, *, writer: str = "alice"
) -> AsyncIterator[Client]:
    """The server `writer`'s token reaches (`phi.mcp.remote` builds the same), in process."""
    async with Client(build_server(memory.as_writer(writer), options)) as client:
        yield client


async def call(client: Client, **arguments: Any) -> tuple[bool, Any]:
    """(is_error, the error's text or the structured result)."""
    done = await client.call_tool(TOOL, arguments)
    if done.is_error:
        return True, " ".join(getattr(part, "text", "") for part in done.content)
    return False, done.structured_content


async def rows(memory: Memory, namespace: str) -> list[Row]:
    try:
        return [row async for row in memory.export(namespace=namespace)]
    except NamespaceNotFound:  # nothing was ever written there
        return []


async def test_the_tool_asks_for_a_hook_event_its_id_a_namespace_and_a_transcript(
    memory: Memory,
) -> None:
    async with connected(memory) as client:
        (tool,) = [t for t in (await client.list_tools()).tools if t.name == TOOL]
    schema = tool.input_schema
    assert schema["required"] == ["payload", "event"]
    described = {name: field.get("description") for name, field in schema["properties"].items()}
    assert described == {
        "payload": "The hook event as the host wrote it (JSON).",
        "event": "The event's id: sent twice, stored once.",
        "namespace": "Default: the server's.",
        "transcript": "The session transcript's last lines (JSON lines), if any.",
    }
    assert schema["properties"]["namespace"]["default"] is None
    assert schema["properties"]["transcript"] == {
        "default": "",
        "description": "The session transcript's last lines (JSON lines), if any.",
        "title": "Transcript",
        "type": "string",  # not `str | None`: a one-line transcript would arrive parsed
    }


async def test_the_tokens_scope_decides_where_the_rows_go(memory: Memory) -> None:
    async with connected(memory) as client:
        # A project's name outside the token's prefix is put under it.
        failed, placed = await call(client, payload=prompt("one"), event="e1", namespace="tidepool")
        assert not failed, placed
        # One inside it stays as it is.
        failed, mine = await call(
            client, payload=prompt("two"), event="e2", namespace="alice-notes"
        )
        assert not failed, mine
        # None named: the server's default, placed under the prefix.
        failed, default = await call(client, payload=prompt("three"), event="e3")
        assert not failed, default
        # A namespace the token may only read is refused by name.
        failed, message = await call(
            client, payload=prompt("four"), event="e4", namespace="team-plan"
        )
        assert (failed, message) == (True, f"{SDK_PREFIX}namespace 'team-plan' {READ_ONLY}")
    stored = {
        ns: [
            (r.content, r.written_by, r.meta["event"], r.meta["session"])
            for r in await rows(memory, ns)
        ]
        for ns in ("alice-tidepool", "alice-notes", "alice-agent-sessions", "team-plan", "tidepool")
    }
    assert stored == {
        "alice-tidepool": [("user: one", "alice", "e1", "s1")],
        "alice-notes": [("user: two", "alice", "e2", "s1")],
        "alice-agent-sessions": [("user: three", "alice", "e3", "s1")],
        "team-plan": [],
        "tidepool": [],
    }
    # What the tool answers: the event's name and the rows it wrote, by id.
    assert placed == {
        "event": "UserPromptSubmit",
        "row_ids": [r.row_id for r in await rows(memory, "alice-tidepool")],
    }


async def test_a_read_only_token_writes_nowhere(memory: Memory) -> None:
    ci = McpOptions(namespace_prefix="alice-", read_only=True)
    async with connected(memory, ci, writer="ci") as client:
        failed, message = await call(client, payload=prompt("x"), event="e1", namespace="tidepool")
    assert (failed, message) == (True, f"{SDK_PREFIX}namespace 'alice-tidepool' {READ_ONLY}")
    assert await rows(memory, "alice-tidepool") == []


async def test_an_event_sent_twice_is_stored_once(memory: Memory) -> None:
    async with connected(memory) as client:
        first = await call(client, payload=prompt("ship it"), event="e1", namespace="tidepool")
        again = await call(client, payload=prompt("ship it"), event="e1", namespace="tidepool")
        assert first == again and not first[0]
        stored = await rows(memory, "alice-tidepool")
        assert [r.row_id for r in stored] == first[1]["row_ids"]
        # The same words from another event are another event.
        other = await call(client, payload=prompt("ship it"), event="e2", namespace="tidepool")
    stored = await rows(memory, "alice-tidepool")
    assert [(r.content, r.meta["event"]) for r in stored] == [
        ("user: ship it", "e1"),
        ("user: ship it", "e2"),
    ]
    assert [r.row_id for r in stored][1:] == other[1]["row_ids"]


def stop(**fields: Any) -> str:
    return json.dumps({"hook_event_name": "Stop", "session_id": "s1", **fields})


async def test_the_transcript_sent_is_the_one_read(memory: Memory, tmp_path: Path) -> None:
    transcript = (
        "\n".join([said("u1", "the clock was naive"), said("u2", "fixed: aware UTC")]) + "\n"
    )
    laptop_path = str(tmp_path / "on-the-laptop" / "transcript.jsonl")  # no such file here
    async with connected(memory) as client:
        failed, done = await call(
            client,
            payload=stop(transcript_path=laptop_path),
            event="e1",
            namespace="tidepool",
            transcript=transcript,
        )
    assert not failed, done
    stored = await rows(memory, "alice-tidepool")
    assert [(r.content, r.meta["said"], r.written_by) for r in stored] == [
        ("assistant: the clock was naive", "u1", "alice"),
        ("assistant: fixed: aware UTC", "u2", "alice"),
    ]
    assert done == {"event": "Stop", "row_ids": [r.row_id for r in stored]}


async def test_a_subagents_transcript_sent_is_the_one_read(memory: Memory, tmp_path: Path) -> None:
    """A subagent's stop reads `agent_transcript_path`: it points at the copy sent too."""
    server_file = tmp_path / "main.jsonl"
    server_file.write_text(said("m1", "the main session's words") + "\n")
    payload = json.dumps(
        {
            "hook_event_name": "SubagentStop",
            "session_id": "s1",
            "transcript_path": str(server_file),
            "agent_transcript_path": str(tmp_path / "on-the-laptop" / "agent.jsonl"),
        }
    )
    async with connected(memory) as client:
        failed, done = await call(
            client,
            payload=payload,
            event="e1",
            namespace="tidepool",
            transcript=said("a1", "subagent says"),
        )
    assert not failed, done
    stored = await rows(memory, "alice-tidepool")
    assert [(r.content, r.meta["said"]) for r in stored] == [("assistant: subagent says", "a1")]


async def test_a_path_in_the_payload_is_never_opened_on_the_server(
    memory: Memory, tmp_path: Path
) -> None:
    """Without a transcript sent, the payload's paths are dropped: a client cannot make the
    server read its own files. A Stop without one keeps the host's last message instead."""
    secret = tmp_path / "server-only.jsonl"
    secret.write_text(said("x1", "the server's private notes") + "\n")
    for key in ("transcript_path", "agent_transcript_path"):
        payload = json.dumps(
            {
                "hook_event_name": "SubagentStop" if key.startswith("agent") else "Stop",
                "session_id": f"s-{key}",
                key: str(secret),
            }
        )
        async with connected(memory) as client:
            failed, done = await call(
                client, payload=payload, event=f"e-{key}", namespace="tidepool"
            )
        assert (failed, done) == (
            False,
            {"event": json.loads(payload)["hook_event_name"], "row_ids": []},
        )
    async with connected(memory) as client:
        failed, done = await call(
            client,
            payload=stop(transcript_path=str(secret), last_assistant_message="all green"),
            event="e3",
            namespace="tidepool",
        )
    assert not failed, done
    stored = await rows(memory, "alice-tidepool")
    assert [r.content for r in stored] == ["assistant: all green"]


async def test_a_one_line_transcript_is_taken_as_text(memory: Memory) -> None:
    """A one-line transcript reads as JSON: it must still arrive as the text it is."""
    async with connected(memory) as client:
        failed, done = await call(
            client,
            payload=stop(transcript_path="/on/the/laptop.jsonl"),
            event="e1",
            namespace="tidepool",
            transcript=said("u1", "one line"),
        )
    assert not failed, done
    assert [r.content for r in await rows(memory, "alice-tidepool")] == ["assistant: one line"]


async def test_a_bad_event_is_a_tool_error_naming_what_is_wrong(memory: Memory) -> None:
    cases = {
        "not json": "hook event refused: payload: Invalid JSON: expected ident at line 1 column 2",
        "[1, 2]": "hook event refused: payload: Input should be an object",
        '"Stop"': "hook event refused: payload: Input should be an object",
        '{"session_id": "s1"}': "hook event refused: hook_event_name: Field required",
    }
    async with connected(memory) as client:
        for payload, message in cases.items():
            # With a transcript too: a payload that is no object is passed on as it is.
            for transcript in ("", said("u1", "x")):
                failed, text = await call(
                    client, payload=payload, event="e1", namespace="tidepool", transcript=transcript
                )
                assert (failed, text) == (True, SDK_PREFIX + message), payload
    assert await rows(memory, "alice-tidepool") == []


async def test_the_largest_transcript_is_taken_and_one_character_more_refused(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The copy is written in a temporary folder of its own, gone once the event is stored.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    head = said("u1", "the last words") + "\n"
    # Lines that are no JSON are skipped by the reader: padding up to the bound exactly.
    largest = head + "x" * (MAX_TRANSCRIPT_CHARS - len(head) - 1) + "\n"
    assert len(largest) == MAX_TRANSCRIPT_CHARS
    laptop_stop = stop(transcript_path="/on/the/laptop.jsonl")
    async with connected(memory) as client:
        over = await call(
            client, payload=laptop_stop, event="e0", namespace="tidepool", transcript=largest + "y"
        )
        assert over == (
            True,
            f"{SDK_PREFIX}transcript of 2000001 characters is over 2000000; send its last lines",
        )
        failed, done = await call(
            client, payload=laptop_stop, event="e1", namespace="tidepool", transcript=largest
        )
    assert not failed, done
    assert [r.content for r in await rows(memory, "alice-tidepool")] == [
        "assistant: the last words"
    ]
    assert list(scratch.iterdir()) == []


async def test_a_busy_store_is_a_protocol_error_so_the_event_waits(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    db = tmp_path / "busy.db"
    async with Memory(store=SQLiteStore(db, busy_timeout=0.05), embedder=minilm) as memory:
        async with connected(memory) as client:
            holder = apsw.Connection(str(db))
            holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            try:
                with pytest.raises(MCPError) as caught:
                    await client.call_tool(
                        TOOL, {"payload": prompt("later"), "event": "e1", "namespace": "tidepool"}
                    )
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            assert caught.value.error.code == INTERNAL_ERROR
            assert str(caught.value) == (
                f"try again later: the store {str(db)!r} stayed locked by another process for"
                " over 0.05 s; try again when it is less busy"
            )
            assert await rows(memory, "alice-tidepool") == []
            # Sent again once the store is free: stored.
            failed, done = await call(
                client, payload=prompt("later"), event="e1", namespace="tidepool"
            )
        assert not failed, done
        assert [r.content for r in await rows(memory, "alice-tidepool")] == ["user: later"]
