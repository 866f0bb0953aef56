"""phi's brain: which language model answers, from a pydantic-ai model string.

`PHI_MODEL` and `PHI_MEMORY_MODEL` take any pydantic-ai model string
(`anthropic:claude-sonnet-4-5`, `openai:gpt-5`, `test`, ...) for models that call tools
natively. Unset, phi runs air-gapped on SmolLM2-135M-Instruct in-process through
llama.cpp: a tiny model for trying phi out, driven through `GrammarToolModel` since it
cannot call tools natively. `grammar:http://HOST:PORT/v1` drives any OpenAI-compatible
server that honours JSON-schema response formats the same way (`phi.llm.http`).
"""

from __future__ import annotations

import functools
from typing import Final

from pydantic_ai import exceptions as pydantic_ai_exceptions
from pydantic_ai.models import Model, infer_model

from phi.errors import UserError
from phi.llm._chat import ChatMessage, ChatRequest, Complete
from phi.llm.grammar import GrammarToolModel
from phi.llm.http import GRAMMAR_PREFIX, ChatServer, parse_server_spec
from phi.llm.local import SMOLLM2_NAME, LocalLlama, LocalModelMissing, smollm2_path
from phi.llm.sampling import SmallModelSampling, answering

__all__ = [
    "LOCAL_SPECS",
    "ChatMessage",
    "ChatRequest",
    "ChatServer",
    "Complete",
    "GrammarToolModel",
    "LocalLlama",
    "LocalModelMissing",
    "SmallModelSampling",
    "answering",
    "describe_brain",
    "is_local",
    "local_llama",
    "resolve_model",
    "smollm2_path",
    "uses_grammar",
]

LOCAL_MAX_TEXT: Final = 140
"""Longest text the local model may write: SmolLM2's loops start past ~100 characters
(`phi bench brain`: 4 degenerate replies of 20 at 140, more at 300)."""

LOCAL_SPECS: Final = frozenset({"", "local", "smollm2"})
"""Model strings (besides none) that mean the air-gapped local model."""

_ACCEPTED: Final = (
    "a pydantic-ai model string such as 'anthropic:claude-sonnet-4-5', 'openai:gpt-5' or "
    "'test', 'grammar:http://HOST:PORT/v1' for an OpenAI-compatible server without native "
    "tool calls, or 'local' / 'smollm2' (or nothing) for the air-gapped local model"
)


def uses_grammar(spec: str | None) -> bool:
    """Whether `spec` names a model phi drives through `GrammarToolModel` (the local one or
    a `grammar:` server): a small model, given the core tools and the compact prompt."""
    return is_local(spec) or (spec or "").strip().startswith(GRAMMAR_PREFIX)


def is_local(spec: str | None) -> bool:
    """Whether `spec` means the air-gapped local model."""
    return spec is None or spec.strip().lower() in LOCAL_SPECS


@functools.cache
def local_llama() -> LocalLlama:
    """The process's one `LocalLlama` over SmolLM2 (loaded on its first request)."""
    return LocalLlama()


def resolve_model(spec: str | None) -> Model:
    """The model a setting names.

    Args:
        spec: A pydantic-ai model string, or None / `""` / `local` / `smollm2` for the
            local SmolLM2 (sharing one loaded model per process).

    Raises:
        UserError: `spec` names no model pydantic-ai knows, or its provider's package or
            credentials are missing.
    """
    if is_local(spec):
        return GrammarToolModel(
            local_llama().complete,
            model_name=SMOLLM2_NAME,
            calls_per_run=1,
            max_text=LOCAL_MAX_TEXT,
            sampling=SmallModelSampling(),
        )
    assert spec is not None
    if spec.strip().startswith(GRAMMAR_PREFIX):
        server = parse_server_spec(spec)
        return GrammarToolModel(
            server.complete, model_name=server.name, system="openai-compatible", calls_per_run=1
        )
    try:
        return infer_model(spec.strip())
    except ImportError as error:
        raise UserError(f"model {spec!r} needs a package phi does not install: {error}") from error
    except pydantic_ai_exceptions.UserError as error:
        raise UserError(f"cannot use model {spec!r}: {error} (expected {_ACCEPTED})") from error


def describe_brain(spec: str | None) -> str:
    """One line for startup: which model answers."""
    if is_local(spec):
        return (
            f"brain: {SMOLLM2_NAME} (air-gapped, in-process via llama.cpp) — a tiny model "
            "for trying phi out; set PHI_MODEL for a real one"
        )
    assert spec is not None
    if spec.strip().startswith(GRAMMAR_PREFIX):
        server = parse_server_spec(spec)  # the key stays out of the banner
        return (
            f"brain: {server.model} at {server.base_url} (OpenAI-compatible server, tool "
            "calls through JSON-schema constrained answers)"
        )
    return f"brain: {spec.strip()}"
