"""Reference figures of other retrieval methods on LoCoMo, measured here the same way.

Turn-level evidence recall, categories 1-4, no language model, all-MiniLM-L6-v2 for every
dense part (see `data/locomo/README.md`). The dev-split rows can be
compared with `phi bench locomo` on `locomo-dev.json` directly; the held-out rows were
measured on the five conversations kept out of the development split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["PEERS", "PeerFigure"]


@dataclass(frozen=True, kw_only=True)
class PeerFigure:
    """One method's recall on one split, as measured in this project."""

    method: str
    split: Literal["dev", "held-out"]
    """`dev`: the five conversations of `locomo-dev.json`; `held-out`: the other five."""
    recall: tuple[float | None, float | None, float | None, float | None]
    """R@1, R@5, R@10, R@20 (None where it was not measured)."""


PEERS: Final = (
    PeerFigure(method="dense cosine (MiniLM)", split="dev", recall=(0.183, 0.421, 0.508, 0.593)),
    PeerFigure(method="BM25 (bm25s)", split="dev", recall=(0.260, 0.452, 0.527, 0.594)),
    PeerFigure(method="RRF of dense + BM25", split="dev", recall=(0.246, 0.465, 0.558, 0.687)),
    PeerFigure(method="mem0 2.2.1 hybrid", split="held-out", recall=(None, None, 0.524, None)),
    PeerFigure(method="RRF of dense + BM25", split="held-out", recall=(None, None, 0.511, None)),
    PeerFigure(method="engram-search 0.1.7", split="held-out", recall=(None, None, 0.342, None)),
)
