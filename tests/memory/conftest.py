"""Test helpers for memory tests (the shared fixtures live in `tests/conftest.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phi.memory.embed import Vectors


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
