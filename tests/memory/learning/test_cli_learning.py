"""`phi memory extract | review | history | blocks | usage` through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phi.cli import app, memory_learning

assert memory_learning.__name__  # imported: it registers its commands on `phi memory`

ALICE = "phi-users-did:plc:alice"


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def phi(*args: str) -> tuple[int, str]:
    """Exit code and output: standard output alone for `--json` (what a script parses)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout if "--json" in args else result.output


@pytest.mark.parametrize("command", ["extract", "review", "synthesize"])
def test_learning_commands_name_the_missing_setting(
    db: str, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PHI_MEMORY_MODEL", raising=False)
    args = ["memory", command, *(["crows"] if command == "synthesize" else []), "--db", db]
    code, out = phi(*args)
    assert code == 2 and "set PHI_MEMORY_MODEL" in out


def test_unusable_model_string_is_refused(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHI_MEMORY_MODEL", "no-such-model")
    code, out = phi("memory", "extract", "--db", db)
    assert code == 2 and "PHI_MEMORY_MODEL 'no-such-model' cannot be used" in out


def test_extract_dry_run_and_usage(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHI_MEMORY_MODEL", "test")  # pydantic-ai's TestModel
    code, out = phi("memory", "add", "x", "-n", ALICE, "--kind", "interaction", "--db", db)
    assert code == 0, out
    code, out = phi("memory", "extract", "--dry-run", "--db", db, "--json")
    assert code == 0, out
    assert json.loads(out)["dry_run"] is True
    code, out = phi("memory", "usage", "--db", db, "--json")
    assert code == 0 and out.strip() == "[]"  # the interaction has no turns: no call


def test_history_shows_the_chain_with_sources(db: str) -> None:
    code, out = phi(
        "memory", "add", "prefers nate", "-n", ALICE, "--kind", "observation",
        "--source", "at://a/1", "--db", db, "--json",
    )  # fmt: skip
    assert code == 0, out
    old = json.loads(out)["row_id"]
    code, out = phi("memory", "history", old, "--db", db)
    assert code == 0 and "[active] prefers nate" in out and "source at://a/1" in out
    code, out = phi("memory", "history", "nope", "--db", db)
    assert code == 2 and "no memory row with id 'nope'" in out


def test_blocks_commands_enforce_the_limit(db: str) -> None:
    code, out = phi("memory", "blocks", "set", "persona", "curious about crows", "--db", db)
    assert code == 0 and "[BLOCK persona — 19/5000 chars]" in out
    code, out = phi("memory", "blocks", "append", "persona", "x" * 5000, "--db", db)
    assert code == 2 and "over its limit of 5000" in out
    code, out = phi(
        "memory", "blocks", "replace", "persona", "crows", "ravens", "--dry-run", "--db", db
    )
    assert code == 0 and "[dry run]" in out and "ravens" in out
    code, out = phi("memory", "blocks", "view", "persona", "--db", db, "--json")
    assert code == 0 and json.loads(out)["content"] == "curious about crows"
    code, out = phi("memory", "blocks", "list", "--db", db)
    assert code == 0 and "persona" in out and "zeitgeist" in out


def test_summarize_and_review_dry_runs(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHI_MEMORY_MODEL", "test")
    code, out = phi(
        "memory", "add", "likes crows", "-n", ALICE, "--kind", "observation", "--db", db
    )
    assert code == 0, out
    code, out = phi("memory", "summarize", "--dry-run", "--db", db)
    assert code == 0 and "[dry run] phi-users-did:plc:alice: not refreshed (0 new" in out
    code, out = phi("memory", "review", "--dry-run", "--db", db, "--json")
    assert code == 0, out
    assert [o["content"] for o in json.loads(out)] == ["likes crows"]
    code, out = phi("memory", "usage", "--db", db)
    assert code == 0 and "review" in out and "1 calls" in out


def test_blocks_forget_needs_confirmation(db: str) -> None:
    assert phi("memory", "blocks", "set", "user:did:plc:alice", "hi", "--db", db)[0] == 0
    code, out = phi("memory", "blocks", "forget", "did:plc:alice", "--db", db)
    assert code == 2 and "--yes" in out
    code, out = phi("memory", "blocks", "forget", "did:plc:alice", "--yes", "--db", db)
    assert code == 0 and "erased 1 version of" in out
