"""The OpenAI chat-completions shapes the grammar adapter and its transports exchange.

Only the fields phi sends and reads are spelled out: a transport may accept more.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_ai.exceptions import UnexpectedModelBehavior

__all__ = [
    "ChatMessage",
    "ChatRequest",
    "Complete",
    "Completion",
    "JsonSchemaFormat",
    "ResponseFormat",
    "parse_completion",
]

Role = Literal["system", "user", "assistant"]


class ChatMessage(TypedDict):
    """One message; `content` is always text (the tiny model knows no tool roles)."""

    role: Role
    content: str


class JsonSchemaFormat(TypedDict):
    name: str
    schema: dict[str, Any]
    strict: bool


class ResponseFormat(TypedDict):
    type: Literal["json_schema"]
    json_schema: JsonSchemaFormat


class ChatRequest(TypedDict):
    """A chat-completions request body."""

    messages: list[ChatMessage]
    response_format: ResponseFormat
    max_tokens: int
    temperature: float
    seed: int
    top_p: NotRequired[float]
    frequency_penalty: NotRequired[float]
    presence_penalty: NotRequired[float]
    # llama.cpp's own fields (`phi.llm.sampling`): other servers may refuse them.
    logit_bias: NotRequired[list[list[str | float]]]
    dry_multiplier: NotRequired[float]
    dry_base: NotRequired[float]
    dry_allowed_length: NotRequired[int]
    dry_penalty_last_n: NotRequired[int]
    dry_sequence_breakers: NotRequired[list[str]]


Complete: TypeAlias = Callable[[ChatRequest], Awaitable[Mapping[str, Any]]]
"""A transport: takes a chat-completions request, returns the response body (JSON data)."""


class _Read(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Message(_Read):
    content: str | None = None


class _Choice(_Read):
    message: _Message
    finish_reason: str | None = None


class _Usage(_Read):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Completion(_Read):
    """The fields of a chat-completions response the adapter reads."""

    choices: list[_Choice]
    usage: _Usage = _Usage()
    id: str | None = None

    @property
    def text(self) -> str:
        return self.choices[0].message.content or ""

    @property
    def finish_reason(self) -> str | None:
        return self.choices[0].finish_reason


def parse_completion(body: Mapping[str, Any]) -> Completion:
    """Read a transport's answer, refusing one without a first choice."""
    try:
        completion = Completion.model_validate(body)
    except ValidationError as error:
        raise UnexpectedModelBehavior(
            f"the model's answer is not a chat completion: {error}", body=repr(body)
        ) from error
    if not completion.choices:
        raise UnexpectedModelBehavior("the model's answer has no choices", body=repr(body))
    return completion
