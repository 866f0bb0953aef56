"""Fixtures for memory tests: the real MiniLM embedder (loaded once) and fresh stores."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from phi.memory import Memory, MiniLMEmbedder
from phi.memory.embed import Vectors


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def memory(tmp_path: Path, minilm: MiniLMEmbedder) -> AsyncIterator[Memory]:
    async with Memory.open(tmp_path / "memory.db", embedder=minilm) as opened:
        yield opened


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
