"""Fixtures shared by every test."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def phi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point all of phi's local state at a temporary folder."""
    home = tmp_path / "phi-home"
    home.mkdir()
    monkeypatch.setenv("PHI_HOME", str(home))
    return home
