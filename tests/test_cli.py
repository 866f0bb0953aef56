"""The `phi` command as a whole: start-up cost, settings errors, servers saying where they are."""

from __future__ import annotations

import gc
import json
import os
import re
import socket
import subprocess
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, cast

import httpx
import pytest
from typer.testing import CliRunner

from phi.cli import app
from tests._child import URL, start_phi, stop

if TYPE_CHECKING:
    from phi.atproto.sandbox import Sandbox

PHI = str(Path(sys.executable).parent / "phi")

HEAVY = ("onnxruntime", "xllamacpp", "fastapi", "mcp", "atproto", "numpy", "pydantic_ai", "apsw")
"""Libraries that cost seconds to import on a busy 2-core machine; only commands load them."""


def test_help_lists_the_command_groups() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "memory" in result.output
    assert "bench" in result.output


def test_importing_the_cli_loads_no_heavy_library() -> None:
    # A fresh interpreter: this test process has imported most of them already.
    probe = (
        "import sys, phi.cli; "
        f"print([m for m in {HEAVY!r} if m in sys.modules or any("
        "k.startswith(m + '.') for k in sys.modules)])"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


BAD_SETTING_COMMANDS = [
    ["memory", "stats"],
    ["memory", "search", "x"],
    ["memory", "add", "x", "-n", "scratch"],
    ["memory", "extract"],
    ["memory", "blocks", "list"],
    ["sandbox", "status"],
    ["sandbox", "say", "alice", "hi"],
    ["sandbox", "run", "--until-reply"],
    ["web"],
    ["mcp"],
    ["run"],
    ["prompt", "--preview", "--sandbox"],
]


@pytest.mark.parametrize("words", BAD_SETTING_COMMANDS, ids=" ".join)
def test_a_bad_setting_is_one_line_naming_it_with_exit_2(
    words: list[str], monkeypatch: pytest.MonkeyPatch, phi_home: Path
) -> None:
    monkeypatch.setenv("PHI_POLL_SECONDS", "0")
    result = CliRunner().invoke(app, words)
    assert result.exit_code == 2, result.output
    assert result.output == (
        "error: PHI_POLL_SECONDS='0': Input should be greater than 0 (the setting: Seconds "
        "between two notification polls of `phi run`.)\n"
    )
    assert list(phi_home.iterdir()) == []  # nothing created on the way


def test_settings_errors_name_each_variable_and_what_it_accepts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PHI_MUSING_HOURS", "9,25")
    monkeypatch.setenv("PHI_ALLOW_HANDLES", "[alice.test")
    result = CliRunner().invoke(app, ["memory", "stats"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "PHI_MUSING_HOURS='9,25': musing hours are UTC hours 0-23, got [25]" in result.output
    assert "PHI_ALLOW_HANDLES='[alice.test': not a valid JSON list" in result.output


def test_sandbox_status_and_down_speak_json(phi_home: Path) -> None:
    result = CliRunner().invoke(app, ["sandbox", "status", "--json"])
    assert (result.exit_code, json.loads(result.stdout)) == (1, {"state": "stopped"})
    result = CliRunner().invoke(app, ["sandbox", "down", "--json"])
    assert (result.exit_code, json.loads(result.stdout)) == (0, {"stopped": False})


def test_phi_web_sandbox_prints_its_address_and_serves_docs_offline(
    tmp_path: Path, phi_home: Path
) -> None:
    result = CliRunner().invoke(
        app, ["memory", "add", "from the sandbox", "-n", "scratch", "--sandbox"]
    )
    assert result.exit_code == 2 and "no sandbox memory yet" in result.output
    sandbox_db = phi_home / "sandbox-memory.db"
    result = CliRunner().invoke(
        app, ["memory", "add", "from the sandbox", "-n", "scratch", "--db", str(sandbox_db)]
    )
    assert result.exit_code == 0, result.output
    log = tmp_path / "web.log"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        # --port 0 picks a free port, whatever PHI_WEB_PORT says (here: a taken one).
        env = {**os.environ, "PHI_WEB_PORT": str(taken.getsockname()[1])}
        process, base = start_phi(
            ["web", "--sandbox", "--port", "0"],
            log,
            says=rf"phi's memory \({re.escape(str(sandbox_db))}\) at {URL}/memory, API docs at ",
            env=env,
        )
    try:
        assert not base.endswith(":0")
        said = log.read_text()
        assert f"at {base}/memory, API docs at {base}/docs, runs at {base}/activity" in said
        # Said once the app started (its startup logged before), so it answers at once.
        assert said.index("Application startup complete") < said.index(f"at {base}/memory")
        assert httpx.get(f"{base}/health").json()["rows"] == 1
        docs = httpx.get(f"{base}/docs")
        assert docs.status_code == 200 and "/openapi.json" in docs.text
        # Everything the page loads comes from this server (FastAPI's default pulls a CDN).
        loaded = re.findall(r'(?:src|href)="([^"]*)"', docs.text)
        assert loaded and all(url.startswith("/") for url in loaded), loaded
        assert 'fetch("/openapi.json")' in docs.text
        assert httpx.get(f"{base}/redoc").status_code == 404
    finally:
        stop(process)


def test_phi_mcp_http_prints_the_port_it_got(tmp_path: Path) -> None:
    log = tmp_path / "mcp.log"
    process, base = start_phi(
        ["mcp", "--http", "--port", "0", "--db", str(tmp_path / "m.db")],
        log,
        says=f"MCP over streamable HTTP at {URL}/mcp",
    )
    try:
        assert not base.endswith(":0")
        # The MCP endpoint answers there (a GET without a session is refused by MCP itself).
        answer = httpx.get(f"{base}/mcp", headers={"Accept": "text/event-stream"})
        assert answer.status_code == 400 and "session" in answer.text.lower(), answer.text
    finally:
        stop(process)


@pytest.mark.parametrize("command", ["web", "mcp", "mcp-tokens"])
def test_a_taken_port_is_one_line_before_anything_starts(tmp_path: Path, command: str) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"team- {'t' * 32}\n")
    tokens.chmod(0o600)
    words = {
        "web": ["web"],
        "mcp": ["mcp", "--http"],
        "mcp-tokens": ["mcp", "--http", "--token-file", str(tokens)],
    }[command]
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        db = tmp_path / "m.db"
        result = CliRunner().invoke(app, [*words, "--port", str(port), "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1
    assert (
        f"error: cannot listen on 127.0.0.1:{port} (Address already in use); free the port "
        "or choose another with --port (--port 0 picks a free one)"
    ) in result.output
    assert not db.exists()  # refused before the store was opened


def test_a_command_that_stops_after_binding_closes_its_socket() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(app, ["web", "--sandbox", "--port", "0"])
        said, code = result.output, result.exit_code
        del result  # its traceback holds the command's frame, and so the socket
        gc.collect()
    assert code == 2 and "no sandbox memory yet" in said, said
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


@pytest.mark.anyio
async def test_a_slow_network_start_says_it_is_still_going(monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio

    from phi.cli import sandbox as sandbox_cli

    monkeypatch.setattr(sandbox_cli, "TICK_SECONDS", 0.1)

    class SlowSandbox:
        """Starts in 0.35 s, as a first install does in minutes."""

        async def up(self, **_: object) -> str:
            await anyio.sleep(0.35)
            return "info"

    lines: list[str] = []
    slow = cast("Sandbox", SlowSandbox())
    started: object = await sandbox_cli._up_with_progress(slow, lines.append)
    assert started == "info"
    # One line per 0.1 s while it starts (give or take one on a busy machine), none after.
    assert 2 <= len(lines) <= 4, lines
    assert all(line.startswith("still starting the network (") for line in lines)
    count = len(lines)
    await anyio.sleep(0.25)
    assert len(lines) == count


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["run", "--log-level", "loud"], "--log-level 'loud': use debug, info, warning or error"),
        (["run", "--log-format", "xml"], "--log-format 'xml': use text or json"),
        (["sandbox", "run", "--poll", "0"], "--poll must be positive, got 0.0"),
        (["bench", "locomo", "no-such.json"], "no LoCoMo file at 'no-such.json'"),
        (["prompt"], "say --preview (the only mode)"),
    ],
)
def test_user_mistakes_exit_2_with_one_line(words: list[str], message: str) -> None:
    result = CliRunner().invoke(app, words)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {message}") and result.output.count("\n") == 1


@pytest.mark.parametrize(
    ("words", "message", "helps"),
    [
        (["memory", "export", "--json"], "No such option: --json", "phi memory export"),
        (["memory", "show"], "Missing argument", "phi memory show"),
        (["memory", "search", "x", "--limit", "abc"], "Invalid value for '--limit'",
         "phi memory search"),
        (["nosuch"], "No such command 'nosuch'", "phi"),
    ],
)  # fmt: skip
def test_a_mistyped_command_line_is_one_line_with_exit_2(
    words: list[str], message: str, helps: str
) -> None:
    """Finding W9 of the second newcomer walkthrough: the README promises one line for "a
    bad option", but the installed `phi` drew a five-line box around it."""
    result = subprocess.run([PHI, *words], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"error: {message}"), result.stderr
    assert result.stderr.endswith(f"(see `{helps} --help`)\n"), result.stderr


def test_the_installed_phi_still_helps_and_exits_as_its_commands_say(tmp_path: Path) -> None:
    assert subprocess.run([PHI, "--help"], capture_output=True, timeout=60).returncode == 0
    bare = subprocess.run([PHI, "memory"], capture_output=True, text=True, timeout=60)
    assert "Usage: phi memory" in bare.stdout + bare.stderr
    mistake = subprocess.run(
        [PHI, "runs", "show", "zzz"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PHI_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert mistake.returncode == 2, mistake
    assert mistake.stderr.startswith("error: no run with id 'zzz'"), mistake.stderr
    ok = subprocess.run(
        [PHI, "runs", "list", "--json"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PHI_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert (ok.returncode, json.loads(ok.stdout)) == (0, [])


@pytest.mark.parametrize(
    "words",
    [
        ["sandbox", "say", "bob", "me too", "--reply-to", "at://bogus"],
        ["sandbox", "like", "operator", "https://bsky.app/profile/alice.test/post/3k"],
    ],
)
def test_a_post_uri_that_is_not_one_is_a_mistake_named_before_the_network(
    words: list[str], phi_home: Path
) -> None:
    """Finding W15 of the second newcomer walkthrough: `--reply-to at://bogus` reached the
    AppView and came back as `getPosts was refused (HTTP 400 ...)`, exit 1. No network runs
    here: the check comes first."""
    result = CliRunner().invoke(app, words)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1, result.output
    assert result.output.startswith(f"error: {words[-1]!r} is not a post's AT-URI"), result.output
