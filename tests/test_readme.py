"""The README's commands: they name real commands and options, and they run as written.

The second half does what a newcomer does after the quick start, in a fresh login shell
(`env -i`, a new home with Debian's `~/.profile`): `scripts/_setup.sh` finds uv in
`~/.local/bin` and links the `phi` launcher there, and the README's `phi memory …` examples
run exactly as printed, one after another.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from pydantic_ai.models import infer_model

from phi.cli import app
from tests.postgres.schemas import fresh_schema_sync

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"

NEEDS_A_MODEL = ("phi memory review", "phi memory summarize", "phi memory synthesize")
"""Examples that call a hosted language model: checked for their options only."""


def readme_lines() -> list[str]:
    """Command lines inside the README's fenced code blocks, without trailing comments."""
    lines, in_block = [], False
    for raw in README.read_text().splitlines():
        if raw.startswith("```"):
            in_block = not in_block
            continue
        line = raw.split("  #", 1)[0].strip()
        if in_block and line:
            lines.append(line)
    return lines


PHI_LINE = re.compile(r"(?:[A-Z_]+=\S+\s+)*phi\s")
"""A shell line running `phi`, possibly after `VAR=value` assignments."""


def readme_commands() -> list[list[str]]:
    """`phi ...` lines (after any `VAR=value`), as words, without redirections."""
    commands = []
    for line in readme_lines():
        if PHI_LINE.match(line):
            words = shlex.split(line.split("<", 1)[0].replace("…", "x"))
            commands.append(words[words.index("phi") + 1 :])
    return commands


def resolve(words: list[str]) -> tuple[Any, list[str]]:
    """The command `words` name, and the words left for it."""
    command: Any = typer.main.get_command(app)
    rest = list(words)
    while rest and rest[0] in getattr(command, "commands", {}):
        command = command.commands[rest.pop(0)]
    return command, rest


def test_readme_has_phi_examples() -> None:
    assert len(readme_commands()) >= 15


def test_every_readme_example_names_a_real_command_and_options() -> None:
    for words in readme_commands():
        command, rest = resolve(words)
        assert not hasattr(command, "commands"), f"{words}: no such sub-command"
        known = {opt for param in command.params for opt in getattr(param, "opts", [])}
        used = {w.split("=", 1)[0] for w in rest if w.startswith("-") and w != "-"}
        assert used <= known, f"phi {' '.join(words)}: unknown options {sorted(used - known)}"


def test_the_model_strings_the_readme_names_resolve(monkeypatch: Any) -> None:
    # The providers are installed; with a key set, each documented string makes a model
    # (constructing one sends nothing).
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    named = set(re.findall(r"\b((?:anthropic|openai):[\w.-]+)", README.read_text()))
    assert {"anthropic:claude-sonnet-4-5", "openai:gpt-5", "anthropic:claude-haiku-4-5"} <= named
    for name in named:
        assert infer_model(name).model_name == name.split(":", 1)[1]


def fresh_home(tmp_path: Path) -> Path:
    """A new user's home after the quick start installed uv: `~/.local/bin/uv`, and
    Debian's default `~/.profile` (which puts `~/.local/bin` on PATH once it exists)."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    uv = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    (home / ".local" / "bin" / "uv").symlink_to(uv)
    (home / ".profile").write_text(Path("/etc/skel/.profile").read_text())
    return home


def fresh_shell(
    home: Path, command: str, *, cwd: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    """`command` in a new login shell: nothing inherited but the home and `env`."""
    base = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    # The uv cache is the machine's, as it is for a real user: the fresh home must not
    # make uv download anything.
    base["UV_CACHE_DIR"] = os.environ.get("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv"))
    return subprocess.run(
        ["env", "-i", *(f"{k}={v}" for k, v in {**base, **env}.items()), "bash", "-lc", command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_setup_finds_uv_in_local_bin_and_links_the_phi_launcher(tmp_path: Path) -> None:
    home = fresh_home(tmp_path)
    # Debian's python3 could not install uv here; the setup must not try (uv is there).
    result = fresh_shell(home, f"source {ROOT}/scripts/_setup.sh && echo ready", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ready\n"
    assert "installing uv" not in result.stderr
    launcher = home / ".local" / "bin" / "phi"
    assert launcher.resolve() == (ROOT / ".venv" / "bin" / "phi").resolve()
    result = fresh_shell(home, "command -v phi && phi --help", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith(f"{launcher}\n"), result.stderr


def memory_examples() -> list[str]:
    """The README's `phi memory …` lines that run offline, in README order."""
    return [
        line
        for line in readme_lines()
        if PHI_LINE.match(line) and " memory " in line and not line.startswith(NEEDS_A_MODEL)
    ]


def test_readme_memory_examples_run_as_written_in_a_fresh_shell(tmp_path: Path) -> None:
    home = fresh_home(tmp_path)
    assert fresh_shell(home, f"source {ROOT}/scripts/_setup.sh", cwd=tmp_path).returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("a note read from standard input\n")
    env = {"PHI_HOME": str(home / ".phi"), "ANTHROPIC_API_KEY": "test-key"}
    # What `./scripts/start` leaves behind: the sandbox run's memory.
    sandbox_db = home / ".phi" / "sandbox-memory.db"
    made = fresh_shell(
        home, f"phi memory add 'hi phi' -n scratch --db {sandbox_db}", cwd=work, **env
    )
    assert made.returncode == 0, made.stderr
    # The PostgreSQL section's `$url` lines copy the memory the other examples write: last.
    examples = sorted(memory_examples(), key=lambda line: "$url" in line)
    assert len(examples) >= 15
    # `ROW_ID` (and `OTHER_ROW_ID`) in an example stand for rows the examples before it
    # wrote; the scratch namespace's survive the `forget` of alice's.
    row_ids: list[str] = []
    for line in examples:
        if "ROW_ID" in line:
            assert row_ids, f"{line}: no row yet"
            if "OTHER_ROW_ID" in line and len(row_ids) < 2:
                fresh_shell(home, "phi memory add 'a second note' -n scratch", cwd=work, **env)
                listed = fresh_shell(home, "phi memory export -n scratch", cwd=work, **env)
                row_ids = [json.loads(row)["row_id"] for row in listed.stdout.splitlines()]
            line = line.replace("OTHER_ROW_ID", row_ids[-1]).replace("ROW_ID", row_ids[0])
        if "$url" in line:
            # `url=$(phi postgres up | tail -1)` before it: the test suite's server, in a
            # schema of its own.
            with fresh_schema_sync() as url:
                result = fresh_shell(home, line, cwd=work, url=url, **env)
        else:
            result = fresh_shell(home, line, cwd=work, **env)
        assert result.returncode == 0, f"{line}\n{result.stdout}{result.stderr}"
        assert "Traceback" not in result.stderr, line
        if not row_ids and line.startswith("phi memory add") and "scratch" in line:
            listed = fresh_shell(home, "phi memory export -n scratch", cwd=work, **env)
            row_ids = [json.loads(row)["row_id"] for row in listed.stdout.splitlines()]
    exported = (work / "alice.jsonl").read_text().splitlines()
    assert json.loads(exported[0])["content"] == "likes rust"


def python_examples() -> list[str]:
    """The README's fenced Python blocks."""
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_python_examples_run_as_written(tmp_path: Path) -> None:
    examples = python_examples()
    assert examples
    for source in examples:
        script = tmp_path / "example.py"
        script.write_text(source)
        env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"]}
        result = subprocess.run(
            [sys.executable, str(script)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr


def mcp_config() -> dict[str, Any]:
    """The `.mcp.json` example of the README."""
    found = re.search(r"`(\{\"mcpServers\".*\})`", README.read_text())
    assert found is not None, "no .mcp.json example in the README"
    config: dict[str, Any] = json.loads(found.group(1))["mcpServers"]["phi"]
    return config


@pytest.mark.anyio
async def test_the_mcp_json_example_starts_phi_after_the_quick_start(tmp_path: Path) -> None:
    from mcp.client.stdio import stdio_client

    from mcp import Client, StdioServerParameters

    home = fresh_home(tmp_path)
    assert fresh_shell(home, f"source {ROOT}/scripts/_setup.sh", cwd=tmp_path).returncode == 0
    config = mcp_config()
    # An MCP client started from a login shell: PATH as Debian's ~/.profile leaves it.
    # No PHI_HOME: clients filter the environment; the example names the home instead.
    env = {"HOME": str(home), "PATH": f"{home}/.local/bin:/usr/local/bin:/usr/bin:/bin"}
    args = [arg.replace("/home/you", str(home)) for arg in config["args"]]
    assert str(home / ".phi") in args
    params = StdioServerParameters(command=config["command"], args=args, env=env, cwd=str(tmp_path))
    # The server's stderr to a file: stdio_client's default is the `sys.stderr` of
    # whenever `mcp` was first imported, which may be a test runner's capture.
    with (tmp_path / "mcp.log").open("w") as errlog:
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, read_timeout_seconds=120) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"remember", "recall", "preload"} <= names
            result = await client.call_tool(
                "remember", {"content": "the build uses uv", "namespace": "myagent-notes"}
            )
            assert not result.is_error, result.content
            assert result.structured_content is not None
            assert result.structured_content["namespace"] == "myagent-notes"
    assert (home / ".phi" / "memory.db").exists()
    assert (
        f"serves the memory at {home / '.phi' / 'memory.db'}" in (tmp_path / "mcp.log").read_text()
    )
