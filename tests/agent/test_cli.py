"""`phi run` and `phi prompt --preview` at the command line."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.cli import app
from phi.runtime.sandbox_run import DEFAULT_FOLLOW_UP

from ..conftest import TEST_PORT


def test_run_names_each_missing_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PHI_HANDLE", raising=False)
    monkeypatch.delenv("PHI_APP_PASSWORD", raising=False)
    result = CliRunner().invoke(app, ["run"])
    assert result.exit_code == 2
    assert "PHI_HANDLE" in result.output and "PHI_APP_PASSWORD" in result.output


def test_prompt_needs_preview() -> None:
    result = CliRunner().invoke(app, ["prompt"])
    assert result.exit_code == 2
    assert "--preview" in result.output


def test_prompt_preview_shows_the_batch_and_marks_nothing_seen(
    cast: SandboxInfo,
    sandbox: Sandbox,
    sandbox_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def alice_asks() -> str:
        async with PhiClient(cast.client_config("phi")) as phi:
            await sandbox.wait_for_indexing()
            await phi.update_seen()
        async with PhiClient(cast.client_config("alice")) as alice:
            (ref,) = await alice.post("@phi.test what is the preview of your mind?")
        await sandbox.wait_for_indexing()
        return ref.uri

    uri = anyio.run(alice_asks)
    monkeypatch.setenv("PHI_HOME", str(sandbox_home))
    monkeypatch.setenv("PHI_SANDBOX_PORT", str(TEST_PORT))
    monkeypatch.setenv("PHI_MEMORY_URL", str(tmp_path / "memory.db"))
    monkeypatch.setenv("PHI_MODEL", "test")
    result = CliRunner().invoke(app, ["prompt", "--preview", "--sandbox"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("you are phi")
    assert "[OPERATING RULES]" in out
    assert "[YOUR INFRASTRUCTURE]\nhandle: @phi.test" in out
    assert "[NOW]" in out
    assert "[GOALS — io.phi.goal" in out
    assert '→ mention from @alice.test: "@phi.test what is the preview of your mind?"' in out
    assert f'uri: "{uri}"' in out
    assert "[FIRST INTERACTION WITH @alice.test]" in out

    async def still_unread() -> bool:
        async with PhiClient(cast.client_config("phi")) as phi:
            page = await phi.list_notifications()
        return any(n.uri == uri and not n.is_read for n in page.notifications)

    assert anyio.run(still_unread)


def test_sandbox_run_streams_a_conversation_with_the_local_brain(
    cast: SandboxInfo,
    sandbox: Sandbox,
    sandbox_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Quick start's main job, on the test network: alice opens, SmolLM2 answers."""

    async def no_unread() -> None:
        await sandbox.wait_for_indexing()
        async with PhiClient(cast.client_config("phi")) as phi:
            await phi.update_seen()

    anyio.run(no_unread)
    monkeypatch.setenv("PHI_HOME", str(sandbox_home))
    monkeypatch.setenv("PHI_SANDBOX_PORT", str(TEST_PORT))
    monkeypatch.setenv("PHI_MEMORY_URL", str(tmp_path / "memory.db"))
    monkeypatch.setenv("PHI_CONTROL_PORT", "0")
    for name in ("PHI_MODEL", "PHI_MEMORY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(
        app, ["sandbox", "run", "--until-reply", "--poll", "0.5", "--greeting", GREETING]
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "brain: SmolLM2-135M-Instruct (air-gapped" in out
    assert "a tiny model for trying phi out" in out
    assert f"@alice.test posted: {GREETING}" in out
    # A reply, or the guard's refusal of what the tiny model wrote as one (often an echo).
    assert "replied to @alice.test: " in out or "reply_to not posted (" in out, out
    assert "model" in out and "phi itself" in out  # the tick's timing line
    # alice comes back in a new thread; the stream shows what phi recalled about her.
    came_back = out.index(f"@alice.test posted: {DEFAULT_FOLLOW_UP}")
    assert "recalled about @alice.test: " in out[came_back:]
    assert "what phi now holds about @alice.test (phi-users-did:plc:" in out[came_back:]
    assert "scheduled:" not in out  # alice first: no musing or summary refresh before her
    assert "the network keeps running (phi sandbox down stops it)" in out
    assert out.rstrip().endswith(
        f"this run's memory: {tmp_path / 'memory.db'} (read it with phi memory stats "
        "--sandbox, or phi web --sandbox)"
    )


GREETING = "@phi.test hi phi, it's alice from the sandbox test. how are you?"
