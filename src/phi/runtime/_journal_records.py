"""The journal's records: one agent run as kept, built from the messages it exchanged."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from phi.redact import redact, redact_json

__all__ = ["JournalImage", "JournalToolCall", "Outcome", "RunRecord", "record_of"]

Outcome = Literal["ok", "failed"]


@dataclass(frozen=True, kw_only=True)
class JournalToolCall:
    """One tool call the model made in a run, and what came back."""

    tool: str
    """The tool's name."""
    args: str
    """The arguments, as the JSON the model sent."""
    result: str
    """What the tool returned (or the retry message the model got), as text."""
    outcome: str
    """pydantic-ai's outcome of the call: `success`, `retried`, `failed`..."""
    seconds: float | None = None
    """From the model's response to the tool's return, when both were timed."""


@dataclass(frozen=True, kw_only=True)
class JournalImage:
    """A picture the run passed to the model: what it was, never its bytes."""

    media_type: str
    """`image/jpeg`, `image/png`..."""
    size: int
    """Bytes passed."""
    source: str
    """The URL the picture was fetched from (its blob's DID and CID are in it)."""


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One agent run, as the journal keeps it."""

    run_id: str
    """A fresh id (`phi runs show ID`)."""
    entry: str
    """What started it: notifications, musing, reflection, service_check, review..."""
    started_at: datetime
    seconds: float
    """Wall time of the run."""
    outcome: Outcome
    output: str
    """The run's log line, or the error that ended it."""
    prompt_hash: str
    """SHA-256 of the system prompt (base and blocks, joined as sent) as kept: redacted."""
    system_prompt: str
    """That prompt's text, its secrets redacted (`redacted`)."""
    tool_calls: tuple[JournalToolCall, ...] = ()
    model: str | None = None
    """The model that answered (its last response's name)."""
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    actions: tuple[str, ...] = ()
    """What phi did, one line each, as the activity log wrote it."""
    images: tuple[JournalImage, ...] = ()
    """The pictures the user prompt passed to the model."""

    def redacted(self) -> RunRecord:
        """The record with each secret in its text replaced (`phi.redact`): a prompt, a
        tool's arguments and results, and the activity lines quote outside text (posts,
        web pages, MCP results, service URLs). The hash follows the prompt as kept."""
        prompt = redact(self.system_prompt)
        return replace(
            self,
            output=redact(self.output),
            system_prompt=prompt,
            prompt_hash=(self.prompt_hash if prompt == self.system_prompt else _sha256(prompt)),
            tool_calls=tuple(
                replace(call, args=redact_json(call.args), result=redact_json(call.result))
                for call in self.tool_calls
            ),
            actions=tuple(redact(line) for line in self.actions),
            images=tuple(replace(i, source=redact(i.source)) for i in self.images),
        )

    def summary(self) -> dict[str, Any]:
        """The record without the prompt and the calls' payloads (for lists)."""
        return {
            "run_id": self.run_id,
            "entry": self.entry,
            "started_at": self.started_at.isoformat(),
            "seconds": round(self.seconds, 3),
            "outcome": self.outcome,
            "output": self.output,
            "tools": [call.tool for call in self.tool_calls],
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "images": len(self.images),
        }

    def to_json(self) -> dict[str, Any]:
        """Everything, for `phi runs show --json` and the API."""
        return {
            **self.summary(),
            "prompt_hash": self.prompt_hash,
            "system_prompt": self.system_prompt,
            "requests": self.requests,
            "tool_calls": [
                {
                    "tool": c.tool,
                    "args": c.args,
                    "result": c.result,
                    "outcome": c.outcome,
                    "seconds": c.seconds,
                }
                for c in self.tool_calls
            ],
            "actions": list(self.actions),
            "images": [
                {"media_type": i.media_type, "size": i.size, "source": i.source}
                for i in self.images
            ],
        }


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _prompt_of(messages: Sequence[ModelMessage]) -> str:
    """The system prompt as the first request carried it (what `phi.agent.system_prompt`
    shows: the parts with text, joined by blank lines)."""
    for message in messages:
        if isinstance(message, ModelRequest):
            parts = [p.content for p in message.parts if isinstance(p, SystemPromptPart)]
            return "\n\n".join(p for p in parts if p)
    return ""


def _images_of(messages: Sequence[ModelMessage]) -> tuple[JournalImage, ...]:
    """The pictures the user prompts carried (`phi.agent.prompt.batch_user_prompt` names each
    by its source URL)."""
    found = []
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
                found += [
                    JournalImage(media_type=c.media_type, size=len(c.data), source=c.identifier)
                    for c in part.content
                    if isinstance(c, BinaryContent)
                ]
    return tuple(found)


def _tool_calls(messages: Sequence[ModelMessage]) -> tuple[JournalToolCall, ...]:
    called: dict[str, tuple[ToolCallPart, datetime]] = {}
    out: list[JournalToolCall] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    called[part.tool_call_id] = (part, message.timestamp)
            continue
        for ret in message.parts:
            if not isinstance(ret, ToolReturnPart) or ret.tool_call_id not in called:
                continue
            call, asked_at = called.pop(ret.tool_call_id)
            out.append(
                JournalToolCall(
                    tool=call.tool_name,
                    args=call.args_as_json_str(),
                    result=ret.model_response_str(),
                    outcome=str(getattr(ret, "outcome", "success")),
                    seconds=max(0.0, (ret.timestamp - asked_at).total_seconds()),
                )
            )
    # Calls the run never answered (it failed mid-way) are journalled too.
    for call, _ in called.values():
        out.append(
            JournalToolCall(
                tool=call.tool_name, args=call.args_as_json_str(), result="", outcome="unanswered"
            )
        )
    return tuple(out)


def record_of(
    messages: Sequence[ModelMessage],
    *,
    entry: str,
    started_at: datetime,
    seconds: float,
    outcome: Outcome,
    output: str,
    actions: Sequence[str] = (),
) -> RunRecord:
    """The journal's record of one run, from the messages it exchanged."""
    prompt = _prompt_of(messages)
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    return RunRecord(
        run_id=uuid.uuid4().hex[:12],
        entry=entry,
        started_at=started_at,
        seconds=seconds,
        outcome=outcome,
        output=output,
        prompt_hash=_sha256(prompt),
        system_prompt=prompt,
        tool_calls=_tool_calls(messages),
        model=responses[-1].model_name if responses else None,
        requests=len(responses),
        input_tokens=sum(r.usage.input_tokens for r in responses),
        output_tokens=sum(r.usage.output_tokens for r in responses),
        actions=tuple(actions),
        images=_images_of(messages),
    )
