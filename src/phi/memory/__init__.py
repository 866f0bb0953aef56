"""phi's memory engine: namespaces, kinds, trust, graph edges, hybrid recall, preload.

This package imports nothing from the rest of phi except `phi.errors`. `Memory` is its one
door: callers outside the package never hold a store (`phi.memory.store`); they use
`Memory`, its `state` (`phi.memory.state`), the read-only views of `phi.memory.views`, and
the learning passes of `phi.memory.learning`.
"""

from phi.memory.embed import Embedder, MiniLMEmbedder
from phi.memory.ingest import IngestPolicy, extract_refs
from phi.memory.memory import Memory, Neighbour, Step
from phi.memory.model import (
    USER_NAMESPACE_PREFIX,
    Edge,
    EdgeType,
    Kind,
    NewRow,
    Row,
    Status,
    Trust,
    Turn,
    user_namespace,
)
from phi.memory.preload import ContextWindow
from phi.memory.recall import DEFAULT_RECIPE, Found, Recalled, RecallRecipe
from phi.memory.reembed import ReembedProgress, ReembedReport
from phi.memory.state import KeyValueState, StateEntry
from phi.memory.store import ForgetReport, NamespaceInfo, RowForgetReport, StoreStats

__all__ = [
    "DEFAULT_RECIPE",
    "USER_NAMESPACE_PREFIX",
    "ContextWindow",
    "Edge",
    "EdgeType",
    "Embedder",
    "ForgetReport",
    "Found",
    "IngestPolicy",
    "KeyValueState",
    "Kind",
    "Memory",
    "MiniLMEmbedder",
    "NamespaceInfo",
    "Neighbour",
    "NewRow",
    "RecallRecipe",
    "Recalled",
    "ReembedProgress",
    "ReembedReport",
    "Row",
    "RowForgetReport",
    "StateEntry",
    "Status",
    "Step",
    "StoreStats",
    "Trust",
    "Turn",
    "extract_refs",
    "user_namespace",
]
