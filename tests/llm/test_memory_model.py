"""One model resolution for every surface: `phi memory extract` takes the values the
runtime takes for memory's passes, `local` included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phi.cli import app


def test_memory_extract_accepts_the_local_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHI_MEMORY_MODEL", "local")
    db = str(tmp_path / "m.db")
    # Reading commands refuse a store that does not exist (a likely typo): make one.
    assert (
        CliRunner().invoke(app, ["memory", "add", "hello", "-n", "notes", "--db", db]).exit_code
        == 0
    )
    result = CliRunner().invoke(app, ["memory", "extract", "--dry-run", "--json", "--db", db])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["dry_run"] is True


def test_an_unknown_memory_model_names_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHI_MEMORY_MODEL", "nosuchprovider:x")
    result = CliRunner().invoke(app, ["memory", "extract", "--db", str(tmp_path / "m.db")])
    assert result.exit_code == 2
    assert result.output.startswith("error: PHI_MEMORY_MODEL 'nosuchprovider:x' cannot be used: ")
