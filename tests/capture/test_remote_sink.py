"""The team capture client on its own: what it sends of a transcript, and that a server out
of reach leaves every event queued without troubling the host."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import pytest

from phi.capture.remote_sink import (
    TRANSCRIPT_TAIL_BYTES,
    RemoteTarget,
    drain_remote,
    transcript_tail,
)
from phi.capture.spool import Spool, SpoolEntry

pytestmark = pytest.mark.anyio

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _event(transcript: Path) -> str:
    return json.dumps(
        {"session_id": "s", "hook_event_name": "Stop", "transcript_path": str(transcript)}
    )


def test_the_transcript_goes_as_its_last_whole_lines_redacted(tmp_path: Path) -> None:
    short = tmp_path / "short.jsonl"
    short.write_text(f'{{"n": 1, "said": "use {GITHUB_TOKEN}"}}\n')
    sent = transcript_tail(_event(short))
    assert sent is not None and GITHUB_TOKEN not in sent and sent.startswith('{"n": 1')
    long = tmp_path / "long.jsonl"
    line = json.dumps({"pad": "x" * 1000}) + "\n"
    count = TRANSCRIPT_TAIL_BYTES // len(line) + 5
    long.write_text("".join(json.dumps({"n": i, "pad": "x" * 1000}) + "\n" for i in range(count)))
    sent = transcript_tail(_event(long))
    assert sent is not None and len(sent.encode()) <= TRANSCRIPT_TAIL_BYTES
    lines = sent.splitlines()
    assert [json.loads(text)["n"] for text in lines] == list(range(count - len(lines), count))
    assert transcript_tail(_event(tmp_path / "gone.jsonl")) is None
    assert transcript_tail('{"session_id": "s"}') is None
    assert transcript_tail("[1, 2]") is None


async def test_a_server_out_of_reach_leaves_every_event_queued(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        spool = Spool(directory=tmp_path / "capture")
        for n in range(3):
            spool.append(SpoolEntry(namespace="dev", payload=json.dumps({"n": n})))
        err = io.StringIO()
        target = RemoteTarget(url=f"http://127.0.0.1:{port}/mcp", token="t" * 32)
        with spool.draining(wait_s=1) as mine:
            assert mine
            assert await drain_remote(spool, target, err=err) == 0
    assert spool.pending() == 3
    assert spool.rejected() == 0
    assert err.getvalue().startswith(
        f"phi capture: 3 event(s) queued for later: cannot reach http://127.0.0.1:{port}/mcp: "
    )
    assert "ConnectError: All connection attempts failed" in err.getvalue()  # the cause itself
    assert "t" * 32 not in err.getvalue()
