"""Every language-model call of the memory passes goes through `SmallModel.ask`.

One place counts the calls, logs them with their purpose (to Python logging and to the
store's usage log, so `phi memory usage` shows the cost per pass) and turns a malformed
answer into `None` instead of an exception: a pass then falls back to its safe choice.
Calls made in a dry run are logged too: they cost the same.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal, TypeVar

from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry, UnexpectedModelBehavior
from pydantic_ai.models import Model, infer_model
from pydantic_ai.usage import RunUsage

from phi.memory.memory import Memory
from phi.memory.model import utc_now
from phi.memory.store.ledger import ModelCallRecord, UsageTotals

__all__ = ["PURPOSES", "Purpose", "SmallModel", "model_usage"]

logger = logging.getLogger("phi.memory.learning")

Purpose = Literal["extract", "reconcile", "synthesize", "summarize", "review"]
PURPOSES: Final[tuple[Purpose, ...]] = ("extract", "reconcile", "synthesize", "summarize", "review")

OutputT = TypeVar("OutputT", bound=BaseModel)


@dataclass(kw_only=True)
class SmallModel:
    """The language model of memory's small passes, with every call counted and logged."""

    model: Model | str
    """A pydantic-ai `Model` or model string (`PHI_MEMORY_MODEL`), chosen by the caller."""
    memory: Memory
    """Where each call is logged for cost accounting."""
    retries: int = 1
    """Extra requests allowed when an answer does not fit its schema."""
    calls: Counter[str] = field(default_factory=Counter, init=False)
    """Calls made through this object, per purpose (the store's log holds every process's)."""
    requests: Counter[str] = field(default_factory=Counter, init=False)
    _resolved: Model | None = field(default=None, init=False, repr=False)

    def _model(self) -> Model:
        """The model, resolved from its string once (a provider client is made only once)."""
        if self._resolved is None:
            self._resolved = (
                self.model if isinstance(self.model, Model) else infer_model(self.model)
            )
        return self._resolved

    @property
    def model_name(self) -> str:
        return self.model if isinstance(self.model, str) else self.model.model_name

    async def ask(
        self,
        purpose: Purpose,
        prompt: str,
        *,
        instructions: str,
        output_type: type[OutputT],
        check: Callable[[OutputT], str | None] | None = None,
    ) -> OutputT | None:
        """One structured answer, or `None` when the model could not give a valid one.

        `check` returns what is wrong with an answer that fits the schema but not the
        question (an unknown candidate number, say); the model gets that message and its
        retries to fix it, as it does for an answer that does not fit the schema.
        """
        agent = Agent(self._model(), output_type=output_type, instructions=instructions)
        if check is not None:
            validate = check

            @agent.output_validator
            def _check(answer: OutputT) -> OutputT:
                problem = validate(answer)
                if problem is not None:
                    raise ModelRetry(problem)
                return answer

        usage = RunUsage()
        outcome = "ok"
        answer: OutputT | None = None
        try:
            result = await agent.run(prompt, usage=usage, retries=self.retries)
            answer = result.output
        except UnexpectedModelBehavior as exc:
            outcome = "malformed"
            logger.warning("memory %s: unusable model answer (%s)", purpose, exc)
        await self.record(purpose, usage, outcome)
        return answer

    async def record(self, purpose: Purpose, usage: RunUsage, outcome: str) -> None:
        """Count and log one call."""
        self.calls[purpose] += 1
        self.requests[purpose] += usage.requests
        logger.info(
            "memory %s: model %s, %d requests, %d in / %d out tokens, %s",
            purpose,
            self.model_name,
            usage.requests,
            usage.input_tokens,
            usage.output_tokens,
            outcome,
        )
        await self.memory.ledger.log_model_call(
            ModelCallRecord(
                purpose=purpose,
                model=self.model_name,
                requests=usage.requests,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                outcome=outcome,
                called_at=utc_now(),
            )
        )

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


async def model_usage(memory: Memory) -> list[UsageTotals]:
    """Calls, requests and tokens per pass, as logged in the store."""
    return await memory.ledger.model_usage()
