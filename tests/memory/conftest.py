"""Test helpers for memory tests (the shared fixtures live in `tests/conftest.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from phi.memory import Memory, MiniLMEmbedder
from phi.memory.embed import Vectors
from tests.postgres.schemas import fresh_schema


@dataclass
class TinyEmbedder:
    """A deterministic bag-of-letters embedder: real code, for tests that need another model."""

    name: str = "tiny-letters"
    dimension: int = 26

    async def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[i, (ord(ch) - 97) % self.dimension] += 1.0
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-9)
        return out


@pytest.fixture(params=["sqlite", "postgresql"])
async def memory(
    request: pytest.FixtureRequest, tmp_path: Path, minilm: MiniLMEmbedder
) -> AsyncIterator[Memory]:
    """A fresh store with the real embedder, once per backend: the engine's tests run on
    SQLite (a file) and on PostgreSQL (a fresh schema on the test server)."""
    if request.param == "sqlite":
        async with Memory.open(tmp_path / "memory.db", embedder=minilm) as opened:
            yield opened
        return
    async with fresh_schema() as url, Memory.open(url, embedder=minilm) as opened:
        yield opened
