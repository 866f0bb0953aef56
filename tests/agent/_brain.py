"""A scripted brain for the agent tests: pydantic-ai's `FunctionModel` deciding from the
system prompt, so the tests check what phi does with an answer, not what a model would say."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pydantic_ai import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ModelRequest, SystemPromptPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

Decide = Callable[[str, int], Awaitable[list[ToolCallPart]]]
"""Given the system prompt and the step (0 = first answer of the run), the tool calls to make;
none ends the run."""

_MENTION = re.compile(r'→ (?:mention|reply|quote) from @(\S+): .*\n\s+uri: "(at://[^"]+)"')


def mentions(prompt: str) -> list[tuple[str, str]]:
    """(handle, uri) of each post shown in [NEW NOTIFICATIONS]."""
    return _MENTION.findall(prompt)


def call(tool: str, **args: object) -> ToolCallPart:
    return ToolCallPart(tool_name=tool, args=dict(args))


@dataclass
class Brain:
    """Records every run's system prompt and every tool result."""

    decide: Decide
    prompts: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    _step: int = 0

    async def _answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if not returns:
            self._step = 0
            system = "\n\n".join(
                p.content
                for m in messages
                if isinstance(m, ModelRequest)
                for p in m.parts
                if isinstance(p, SystemPromptPart) and p.content
            )
            self.prompts.append(system)
        else:
            self.results.extend(str(p.content) for p in returns)
            self._step += 1
        calls = await self.decide(self.prompts[-1], self._step)
        return ModelResponse(parts=list(calls) if calls else [TextPart("done")])

    def model(self) -> FunctionModel:
        return FunctionModel(self._answer)
