"""Memory that learns: extraction, reconciliation, synthesis, summaries, blocks and review.

Every pass that needs a language model takes a `SmallModel` (a pydantic-ai model plus call
accounting); the caller chooses the model (`PHI_MEMORY_MODEL` at the CLI).
"""

from phi.memory.learning.extract import EXTRACT_PASS, ExtractReport, extract, person_turns
from phi.memory.learning.reconcile import (
    DEFAULT_POLICY,
    NEAR_DUPLICATE,
    Decision,
    Proposal,
    ReconcilePolicy,
    reconcile,
)
from phi.memory.learning.usage import PURPOSES, Purpose, SmallModel, model_usage

__all__ = [
    "DEFAULT_POLICY",
    "EXTRACT_PASS",
    "NEAR_DUPLICATE",
    "PURPOSES",
    "Decision",
    "ExtractReport",
    "Proposal",
    "Purpose",
    "ReconcilePolicy",
    "SmallModel",
    "extract",
    "model_usage",
    "person_turns",
    "reconcile",
]
