"""phi's memory engine: namespaces, kinds, trust, graph edges, hybrid recall, preload.

This package imports nothing from the rest of phi except `phi.errors`.
"""

from phi.memory.embed import Embedder, MiniLMEmbedder
from phi.memory.ingest import IngestPolicy, extract_refs
from phi.memory.memory import Memory, Neighbour, Step
from phi.memory.model import Edge, EdgeType, Kind, NewRow, Row, Status, Trust, Turn, user_namespace
from phi.memory.preload import ContextWindow
from phi.memory.recall import DEFAULT_RECIPE, Recalled, RecallRecipe

__all__ = [
    "DEFAULT_RECIPE",
    "ContextWindow",
    "Edge",
    "EdgeType",
    "Embedder",
    "IngestPolicy",
    "Kind",
    "Memory",
    "MiniLMEmbedder",
    "Neighbour",
    "NewRow",
    "RecallRecipe",
    "Recalled",
    "Row",
    "Status",
    "Step",
    "Trust",
    "Turn",
    "extract_refs",
    "user_namespace",
]
