"""Reversed decisions stay reversed: through the hook, on a real SQLite store.

A later session that edits the same region again, pins a dependency differently or sets a
setting anew supersedes what the earlier one stored (its decision and its file change), with
a `supersedes` edge and the reason in the new row's metadata; the old rows leave recall.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from phi.memory import Memory, MiniLMEmbedder, Row
from tests.capture._hook_events import NS, send
from tests.postgres.schemas import fresh_schema

CLIENT = "/repo/src/client.py"


async def tool_call(
    memory: Memory, tool: str, tool_input: dict[str, Any], *, use: str, **fields: Any
) -> tuple[Row, Row]:
    """A PreToolUse and its PostToolUse: the decision row and the result row."""
    decided = await send(
        memory, "PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=use, **fields
    )
    done = await send(
        memory,
        "PostToolUse",
        tool_name=tool,
        tool_input=tool_input,
        tool_use_id=use,
        tool_response="ok",
        **fields,
    )
    return decided.rows[0], done.rows[0]


def timeout_edit(old: int, new: int) -> dict[str, str]:
    return {
        "file_path": CLIENT,
        "old_string": f"    return http.get(url, timeout={old})",
        "new_string": f"    return http.get(url, timeout={new})",
    }


async def status(memory: Memory, row: Row) -> str:
    return (await memory.get(row.row_id)).status


pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "postgresql"])
async def both(
    request: pytest.FixtureRequest, tmp_path: Path, minilm: MiniLMEmbedder
) -> AsyncIterator[Memory]:
    """Each store: superseding several rows at once relies on the store's row identity."""
    if request.param == "sqlite":
        async with Memory.open(tmp_path / "memory.db", embedder=minilm) as opened:
            yield opened
        return
    async with fresh_schema() as url, Memory.open(url, embedder=minilm) as opened:
        yield opened


async def test_the_same_region_edited_again_supersedes_the_decision_and_the_change(
    memory: Memory,
) -> None:
    await send(memory, "UserPromptSubmit", prompt="requests hang; add a timeout")
    old_decision, old_change = await tool_call(memory, "Edit", timeout_edit(0, 30), use="t1")
    await send(memory, "UserPromptSubmit", session="s2", prompt="30 s is too short on CI")
    new_decision, new_change = await tool_call(
        memory, "Edit", timeout_edit(30, 90), use="t2", session="s2"
    )
    why = "the same region of /repo/src/client.py edited again"
    for old, new in ((old_decision, new_decision), (old_change, new_change)):
        assert (await status(memory, old), await status(memory, new)) == ("superseded", "active")
        assert new.supersedes == old.row_id
        assert new.meta["reverses"] == {old.row_id: why}
        assert [r.row_id for r in await memory.history(old.row_id)] == [old.row_id, new.row_id]
    active = {r.row_id for r in await memory.recent(namespace=NS, limit=50)}
    assert {new_decision.row_id, new_change.row_id} <= active
    assert not {old_decision.row_id, old_change.row_id} & active
    found = await memory.search("http timeout of the client", namespace=NS, limit=20)
    assert old_change.row_id not in {hit.row.row_id for hit in found}


async def test_an_edit_elsewhere_or_in_another_project_supersedes_nothing(
    memory: Memory,
) -> None:
    _, first = await tool_call(memory, "Edit", timeout_edit(0, 30), use="t1")
    theirs = await send(
        memory,
        "PostToolUse",
        namespace="other",
        tool_name="Edit",
        tool_input=timeout_edit(0, 30),
        tool_response="ok",
    )
    _, below = await tool_call(
        memory,
        "Edit",
        {"file_path": CLIENT, "old_string": "def close():", "new_string": "def close(self):"},
        use="t2",
    )
    assert "reverses" not in below.meta and below.supersedes is None
    _, again = await tool_call(memory, "Edit", timeout_edit(30, 60), use="t3")
    assert again.supersedes == first.row_id
    assert await status(memory, theirs.rows[0]) == "active"  # another namespace: untouched


async def test_a_dependency_pinned_differently_supersedes_the_earlier_pin(memory: Memory) -> None:
    first, _ = await tool_call(memory, "Bash", {"command": "uv add httpx==0.27"}, use="t1")
    same, _ = await tool_call(memory, "Bash", {"command": "uv add httpx==0.27"}, use="t2")
    assert same.supersedes is None  # the same pin again reverses nothing
    second, _ = await tool_call(
        memory, "Bash", {"command": "uv add 'httpx==0.28'"}, use="t3", session="s2"
    )
    assert second.meta["reverses"] == {
        first.row_id: "dep:py:httpx set to '==0.28' (was '==0.27')",
        same.row_id: "dep:py:httpx set to '==0.28' (was '==0.27')",
    }
    pyproject = {
        "file_path": "/repo/pyproject.toml",
        "old_string": '    "httpx==0.28",',
        "new_string": '    "httpx==0.29",',
    }
    edited, _ = await tool_call(memory, "Edit", pyproject, use="t4", session="s3")
    assert edited.supersedes == second.row_id
    for row in (first, same, second):
        assert await status(memory, row) == "superseded"
    assert await status(memory, edited) == "active"


async def test_a_setting_set_anew_supersedes_the_earlier_value(memory: Memory) -> None:
    config = "/repo/config/app.yaml"
    first = await send(
        memory,
        "PostToolUse",
        tool_name="Write",
        tool_response="ok",
        tool_input={"file_path": config, "content": "pool_size: 5\nname: api\n"},
    )
    second = await send(
        memory,
        "PostToolUse",
        tool_name="Edit",
        tool_response="ok",
        tool_input={"file_path": config, "old_string": "# pool", "new_string": "pool_size: 20"},
    )
    assert second.rows[0].meta["reverses"] == {
        first.rows[0].row_id: "set:/repo/config/app.yaml:pool_size set to '20' (was '5')"
    }


async def test_one_rewrite_supersedes_every_earlier_row_it_reverses(both: Memory) -> None:
    """A long change is several chunk rows, and two earlier changes are two rows: a
    rewrite that drops their lines supersedes each of them."""
    memory = both
    body = "\n".join(f"    value_{i} = compute_something({i})" for i in range(80))
    long_write = await send(
        memory,
        "PostToolUse",
        tool_name="Write",
        tool_response="ok",
        tool_input={"file_path": CLIENT, "content": body},
    )
    assert len(long_write.rows) > 1
    _, edited = await tool_call(
        memory,
        "Edit",
        {"file_path": CLIENT, "old_string": "", "new_string": "TIMEOUT_SECONDS = 30"},
        use="t1",
    )
    rewrite = await send(
        memory,
        "PostToolUse",
        tool_name="Write",
        tool_response="ok",
        tool_input={"file_path": CLIENT, "content": "TIMEOUT_SECONDS = 60\n"},
        event_id="e-rewrite",
    )
    (new,) = rewrite.rows
    earlier = [*long_write.rows, edited]
    assert set(new.meta["reverses"]) == {r.row_id for r in earlier}
    for row in earlier:
        assert await status(memory, row) == "superseded"
    edges = await memory.neighbors(new.row_id, types=["supersedes"])
    assert {n.row.row_id for n in edges} == {r.row_id for r in earlier}
    # The same event delivered again (a drainer killed before it moved on): one row, no error.
    again = await send(
        memory,
        "PostToolUse",
        tool_name="Write",
        tool_response="ok",
        tool_input={"file_path": CLIENT, "content": "TIMEOUT_SECONDS = 60\n"},
        event_id="e-rewrite",
    )
    assert again.rows == rewrite.rows


async def test_a_failed_edit_reverses_no_change(memory: Memory) -> None:
    _, first = await tool_call(memory, "Edit", timeout_edit(0, 30), use="t1")
    failed = await send(
        memory,
        "PostToolUseFailure",
        tool_name="Edit",
        tool_use_id="t2",
        tool_input=timeout_edit(30, 90),
        error="old_string not found",
    )
    assert failed.rows[0].meta["capture"] == "error"
    assert "reverses" not in failed.rows[0].meta
    assert await status(memory, first) == "active"


def test_through_the_hook_command(tmp_path: Path) -> None:
    """One `python -m phi.capture --wait` process per event, as a host runs it."""
    db = tmp_path / "memory.db"
    env = {**os.environ, "PHI_HOME": str(tmp_path / "home")}

    def hook(session: str, name: str, **fields: Any) -> None:
        payload = json.dumps({"hook_event_name": name, "session_id": session, **fields})
        done = subprocess.run(
            [sys.executable, "-m", "phi.capture", "--wait", "--namespace", NS, "--db", str(db)],
            input=payload,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert (done.returncode, done.stderr) == (0, "")

    for session, (old, new) in (("s1", (0, 30)), ("s2", (30, 90))):
        edit = {"tool_name": "Edit", "tool_input": timeout_edit(old, new)}
        hook(session, "PreToolUse", tool_use_id=f"{session}-t", **edit)
        hook(session, "PostToolUse", tool_use_id=f"{session}-t", tool_response="ok", **edit)

    async def check() -> None:
        async with Memory.open(db) as memory:
            rows = [r async for r in memory.export(namespace=NS, status=None)]
            got = {(r.meta["session"], r.meta["capture"]): r for r in rows}
            assert len(got) == len(rows) == 4
            for kind in ("decision", "file_change"):
                old, new = got["s1", kind], got["s2", kind]
                assert (old.status, new.status) == ("superseded", "active")
                assert new.supersedes == old.row_id

    anyio.run(check)
