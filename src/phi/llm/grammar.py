"""`GrammarToolModel`: tool calls for models that can only fill a JSON schema.

A small local model cannot call tools natively, but llama.cpp constrains its output to a
JSON schema, which it then always matches. So each request becomes one decision: the
schema offers each tool's arguments and, when allowed, a final answer
(see `phi.llm._schema`); the answer becomes a `ToolCallPart` or a `TextPart`.

The adapter speaks OpenAI chat completions through any `Complete` callable, so it is
tested with a scripted one and runs on `LocalLlama` (`phi.llm.local`) in production.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any, Final

from pydantic_ai.exceptions import ModelContextWindowExceededError, UnexpectedModelBehavior
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from phi.llm._chat import ChatMessage, ChatRequest, Complete, Completion, parse_completion
from phi.llm._render import call_key, render, trim
from phi.llm._schema import FINAL_ANSWER, MAX_STRING, catalogue, decision_schema, example_call
from phi.llm.sampling import SmallModelSampling, current_answering

__all__ = ["GrammarToolModel"]

logger = logging.getLogger(__name__)

_PROFILE: Final = ModelProfile(
    supports_tools=True,
    supports_json_schema_output=False,
    supports_json_object_output=False,
    default_structured_output_mode="tool",
    supports_inline_system_prompts=True,
    supports_image_input=False,  # llama.cpp's text models: a picture would fail the request
)
"""Structured output goes through output tools, which are just more branches of the schema.
Mid-run system notes (pydantic-ai's "the following tools are now available") stay system
parts, which `render` shows as plain turns: wrapped as user prompts they would start a new
task, and the one-action limit (`calls_per_run`) would ask the model again."""

DEFAULT_MAX_TOKENS: Final = 512
DEFAULT_SEED: Final = 0
RETRY_SETTINGS: Final = ModelSettings(temperature=0.7, top_p=0.9, frequency_penalty=0.5)
"""Sampling for a call sent back for a retry (e.g. text the degenerate guard refused): at
temperature 0 a tiny model would write the same text again."""
_CONTEXT_RETRIES: Final = 3
"""Times a prompt refused as over the model's context is retried, each with half the budget."""


class GrammarToolModel(Model):
    """A pydantic-ai `Model` that turns schema-constrained JSON into tool calls.

    Each request sends the conversation as plain text (tool calls as the JSON the model
    answered, tool results as user messages), a compact tool catalogue in the system
    message, and one JSON schema as `response_format`. Temperature 0 and a fixed seed by
    default, so a run is reproducible.

    Prompts for a tiny model: quote the values it must copy (`uri: "at://..."`).
    SmolLM2 copies a quoted string exactly but drops the `at://` of a bare one; the
    first line of each tool's docstring is all it reads about the tool.
    """

    # The framework's note on text that looks like its own frames costs a tiny model
    # context and would only confuse it.
    _announces_lookalike_notes = False

    def __init__(
        self,
        complete: Complete,
        *,
        model_name: str,
        system: str = "local",
        tool_first: bool = True,
        calls_per_run: int | None = None,
        max_prompt_chars: int = 12_000,
        settings: ModelSettings | None = None,
        retry_settings: ModelSettings = RETRY_SETTINGS,
        max_text: int = MAX_STRING,
        sampling: SmallModelSampling | None = None,
    ) -> None:
        """Build the adapter over a transport.

        Args:
            complete: Answers one OpenAI chat-completions request (`response_format`
                `json_schema` must be honoured).
            model_name: The model's name, as reported in responses.
            system: The provider name, for `model_id` and telemetry.
            tool_first: Leave the final answer out until a tool has returned since the
                latest user prompt: tiny models otherwise "answer" without acting.
            calls_per_run: After this many tool calls since the latest user prompt, end
                with the last tool's result as the answer, without asking: a tiny model
                that has acted tends to wander through the other tools. `None`: no limit.
            max_prompt_chars: Prompt budget in characters; longer conversations lose
                their oldest middle turns first (logged as a warning). A prompt the
                transport still refuses as over the context is retried with half the budget.
            settings: Default model settings (`temperature`, `top_p`, `seed`,
                `max_tokens`, `frequency_penalty`, `presence_penalty` are honoured).
            retry_settings: Settings laid over those when a tool sent the model's call
                back for a retry (the seed moves on too).
            max_text: Longest free-text string the schema lets the model write: a tiny
                model's long answers are where it loops.
            sampling: llama.cpp sampler fields against echoes and loops, sent with every
                request (`phi.llm.sampling`); only for servers that are llama.cpp.
        """
        super().__init__(settings=settings, profile=_PROFILE)
        self._complete = complete
        self._model_name = model_name
        self._system = system
        self.tool_first = tool_first
        self.calls_per_run = calls_per_run
        self.max_prompt_chars = max_prompt_chars
        self.retry_settings = retry_settings
        self.max_text = max_text
        self.sampling = sampling

    @property
    def model_name(self) -> str:
        """The model's name."""
        return self._model_name

    @property
    def system(self) -> str:
        """The provider name."""
        return self._system

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Ask for one decision and return it as a tool call or a text answer.

        A tiny model at temperature 0 tends to repeat its last call word for word. A
        call identical to one made since the latest user prompt is never returned: the
        decision is asked again without that tool.
        """
        model_settings, params = self.prepare_request(model_settings, model_request_parameters)
        conversation = render(messages)
        if conversation.retrying:
            seed = (model_settings or {}).get("seed", DEFAULT_SEED) + 1
            model_settings = ModelSettings(
                **{**(model_settings or {}), **self.retry_settings, "seed": seed}
            )
            logger.info(
                "%s: a call came back for a retry, asking with other sampling", self.model_name
            )
        instructions = InstructionPart.join(self._get_instruction_parts(messages, params) or [])
        system = [*conversation.system, *([instructions] if instructions else [])]
        tools = [*params.declared_function_tools, *params.output_tools]
        if (
            self.calls_per_run is not None
            and len(conversation.calls) >= self.calls_per_run
            and params.allow_text_output
        ):
            return ModelResponse(
                parts=[TextPart(f"done: {_last_result(messages)}")],
                model_name=self.model_name,
                provider_name=self.system,
                finish_reason="stop",
            )
        usage = RequestUsage()
        while True:
            final = params.allow_text_output and (
                not self.tool_first or conversation.acted or not tools
            )
            assert tools or final, "the request allows neither a tool call nor a text answer"
            # The static part of the system prompt first, then the tool guide, then the
            # dynamic blocks: llama.cpp reuses the KV cache of the longest unchanged prefix.
            chat = [
                ChatMessage(
                    role="system",
                    content="\n\n".join([*system[:1], _guide(tools, final), *system[1:]]),
                ),
                *conversation.turns,
            ]
            completion = await self._ask(
                chat, tools, final, model_settings or {}, refused=conversation.refused
            )
            usage += RequestUsage(
                input_tokens=completion.usage.prompt_tokens,
                output_tokens=completion.usage.completion_tokens,
            )
            part = _decision(
                completion.text,
                tools=tools,
                final=final,
                cut_off=completion.finish_reason == "length",
            )
            if not isinstance(part, ToolCallPart) or call_key(part) not in conversation.calls:
                break
            logger.info(
                "%s repeated a call of %r: asking without it", self.model_name, part.tool_name
            )
            tools = [tool for tool in tools if tool.name != part.tool_name]
            if not tools and not params.allow_text_output:
                raise UnexpectedModelBehavior(
                    f"{self.model_name} repeated every call it was offered", body=completion.text
                )
        return ModelResponse(
            parts=[part],
            usage=usage,
            model_name=self.model_name,
            provider_name=self.system,
            provider_response_id=completion.id,
            finish_reason="tool_call" if isinstance(part, ToolCallPart) else "stop",
        )

    async def _ask(
        self,
        chat: list[ChatMessage],
        tools: Sequence[ToolDefinition],
        final: bool,
        settings: ModelSettings,
        *,
        refused: Sequence[str] = (),
    ) -> Completion:
        """One request, trimmed to the budget; refused as over the context, to half of it."""
        budget, retries = self.max_prompt_chars, _CONTEXT_RETRIES
        while True:
            fitted, trimmed = trim(chat, budget=budget)
            if trimmed is not None:
                logger.warning(
                    "prompt over %s's budget of %d characters: left out %d earlier messages "
                    "and %d characters from the middle of long ones",
                    self.model_name,
                    budget,
                    trimmed.messages_dropped,
                    trimmed.chars_cut,
                )
            request: ChatRequest = {
                "messages": fitted,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "decision",
                        "schema": decision_schema(
                            tools, final_answer=final, max_string=self.max_text
                        ),
                        "strict": True,
                    },
                },
                "max_tokens": settings.get("max_tokens", DEFAULT_MAX_TOKENS),
                "temperature": settings.get("temperature", 0.0),
                "seed": settings.get("seed", DEFAULT_SEED),
            }
            if "top_p" in settings:
                request["top_p"] = settings["top_p"]
            if "frequency_penalty" in settings:
                request["frequency_penalty"] = settings["frequency_penalty"]
            if "presence_penalty" in settings:
                request["presence_penalty"] = settings["presence_penalty"]
            if self.sampling is not None:
                self.sampling.apply(request, current_answering(), refused=refused)
            try:
                return parse_completion(await self._complete(request))
            except ModelContextWindowExceededError:
                if not retries:
                    raise
                # Characters per token vary (CJK text, URIs): halve the budget and retry.
                budget, retries = budget // 2, retries - 1


def _guide(tools: Sequence[ToolDefinition], final: bool) -> str:
    """The tool catalogue and the shape of an answer, for the system message.

    Once the final answer is allowed the example shows it: a tiny model copies the
    example's tool more readily than it follows any sentence.
    """
    return "\n".join(
        [
            "Tools:",
            catalogue(tools, final_answer=final),
            "",
            "Answer with one JSON object that calls one tool, for example:",
            example_call([] if final else tools),
            *([f"When the task is done, answer with {FINAL_ANSWER}."] if final and tools else []),
        ]
    )


def _decision(
    text: str, *, tools: Sequence[ToolDefinition], final: bool, cut_off: bool
) -> ModelResponsePart:
    """The model's JSON answer as a tool call or a text answer."""
    try:
        answer: Any = json.loads(text)
    except json.JSONDecodeError as error:
        why = " (cut off at max_tokens)" if cut_off else ""
        raise UnexpectedModelBehavior(
            f"the local model's answer is not valid JSON{why}: {error}", body=text
        ) from error
    name = answer.get("tool") if isinstance(answer, dict) else None
    if name == FINAL_ANSWER and final and isinstance(answer.get("text"), str):
        return TextPart(content=answer["text"])
    if name in {tool.name for tool in tools} and isinstance(answer.get("arguments"), dict):
        return ToolCallPart(
            tool_name=name, args=answer["arguments"], tool_call_id=f"call_{uuid.uuid4().hex}"
        )
    raise UnexpectedModelBehavior(
        "the local model's answer calls none of the offered tools", body=text
    )


def _last_result(messages: Sequence[ModelMessage]) -> str:
    """The content of the newest tool return, as text."""
    for message in reversed(messages):
        for part in reversed(message.parts):
            if isinstance(part, ToolReturnPart):
                return part.model_response_str()
    return "nothing"
