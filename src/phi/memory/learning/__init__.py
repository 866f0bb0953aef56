"""Memory that learns: extraction, reconciliation, synthesis, summaries, blocks and review.

Every pass that needs a language model takes a `SmallModel` (a pydantic-ai model plus call
accounting); the caller chooses the model (`PHI_MEMORY_MODEL` at the CLI). The passes read
and write rows through `Memory` (and `Memory.rows` for the few reads it has no method for)
and keep their bookkeeping behind `Memory.ledger` (`phi.memory.store.ledger.Ledger`): the
marks of what each pass processed, the versioned blocks and cached syntheses, the log of
model calls.
"""

from phi.memory.learning.blocks import (
    CORE_BLOCKS,
    DEFAULT_LIMIT,
    AttachedBlocks,
    Block,
    Blocks,
    user_label,
)
from phi.memory.learning.extract import EXTRACT_PASS, ExtractReport, extract, person_turns
from phi.memory.learning.reconcile import (
    DEFAULT_POLICY,
    NEAR_DUPLICATE,
    Decision,
    Proposal,
    ReconcilePolicy,
    reconcile,
)
from phi.memory.learning.review import PUBLIC, ReviewOutcome, review
from phi.memory.learning.summary import (
    SUMMARY_PASS,
    SummaryReport,
    refresh_summaries,
    refresh_summary,
)
from phi.memory.learning.synthesis import EPISODIC, Synthesis, synthesize_episodic
from phi.memory.learning.usage import PURPOSES, Purpose, SmallModel, model_usage

__all__ = [
    "CORE_BLOCKS",
    "DEFAULT_LIMIT",
    "DEFAULT_POLICY",
    "EPISODIC",
    "EXTRACT_PASS",
    "NEAR_DUPLICATE",
    "PUBLIC",
    "PURPOSES",
    "SUMMARY_PASS",
    "AttachedBlocks",
    "Block",
    "Blocks",
    "Decision",
    "ExtractReport",
    "Proposal",
    "Purpose",
    "ReconcilePolicy",
    "ReviewOutcome",
    "SmallModel",
    "SummaryReport",
    "Synthesis",
    "extract",
    "model_usage",
    "person_turns",
    "reconcile",
    "refresh_summaries",
    "refresh_summary",
    "review",
    "synthesize_episodic",
    "user_label",
]
