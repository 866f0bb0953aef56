"""`Found`: what `Memory.search` returns, the recalled rows and what recall could not see.

A row written with `defer_embedding` is stored and text-searchable at once but has no
vector until the embedder reaches it; until then dense recall cannot find it. A search
whose scope holds such rows says how many (`unembedded`), so a caller (a person at the
CLI, an agent over MCP) knows an answer by meaning may be missing rather than absent.
"""

from __future__ import annotations

from collections.abc import Iterable

from phi.memory.recall import Recalled

__all__ = ["Found"]


class Found(list[Recalled]):
    """The rows a search recalled, best first (a list, so callers that only want the rows
    use it as one), and how many rows of its scope it could not see by meaning.

    A list rather than a wrapper: most callers (the prompt, the learning passes, the
    benchmarks) only rank and read rows, and stay as they were.
    """

    unembedded: int
    """Rows within the search's scope (its namespaces and filters) that wait for their
    vector: text search finds them, dense recall does not yet. 0 when none wait."""

    def __init__(self, hits: Iterable[Recalled] = (), *, unembedded: int = 0) -> None:
        super().__init__(hits)
        self.unembedded = unembedded

    def __repr__(self) -> str:
        return f"Found({list.__repr__(self)}, unembedded={self.unembedded})"

    def to_json(self) -> dict[str, object]:
        """`{"results": [...], "unembedded": N}`: each result as `Recalled.to_json`."""
        return {"results": [hit.to_json() for hit in self], "unembedded": self.unembedded}
