"""`phi memory blocks history`: a block's edits, newest first, through the real CLI on a real
store."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from phi.cli import app


def phi(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _new_store(path: Path) -> str:
    """A store that exists (reading commands refuse a path with none, as a likely typo)."""
    assert phi("memory", "add", "a first note", "-n", "scratch", "--db", str(path))[0] == 0
    return str(path)


def test_history_lists_each_version_newest_first(tmp_path: Path) -> None:
    db = _new_store(tmp_path / "blocks.db")
    assert phi("memory", "blocks", "history", "zeitgeist", "--db", db) == (
        0,
        "block 'zeitgeist' was never written\n",
    )
    assert phi("memory", "blocks", "set", "zeitgeist", "an eclipse", "--db", db)[0] == 0
    assert phi("memory", "blocks", "append", "zeitgeist", "on friday", "--db", db)[0] == 0
    assert phi("memory", "blocks", "replace", "zeitgeist", "friday", "sunday", "--db", db)[0] == 0

    code, out = phi("memory", "blocks", "history", "zeitgeist", "--db", db, "--json")
    assert code == 0, out
    versions = json.loads(out)
    assert [(v["version"], v["content"]) for v in versions] == [
        (3, "an eclipse\non sunday"),
        (2, "an eclipse\non friday"),
        (1, "an eclipse"),
    ]
    code, out = phi("memory", "blocks", "history", "zeitgeist", "--limit", "1", "--db", db)
    assert code == 0 and out.startswith("v3  ") and "an eclipse\non sunday" in out
    assert "v2" not in out


def test_an_unknown_block_is_a_one_line_error(tmp_path: Path) -> None:
    code, out = phi("memory", "blocks", "history", "mood", "--db", _new_store(tmp_path / "b.db"))
    assert code == 2
    assert "unknown block 'mood'" in out
