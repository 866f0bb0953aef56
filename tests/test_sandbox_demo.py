"""The quick start's demo, `phi sandbox run --until-reply`, as a newcomer meets it: a fresh
home, the sandbox's ports held by another program, a musing due this very hour.

The brain is scripted behind a real OpenAI-compatible HTTP server on loopback (the grammar
adapter's transport, as for any `grammar:` model), so the test checks what phi does around
the model: the network moves to free ports and says so once (finding 25.2), alice is answered
before any scheduled job (25.3), the stream shows what phi recalled for alice's second post,
with kind and score, and the run ends with what phi holds about her and where to look (25.4).
The network this test starts is its own (other ports, its own schemas), stopped at the end.
"""

from __future__ import annotations

import json
import re
import secrets
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic_ai import models
from typer.testing import CliRunner

from phi.cli import app
from phi.runtime.sandbox_run import DEFAULT_FOLLOW_UP, DEFAULT_GREETING

_URI = re.compile(r'uri: "(at://[^"]+)"')


def _answer(prompt: str) -> dict[str, Any]:
    """reply_to the newest post of the batch; name the crow only when memory held her name."""
    uri = _URI.findall(prompt)[-1]  # the batch comes after the prompt's worked examples
    if "do you remember" not in prompt:
        text = "nice to meet you, alice! what else does she collect?"
    elif "pepper" in prompt:
        text = "of course: your crow is pepper, the spoon thief."
    else:
        text = "i am sorry, i do not remember."
    return {"tool": "reply_to", "arguments": {"uri": uri, "text": text}}


class _Brain(BaseHTTPRequestHandler):
    prompts: ClassVar[list[str]] = []
    """Every prompt the brain was asked with (reset by the fixture)."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = "\n".join(str(m.get("content") or "") for m in body["messages"])
        type(self).prompts.append(prompt)
        reply = {
            "id": f"scripted-{len(self.prompts)}",
            "choices": [
                {"message": {"content": json.dumps(_answer(prompt))}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 20},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.fixture
def scripted_brain() -> Iterator[str]:
    """The `PHI_MODEL` of a scripted brain served over HTTP on a free loopback port."""
    _Brain.prompts = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Brain)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"grammar:http://127.0.0.1:{server.server_address[1]}/v1#scripted"
    finally:
        server.shutdown()
        server.server_close()


def _free_block(size: int) -> int:
    """A port with the `size - 1` above it free too, below the kernel's ephemeral range
    (32768 and up here), where outgoing connections would take ports from under the
    network between this probe and its start."""
    for base in range(21000 + secrets.randbelow(400) * 16, 32000, size):
        if all(_free(base + n) for n in range(size)):
            return base
    raise AssertionError("no free block of ports")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.timeout(900)  # a fresh clone installs the network first (about 4 minutes)
def test_until_reply_on_taken_ports_answers_alice_first_and_shows_memory_at_work(
    tmp_path: Path, scripted_brain: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)  # 127.0.0.1 only
    base = _free_block(8)
    home = tmp_path / "home"
    now = datetime.now(UTC)
    monkeypatch.setenv("PHI_HOME", str(home))
    monkeypatch.setenv("PHI_SANDBOX_PORT", str(base))
    monkeypatch.setenv("PHI_MODEL", scripted_brain)
    monkeypatch.delenv("PHI_MEMORY_MODEL", raising=False)
    monkeypatch.delenv("PHI_MEMORY_URL", raising=False)
    # A musing due now and at the next hour (a run may straddle it): it must wait for alice.
    monkeypatch.setenv("PHI_MUSING_HOURS", f"{now.hour},{(now.hour + 1) % 24}")
    runner = CliRunner()
    with socket.socket() as other_program:
        other_program.bind(("127.0.0.1", base))
        other_program.listen()
        try:
            result = runner.invoke(app, ["sandbox", "run", "--until-reply", "--poll", "0.5"])
        finally:
            down = runner.invoke(app, ["sandbox", "down"])
    out = result.output
    assert result.exit_code == 0, out
    assert down.output.strip() == "stopped", down.output
    lines = [line.split(" ", 1)[1] for line in out.splitlines() if line[:2].isdigit()]

    moved = (
        f"port {base} (plc) is taken by another program: the network runs on ports "
        f"{base + 4}-{base + 7} instead (PDS {base + 5})"
    )
    assert lines.count(moved) == 1
    assert f"network up: PDS http://localhost:{base + 5}" in out

    # Alice's two posts, each answered, and no scheduled job before (or between) them.
    opened = lines.index(f"@alice.test posted: {DEFAULT_GREETING}")
    came_back = lines.index(f"@alice.test posted: {DEFAULT_FOLLOW_UP}")
    assert opened < came_back
    assert (
        lines.count("replied to @alice.test: nice to meet you, alice! what else does she collect?")
        == 1
    )
    assert "replied to @alice.test: of course: your crow is pepper, the spoon thief." in lines
    assert not [line for line in lines if line.startswith("scheduled:")]

    # What phi recalled for her second post: the first exchange, best first, with its score.
    recalled = lines.index("recalled about @alice.test: 2 row(s) (kind, score, text)", came_back)
    first, second = lines[recalled + 1], lines[recalled + 2]
    assert re.fullmatch(r"  interaction +\d\.\d\d  @alice\.test: .*pepper.*", first), first
    assert re.fullmatch(r"  exploration_note +\d\.\d\d  @alice\.test \(Alice\).*", second), second
    assert float(first.split()[1]) > float(second.split()[1])
    assert "pepper" in _Brain.prompts[-1]  # and the brain was shown it

    # The closing summary: what phi holds about alice, and where to look.
    held = next(i for i, line in enumerate(lines) if line.startswith("what phi now holds about"))
    assert lines[held].startswith("what phi now holds about @alice.test (phi-users-did:plc:")
    rows = lines[held + 1 : held + 4]
    assert sorted(row.split()[1] for row in rows) == [
        "exploration_note",
        "interaction",
        "interaction",
    ]
    row_id = rows[0].split()[0]
    assert lines[held + 4] == f"look closer: phi memory show {row_id} --sandbox"
    assert "phi web --sandbox, then http://127.0.0.1:8780/memory" in lines[held + 6]
    shown = runner.invoke(app, ["memory", "show", row_id, "--sandbox"])
    assert shown.exit_code == 0 and "do you remember my crow" in shown.output, shown.output
