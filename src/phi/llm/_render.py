"""pydantic-ai messages as plain chat text, and trimming to a size budget.

The tiny local model knows no tool roles: a tool call it made earlier is shown as the JSON
it answered, a tool's result as a user message naming the tool. No message is ever empty
(servers refuse `content: null`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    StructuredContent,
    SystemPromptPart,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from phi.llm._chat import ChatMessage

__all__ = ["Conversation", "Trimmed", "call_key", "render", "trim"]

_MESSAGE_OVERHEAD: Final = 12
"""Characters a message costs beyond its content (the chat template's role markers)."""
_KEEP_PER_MESSAGE: Final = 200
"""A shortened message keeps at least this many characters (its head and tail)."""


@dataclass(frozen=True, kw_only=True)
class Conversation:
    """A history rendered as text."""

    system: list[str]
    """The system prompt parts of the first request, in order."""
    turns: list[ChatMessage]
    """Everything else, oldest first."""
    acted: bool
    """Whether a tool has returned since the latest user prompt."""
    calls: frozenset[str]
    """The tool calls made since the latest user prompt, each as `call_key` gives it (a call
    its tool sent back for a retry did not happen and is not counted)."""
    retrying: bool
    """Whether the newest request sends a tool call back for a retry (e.g. degenerate text
    the guard refused): the adapter then asks with other sampling."""
    refused: tuple[str, ...] = ()
    """The `text` arguments of the calls sent back since the latest user prompt (what the
    model must not write again)."""


@dataclass(frozen=True, kw_only=True)
class Trimmed:
    """What `trim` left out."""

    messages_dropped: int
    """Whole messages left out of the middle of the conversation."""
    chars_cut: int
    """Characters cut from the middle of long messages."""


def render(messages: Sequence[ModelMessage]) -> Conversation:
    """Render a history: system prompt parts apart, the rest as user and assistant text."""
    system: list[str] = []
    turns: list[ChatMessage] = []
    acted = retrying = False
    calls: dict[str, str] = {}
    texts: dict[str, list[str]] = {}  # tool call id → its `text` argument
    refused: list[str] = []
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            retrying = False
            for part in message.parts:
                if isinstance(part, SystemPromptPart) and index == 0:
                    system.append(part.content)
                elif isinstance(part, UserPromptPart):
                    acted = False
                    calls.clear()
                    refused.clear()
                    turns.append({"role": "user", "content": _user_text(part)})
                elif isinstance(part, ToolReturnPart) and part.outcome == "retried":
                    calls.pop(part.tool_call_id, None)
                    refused += texts.get(part.tool_call_id, [])
                    retrying = True
                    turns.append({"role": "user", "content": _tool_return_text(part)})
                elif isinstance(part, ToolReturnPart):
                    acted = True
                    turns.append({"role": "user", "content": _tool_return_text(part)})
                elif isinstance(part, SystemPromptPart):
                    turns.append({"role": "user", "content": part.content})
                elif isinstance(part, RetryFeedbackPart):
                    turns.append({"role": "user", "content": part.model_response()})
        else:
            _note_calls(message, calls, texts)
            if text := _response_text(message):
                turns.append({"role": "assistant", "content": text})
    return Conversation(
        system=[text for text in system if text.strip()],
        turns=[turn for turn in turns if turn["content"].strip()],
        acted=acted,
        calls=frozenset(calls.values()),
        retrying=retrying,
        refused=tuple(refused),
    )


def _note_calls(message: ModelResponse, calls: dict[str, str], texts: dict[str, list[str]]) -> None:
    """Record `message`'s tool calls by id: their `call_key` and their `text` argument
    (what a posting tool would post)."""
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            calls[part.tool_call_id] = call_key(part)
            text = part.args_as_dict().get("text")
            texts[part.tool_call_id] = [text] if isinstance(text, str) else []


def call_key(part: ToolCallPart) -> str:
    """A tool call's name and arguments, the same for the same call whatever its id."""
    return json.dumps([part.tool_name, part.args_as_dict()], sort_keys=True, ensure_ascii=False)


def trim(messages: list[ChatMessage], *, budget: int) -> tuple[list[ChatMessage], Trimmed | None]:
    """Fit `messages` into `budget` characters, or return them unchanged with `None`.

    The first message (the system prompt), the first turn (the task) and the last turn
    (the latest news) stay. Turns in between go first, oldest first, replaced by one note;
    then the middles of the longest messages are cut, turns before the system prompt.
    """
    if _size(messages) <= budget:
        return messages, None
    head, middle, tail = (
        (messages[:2], messages[2:-1], messages[-1:]) if len(messages) > 2 else (messages, [], [])
    )
    dropped = 0
    while middle and _size([*head, _note(dropped), *middle, *tail]) > budget:
        middle = middle[1:]
        dropped += 1
    kept = [*head, *([_note(dropped)] if dropped else []), *middle, *tail]
    cut = 0
    system_last_then_longest = sorted(
        range(len(kept)), key=lambda i: (i == 0, -len(kept[i]["content"]))
    )
    for index in system_last_then_longest:
        overflow = _size(kept) - budget
        if overflow <= 0:
            break
        shortened = _cut_middle(kept[index]["content"], overflow)
        cut += len(kept[index]["content"]) - len(shortened)
        kept[index] = {"role": kept[index]["role"], "content": shortened}
    return kept, Trimmed(messages_dropped=dropped, chars_cut=cut)


def _size(messages: Sequence[ChatMessage]) -> int:
    return sum(len(message["content"]) + _MESSAGE_OVERHEAD for message in messages)


def _note(dropped: int) -> ChatMessage:
    return {
        "role": "user",
        "content": f"[{dropped} earlier messages were left out to fit the context]",
    }


def _cut_middle(text: str, overflow: int) -> str:
    marker_room = 48
    keep = max(_KEEP_PER_MESSAGE, len(text) - overflow - marker_room)
    if keep >= len(text):
        return text
    left_out = len(text) - keep
    head, tail = text[: keep // 2], text[len(text) - (keep - keep // 2) :]
    return f"{head} […{left_out} characters left out…] {tail}"


def _user_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    pieces: list[str] = []
    for item in part.content:
        if isinstance(item, str):
            pieces.append(item)
        elif isinstance(item, StructuredContent | TextContent):
            pieces.append(item.content)
        elif (kind := getattr(item, "kind", None)) != "cache-point":
            pieces.append(f"[a {kind} was left out: this model reads text only]")
    return "\n".join(pieces)


def _tool_return_text(part: ToolReturnPart) -> str:
    text = part.model_response_str(wrap_if_error=False)
    match part.outcome:
        case "success":
            return f"Result of {part.tool_name}: {text}"
        case "failed":
            return f"Error from {part.tool_name}: {text}"
        case "retried":
            return f"Wrong arguments for {part.tool_name}: {text}"
        case "denied":
            return f"{part.tool_name} was not allowed: {text}"
        case "interrupted":
            return f"{part.tool_name} was interrupted: {text}"


def _response_text(message: ModelResponse) -> str:
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            pieces.append(part.content)
        elif isinstance(part, ToolCallPart):
            call = {"tool": part.tool_name, "arguments": part.args_as_dict()}
            pieces.append(json.dumps(call, ensure_ascii=False))
    return "\n".join(piece for piece in pieces if piece.strip())
