"""`phi sandbox ...` against the session's running network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phi.atproto.sandbox import Sandbox
from phi.cli import app


@pytest.fixture
def cli_env(sandbox: Sandbox, sandbox_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the CLI at the session's network (its state folder is `<home>/sandbox`)."""
    monkeypatch.setenv("PHI_HOME", str(sandbox_home))
    monkeypatch.setenv("PHI_SANDBOX_PORT", str(sandbox.config.base_port))


@pytest.mark.usefixtures("cli_env")
def test_status_say_like_follow() -> None:
    runner = CliRunner()
    status = runner.invoke(app, ["sandbox", "status"])
    assert status.exit_code == 0, status.output
    assert status.output.startswith("running")
    assert "@alice.test" in status.output

    said = runner.invoke(app, ["sandbox", "say", "alice", "hi @phi.test from the CLI"])
    assert said.exit_code == 0, said.output
    uri = said.output.strip()
    assert uri.startswith("at://")
    assert "/app.bsky.feed.post/" in uri

    replied = runner.invoke(app, ["sandbox", "say", "bob", "me too", "--reply-to", uri])
    assert replied.exit_code == 0, replied.output
    liked = runner.invoke(app, ["sandbox", "like", "operator", uri])
    assert liked.exit_code == 0, liked.output
    assert "/app.bsky.feed.like/" in liked.output
    followed = runner.invoke(app, ["sandbox", "follow", "bob", "alice.test"])
    assert followed.exit_code == 0, followed.output
    assert "/app.bsky.graph.follow/" in followed.output

    # The same actions for scripts: JSON naming who wrote what.
    said = runner.invoke(app, ["sandbox", "say", "alice", "hi again @phi.test", "--json"])
    assert said.exit_code == 0, said.output
    posted = json.loads(said.stdout)
    assert posted["as"] == "alice" and len(posted["uris"]) == 1
    assert "/app.bsky.feed.post/" in posted["uris"][0]
    liked = runner.invoke(app, ["sandbox", "like", "bob", posted["uris"][0], "--json"])
    assert liked.exit_code == 0, liked.output
    assert json.loads(liked.stdout)["as"] == "bob"
    assert "/app.bsky.feed.like/" in json.loads(liked.stdout)["uri"]
    followed = runner.invoke(app, ["sandbox", "follow", "operator", "alice.test", "--json"])
    assert followed.exit_code == 0, followed.output
    assert "/app.bsky.graph.follow/" in json.loads(followed.stdout)["uri"]

    unknown = runner.invoke(app, ["sandbox", "say", "mallory", "hello"])
    assert unknown.exit_code == 2  # a mistake to fix, like every user mistake
    assert "no cast member 'mallory'" in unknown.output


def test_status_when_nothing_runs() -> None:
    result = CliRunner().invoke(app, ["sandbox", "status"])
    assert result.exit_code == 1
    assert result.output.strip() == "stopped"
