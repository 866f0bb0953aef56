"""A tool's binary output (a NUL byte) is kept as text, not refused with its whole event."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from phi.capture import Spool, SpoolEntry
from phi.capture.spool import drain_into
from phi.memory import Memory


@pytest.mark.anyio
async def test_a_nul_in_tool_output_is_stored_as_a_replacement_character(
    memory: Memory, tmp_path: Path
) -> None:
    spool = Spool(directory=tmp_path / "capture")
    event = {
        "hook_event_name": "PostToolUse",
        "session_id": "s-binary",
        "tool_name": "Bash",
        "tool_input": {"command": "head -c 8 build/app.bin"},
        "tool_response": {"stdout": "ELF\x00\x01 header", "stderr": ""},
    }
    spool.append(SpoolEntry(namespace="ns", payload=json.dumps(event)))
    err = io.StringIO()
    with spool.draining(wait_s=1) as mine:
        assert mine
        assert await drain_into(memory, spool, err=err) == 1
    (row,) = [r async for r in memory.export()]
    assert "ELF\ufffd\x01 header" in row.content and "\x00" not in row.content
    assert not (spool.directory / "rejects.jsonl").exists()
    assert err.getvalue() == ""
