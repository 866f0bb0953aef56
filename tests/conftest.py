"""Fixtures shared by every test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from phi.memory import Memory, MiniLMEmbedder


@pytest.fixture(autouse=True)
def phi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point all of phi's local state at a temporary folder."""
    home = tmp_path / "phi-home"
    home.mkdir()
    monkeypatch.setenv("PHI_HOME", str(home))
    return home


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The real embedder, loaded once for the whole run."""
    return MiniLMEmbedder()


@pytest.fixture
async def memory(tmp_path: Path, minilm: MiniLMEmbedder) -> AsyncIterator[Memory]:
    """A fresh SQLite store with the real embedder."""
    async with Memory.open(tmp_path / "memory.db", embedder=minilm) as opened:
        yield opened
