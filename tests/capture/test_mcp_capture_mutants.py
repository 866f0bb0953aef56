"""The MCP `capture` tool's library call, exactly: its refusals, the rows it writes (text,
kind, tags, metadata, source, thread), its causal links, and the chunking at its bounds."""

from __future__ import annotations

from typing import Any

import pytest

from phi.errors import InvalidInput, NamespaceNotFound
from phi.mcp import CAPTURE_KINDS, Captured, capture, chunk_text
from phi.mcp.capture import MAX_CAPTURE_CHARS, latest_in_session
from phi.memory import Memory, NewRow, Row

NS = "dev"


async def causes(memory: Memory, row: Row) -> list[str]:
    linked = await memory.neighbors(row.row_id, types=["causal"])
    return [n.edge.src for n in linked if n.edge.dst == row.row_id]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"kind": "thought"},
            "unknown capture kind 'thought'; expected one of"
            " ('turn', 'decision', 'tool_result', 'file_change', 'error')",
        ),
        ({"session": " \u200b"}, "blank session id ' \\u200b'; pass the id of the agent session"),
        ({"event": "\t"}, "blank event id '\\t'; pass the id of the event, or none"),
        (
            {"content": "x" * (MAX_CAPTURE_CHARS + 1)},
            f"capture of {MAX_CAPTURE_CHARS + 1} characters is over {MAX_CAPTURE_CHARS};"
            " send it in parts",
        ),
        ({"content": " \n\n "}, "empty content; nothing to capture"),
        ({"kind": "turn"}, "a turn needs its speaker (e.g. 'user' or 'assistant')"),
        ({"kind": "turn", "speaker": " "}, "a turn needs its speaker (e.g. 'user' or 'assistant')"),
    ],
)
@pytest.mark.anyio
async def test_a_capture_is_refused_in_one_line(
    memory: Memory, arguments: dict[str, Any], message: str
) -> None:
    call: dict[str, Any] = {"session": "s", "kind": "decision", "content": "run it", **arguments}
    with pytest.raises(InvalidInput) as caught:
        await capture(memory, namespace=NS, **call)
    assert str(caught.value) == message
    with pytest.raises(NamespaceNotFound):  # nothing half-written
        [r async for r in memory.export(namespace=NS)]


@pytest.mark.anyio
async def test_the_largest_capture_is_taken(memory: Memory) -> None:
    """The bound is on what the client sent (blank lines count), one character over refused."""
    text = "x" + "\n" * (MAX_CAPTURE_CHARS - 2) + "y"
    done = await capture(memory, namespace=NS, session="s", kind="decision", content=text)
    assert [r.content for r in done.rows] == ["decision: x\n\ny"]
    with pytest.raises(InvalidInput, match=r"^capture of 200001 characters is over 200000"):
        await capture(memory, namespace=NS, session="s", kind="decision", content=text + "z")


@pytest.mark.parametrize(
    ("kind", "path", "tool", "label"),
    [
        ("file_change", "/src/a.py", None, "file change /src/a.py"),
        ("file_change", None, "Edit", "file change"),
        ("tool_result", None, "grep", "tool result of grep"),
        ("tool_result", "/src/a.py", None, "tool result"),
        ("error", None, "pytest", "error in pytest"),
        ("error", None, None, "error"),
        ("decision", "/src/a.py", "Edit", "decision"),
    ],
)
@pytest.mark.anyio
async def test_a_note_names_its_kind(
    memory: Memory, kind: Any, path: str | None, tool: str | None, label: str
) -> None:
    done = await capture(
        memory, namespace=NS, session="s1", kind=kind, content="it went fine", path=path, tool=tool
    )
    (row,) = done.rows
    assert row.content == f"{label}: it went fine"
    assert (row.kind, row.tags, row.thread, row.namespace) == ("note", (kind,), "s1", NS)
    event = row.meta["event"]
    expected: dict[str, object] = {"capture": kind, "session": "s1", "event": event, "thread": "s1"}
    expected |= {"chunks": 1, "chunk": 0}
    expected |= {"path": path} if path else {}
    expected |= {"tool": tool} if tool else {}
    assert row.meta == expected
    assert len(event) == 24
    assert row.source_uris == (f"capture://s1/{event}",)
    assert done == Captured(session="s1", rows=(row,), caused_by=None)


@pytest.mark.anyio
async def test_a_turn_is_stored_verbatim_chunk_by_chunk(memory: Memory) -> None:
    text = "\n\n".join(["a" * 700, "b" * 700, "c" * 300])
    done = await capture(
        memory,
        namespace=NS,
        session="s1",
        kind="turn",
        content=text,
        speaker="assistant",
        by_agent=True,
        event="ev-1",
        extra_meta={"tool_use_id": "t1"},
    )
    assert [r.content for r in done.rows] == [
        "assistant: " + "a" * 700,
        "assistant: " + "b" * 700 + "\n\n" + "c" * 300,
    ]
    for index, row in enumerate(done.rows):
        assert (row.kind, row.thread, row.source_uris) == (
            "interaction",
            "s1",
            ("capture://s1/ev-1",),
        )
        turn = {"speaker": "assistant", "text": row.content.removeprefix("assistant: ")}
        assert row.meta == {
            "capture": "turn",
            "session": "s1",
            "event": "ev-1",
            "chunks": 2,
            "chunk": index,
            "tool_use_id": "t1",
            "thread": "s1",
            "turns": [turn | {"by_phi": True}],
        }
    said = await capture(memory, namespace=NS, session="s1", kind="turn", content="hi", speaker="u")
    assert said.rows[0].meta["turns"] == [{"speaker": "u", "text": "hi", "by_phi": False}]


@pytest.mark.anyio
async def test_a_result_is_linked_to_its_sessions_latest_decision(memory: Memory) -> None:
    first = await capture(memory, namespace=NS, session="s1", kind="decision", content="plan a")
    decided = await capture(memory, namespace=NS, session="s1", kind="decision", content="plan b")
    await capture(memory, namespace=NS, session="s2", kind="decision", content="other plan")
    await capture(memory, namespace=NS, session="s1", kind="turn", content="ok", speaker="user")
    for kind in ("tool_result", "error", "file_change"):
        done = await capture(memory, namespace=NS, session="s1", kind=kind, content=f"{kind} 1")
        assert done.caused_by == decided.rows[0].row_id != first.rows[0].row_id
        assert await causes(memory, done.rows[0]) == [decided.rows[0].row_id]
    # A decision or a turn is not linked on its own; a given cause is, whatever the kind.
    plain = await capture(memory, namespace=NS, session="s1", kind="decision", content="plan c")
    assert plain.caused_by is None
    assert await causes(memory, plain.rows[0]) == []
    given = await capture(
        memory,
        namespace=NS,
        session="s1",
        kind="turn",
        content="why",
        speaker="user",
        caused_by=first.rows[0].row_id,
    )
    assert given.caused_by == first.rows[0].row_id
    assert await causes(memory, given.rows[0]) == [first.rows[0].row_id]
    # A result in a session with no decision has no cause.
    alone = await capture(memory, namespace=NS, session="s3", kind="error", content="boom")
    assert alone.caused_by is None


@pytest.mark.anyio
async def test_one_event_stored_twice_is_one_row_and_links_nothing_to_itself(
    memory: Memory,
) -> None:
    once = await capture(
        memory, namespace=NS, session="s1", kind="tool_result", content="3 passed", event="e1"
    )
    again = await capture(
        memory,
        namespace=NS,
        session="s1",
        kind="tool_result",
        content="3 passed",
        event="e1",
        caused_by=once.rows[0].row_id,
    )
    assert again.rows == once.rows
    assert await causes(memory, once.rows[0]) == []


@pytest.mark.anyio
async def test_the_latest_row_of_a_session_by_kind_and_tool_call(memory: Memory) -> None:
    assert await latest_in_session(memory, namespace="nothing-yet", session="s1") is None
    one = await capture(
        memory,
        namespace=NS,
        session="s1",
        kind="decision",
        content="a",
        extra_meta={"tool_use_id": "t1"},
    )
    two = await capture(
        memory,
        namespace=NS,
        session="s1",
        kind="decision",
        content="b",
        extra_meta={"tool_use_id": "t2"},
    )
    turn = await capture(memory, namespace=NS, session="s1", kind="turn", content="c", speaker="u")
    await capture(memory, namespace=NS, session="s2", kind="decision", content="d")
    latest = await latest_in_session(memory, namespace=NS, session="s1")
    assert latest is not None and latest.row_id == two.rows[0].row_id
    found = await latest_in_session(memory, namespace=NS, session="s1", tool_use_id="t1")
    assert found is not None and found.row_id == one.rows[0].row_id
    assert await latest_in_session(memory, namespace=NS, session="s1", tool_use_id="t9") is None
    said = await latest_in_session(memory, namespace=NS, session="s1", kind="turn")
    assert said is not None and said.row_id == turn.rows[0].row_id
    assert await latest_in_session(memory, namespace=NS, session="s3") is None


@pytest.mark.anyio
async def test_a_session_id_in_another_namespace_is_another_session(memory: Memory) -> None:
    """A result is linked to a decision of its own namespace, never to a newer one of the
    same session id elsewhere (a link across namespaces is refused)."""
    mine = await capture(memory, namespace=NS, session="s1", kind="decision", content="mine")
    await capture(memory, namespace="other", session="s1", kind="decision", content="theirs")
    found = await latest_in_session(memory, namespace=NS, session="s1")
    assert found is not None and found.row_id == mine.rows[0].row_id
    done = await capture(memory, namespace=NS, session="s1", kind="error", content="it failed")
    assert done.caused_by == mine.rows[0].row_id


@pytest.mark.anyio
async def test_a_decision_is_found_among_the_latest_200_rows(memory: Memory) -> None:
    """Further back than that a session's decision is not looked for (a bounded read)."""
    decided = await capture(memory, namespace=NS, session="s1", kind="decision", content="plan")
    filler = [NewRow(content=f"note number {n}", namespace=NS) for n in range(199)]
    await memory.remember_many(filler)
    found = await latest_in_session(memory, namespace=NS, session="s1")
    assert found is not None and found.row_id == decided.rows[0].row_id
    await memory.remember(NewRow(content="note number 199", namespace=NS))
    assert await latest_in_session(memory, namespace=NS, session="s1") is None


def test_chunks_are_packed_up_to_the_size_exactly() -> None:
    assert CAPTURE_KINDS == ("turn", "decision", "tool_result", "file_change", "error")
    assert chunk_text("a" * 44 + "\n\n" + "b" * 44, size=90) == ["a" * 44 + "\n\n" + "b" * 44]
    assert chunk_text("a" * 44 + "\n\n" + "b" * 45, size=90) == ["a" * 44, "b" * 45]
    assert chunk_text("a\n \n\tb") == ["a\n\nb"]
    assert chunk_text("x" * 1200) == ["x" * 1200]
    assert chunk_text("x" * 1201) == ["x" * 1200, "x"]
    # Lines are joined back with their own separator while they fit.
    assert chunk_text("ab\ncd\nef", size=5) == ["ab\ncd", "ef"]
    assert chunk_text("ab cd ef", size=5) == ["ab cd", "ef"]
    assert chunk_text("ab\ncd ef gh", size=5) == ["ab", "cd ef", "gh"]
    assert chunk_text("abcde\nfghij", size=5) == ["abcde", "fghij"]
    assert chunk_text("  \n  abcdefg  \n ", size=3) == ["abc", "def", "g"]
