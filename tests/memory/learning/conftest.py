"""Fixtures for the learning passes: no real model requests, and a scripted small model."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import models
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phi.memory import Memory
from phi.memory.learning import SmallModel

Answer = dict[str, Any] | str
"""Tool arguments for the output tool, or a raw string (a malformed answer)."""
Handler = Callable[[str], Answer]

_PURPOSE_BY_FIELD = {
    "observations": "extract",
    "action": "reconcile",
    "block": "synthesize",
    "summary": "summarize",
    "verdicts": "review",
}


@pytest.fixture(autouse=True)
def _no_model_requests() -> Iterator[None]:
    allowed = models.ALLOW_MODEL_REQUESTS
    models.ALLOW_MODEL_REQUESTS = False
    yield
    models.ALLOW_MODEL_REQUESTS = allowed


def last_prompt(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


@dataclass
class Script:
    """A scripted small model: one handler per pass, every request counted and kept."""

    handlers: dict[str, Handler] = field(default_factory=dict)
    requests: Counter[str] = field(default_factory=Counter)
    prompts: dict[str, list[str]] = field(default_factory=dict)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tool = info.output_tools[0]
        properties = tool.parameters_json_schema.get("properties", {})
        purpose = next(p for f, p in _PURPOSE_BY_FIELD.items() if f in properties)
        self.requests[purpose] += 1
        prompt = last_prompt(messages)
        self.prompts.setdefault(purpose, []).append(prompt)
        handler = self.handlers.get(purpose)
        if handler is None:
            raise AssertionError(f"unexpected {purpose} call:\n{prompt}")
        # A string is sent as raw arguments: not JSON, it is a malformed answer.
        return ModelResponse(parts=[ToolCallPart(tool_name=tool.name, args=handler(prompt))])

    def model(self, memory: Memory) -> SmallModel:
        return SmallModel(model=FunctionModel(self), memory=memory)


@pytest.fixture
def script() -> Script:
    return Script()
