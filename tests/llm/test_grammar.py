"""`GrammarToolModel` with a scripted transport: what it sends, what it makes of answers."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import pytest
from dirty_equals import IsStr
from inline_snapshot import snapshot
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.exceptions import (
    ModelContextWindowExceededError,
    ModelHTTPError,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart

from phi.llm import ChatRequest, GrammarToolModel
from phi.llm._schema import MAX_STRING

pytestmark = pytest.mark.anyio

URI = "at://did:plc:alice/post/3k2a"
SYSTEM = "You are phi, a bot on Bluesky."
PROMPT = f'mention from @alice.test\nuri: "{URI}"\ntext: "@phi what is the capital of France?"'


@dataclass
class Script:
    """A transport that answers with the given texts, in order, and keeps the requests."""

    answers: list[str]
    finish_reason: str = "stop"
    requests: list[ChatRequest] = field(default_factory=list)

    async def complete(self, request: ChatRequest) -> Mapping[str, Any]:
        self.requests.append(request)
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.answers.pop(0)},
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20},
        }

    def schemas(self) -> list[dict[str, Any]]:
        return [r["response_format"]["json_schema"]["schema"] for r in self.requests]


def call(tool: str, **arguments: Any) -> str:
    return json.dumps({"tool": tool, "arguments": arguments})


def final(text: str) -> str:
    return json.dumps({"tool": "final_answer", "text": text})


def branches(schema: dict[str, Any]) -> list[str]:
    """The tool names a decision schema offers."""
    return [b["properties"]["tool"]["const"] for b in schema.get("anyOf", [schema])]


@dataclass
class Deps:
    calls: list[tuple[str, ...]] = field(default_factory=list)


def reply_to(ctx: RunContext[Deps], uri: str, text: str) -> str:
    """Reply to the post at `uri` with `text`.

    Args:
        uri: The post's AT URI.
        text: The reply.
    """
    if not uri.startswith("at://"):
        raise ModelRetry("uri must be an at:// URI")
    ctx.deps.calls.append(("reply_to", uri, text))
    return "Reply posted."


def like_post(ctx: RunContext[Deps], uri: str) -> str:
    """Like the post at `uri` without replying."""
    ctx.deps.calls.append(("like_post", uri))
    return "Liked."


def phi_agent(model: GrammarToolModel) -> Agent[Deps, str]:
    return Agent(model, deps_type=Deps, tools=[reply_to, like_post], system_prompt=SYSTEM)


def scripted(*answers: str, **options: Any) -> tuple[GrammarToolModel, Script]:
    script = Script(list(answers))
    return GrammarToolModel(script.complete, model_name="scripted", **options), script


async def test_a_run_calls_a_tool_then_answers() -> None:
    model, script = scripted(call("reply_to", uri=URI, text="Paris."), final("Replied."))
    deps = Deps()
    result = await phi_agent(model).run(PROMPT, deps=deps)

    assert result.output == "Replied."
    assert deps.calls == [("reply_to", URI, "Paris.")]
    assert script.requests[0] == snapshot(
        {
            "messages": [
                {
                    "role": "system",
                    "content": """\
You are phi, a bot on Bluesky.

Tools:
- reply_to(uri, text): Reply to the post at `uri` with `text`.
- like_post(uri): Like the post at `uri` without replying.

Answer with one JSON object that calls one tool, for example:
{"tool": "reply_to", "arguments": {"uri": "...", "text": "..."}}\
""",
                },
                {
                    "role": "user",
                    "content": """\
mention from @alice.test
uri: "at://did:plc:alice/post/3k2a"
text: "@phi what is the capital of France?"\
""",
                },
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "decision",
                    "schema": {
                        "anyOf": [
                            {
                                "type": "object",
                                "properties": {
                                    "tool": {"const": "reply_to"},
                                    "arguments": {
                                        "additionalProperties": False,
                                        "properties": {
                                            "uri": {
                                                "description": "The post's AT URI.",
                                                "type": "string",
                                                "maxLength": MAX_STRING,
                                            },
                                            "text": {
                                                "description": "The reply.",
                                                "type": "string",
                                                "maxLength": MAX_STRING,
                                            },
                                        },
                                        "required": ["uri", "text"],
                                        "type": "object",
                                    },
                                },
                                "required": ["tool", "arguments"],
                                "additionalProperties": False,
                            },
                            {
                                "type": "object",
                                "properties": {
                                    "tool": {"const": "like_post"},
                                    "arguments": {
                                        "additionalProperties": False,
                                        "properties": {
                                            "uri": {"type": "string", "maxLength": MAX_STRING}
                                        },
                                        "required": ["uri"],
                                        "type": "object",
                                    },
                                },
                                "required": ["tool", "arguments"],
                                "additionalProperties": False,
                            },
                        ]
                    },
                    "strict": True,
                },
            },
            "max_tokens": 512,
            "temperature": 0.0,
            "seed": 0,
        }
    )
    assert script.requests[1]["messages"][1:] == snapshot(
        [
            {
                "role": "user",
                "content": """\
mention from @alice.test
uri: "at://did:plc:alice/post/3k2a"
text: "@phi what is the capital of France?"\
""",
            },
            {
                "role": "assistant",
                "content": '{"tool": "reply_to", "arguments": {"uri": "at://did:plc:alice/post/3k2a", "text": "Paris."}}',  # noqa: E501
            },
            {"role": "user", "content": "Result of reply_to: Reply posted."},
        ]
    )
    assert script.schemas()[1]["anyOf"][-1] == snapshot(
        {
            "type": "object",
            "properties": {
                "tool": {"const": "final_answer"},
                "text": {"type": "string", "maxLength": MAX_STRING},
            },
            "required": ["tool", "text"],
            "additionalProperties": False,
        }
    )
    response = result.all_messages()[1]
    assert isinstance(response, ModelResponse)
    assert response.parts == [
        ToolCallPart(
            tool_name="reply_to",
            args={"uri": URI, "text": "Paris."},
            tool_call_id=cast(str, IsStr(regex=r"call_[0-9a-f]{32}")),
        )
    ]
    assert (response.model_name, response.provider_name, response.finish_reason) == (
        "scripted",
        "local",
        "tool_call",
    )
    assert (response.usage.input_tokens, response.usage.output_tokens) == (100, 20)


async def test_the_first_decision_of_a_run_must_be_a_tool_call() -> None:
    model, script = scripted(final("Hello!"))
    with pytest.raises(UnexpectedModelBehavior, match="calls none of the offered tools"):
        await phi_agent(model).run(PROMPT, deps=Deps())
    assert branches(script.schemas()[0]) == ["reply_to", "like_post"]


async def test_without_tool_first_the_answer_may_come_at_once() -> None:
    model, script = scripted(final("Hello!"), tool_first=False)
    result = await phi_agent(model).run(PROMPT, deps=Deps())
    assert result.output == "Hello!"
    assert branches(script.schemas()[0]) == ["reply_to", "like_post", "final_answer"]


async def test_a_new_user_prompt_starts_a_new_run_that_must_act_first() -> None:
    model, script = scripted(
        call("like_post", uri=URI),
        final("Liked it."),
        call("reply_to", uri=URI, text="Hi"),
        final("Replied."),
    )
    agent = phi_agent(model)
    first = await agent.run(PROMPT, deps=Deps())
    await agent.run("and now?", deps=Deps(), message_history=first.all_messages())
    assert [branches(s) for s in script.schemas()] == [
        ["reply_to", "like_post"],
        ["reply_to", "like_post", "final_answer"],
        ["reply_to", "like_post"],
        ["reply_to", "like_post", "final_answer"],
    ]
    assert script.requests[2]["messages"][1:] == snapshot(
        [
            {
                "role": "user",
                "content": """\
mention from @alice.test
uri: "at://did:plc:alice/post/3k2a"
text: "@phi what is the capital of France?"\
""",
            },
            {
                "role": "assistant",
                "content": '{"tool": "like_post", "arguments": {"uri": "at://did:plc:alice/post/3k2a"}}',
            },
            {"role": "user", "content": "Result of like_post: Liked."},
            {"role": "assistant", "content": "Liked it."},
            {"role": "user", "content": "and now?"},
        ]
    )


async def test_with_no_tools_the_final_answer_is_the_only_branch() -> None:
    model, script = scripted(final("Hi there."))
    result = await Agent(model, system_prompt=SYSTEM).run("hello")
    assert result.output == "Hi there."
    assert script.schemas() == [
        {
            "type": "object",
            "properties": {
                "tool": {"const": "final_answer"},
                "text": {"type": "string", "maxLength": MAX_STRING},
            },
            "required": ["tool", "text"],
            "additionalProperties": False,
        }
    ]
    assert script.requests[0]["messages"] == snapshot(
        [
            {
                "role": "system",
                "content": """\
You are phi, a bot on Bluesky.

Tools:
- final_answer(text): Finish with this message as your answer.

Answer with one JSON object that calls one tool, for example:
{"tool": "final_answer", "text": "..."}\
""",
            },
            {"role": "user", "content": "hello"},
        ]
    )


async def test_a_repeated_call_is_asked_again_without_that_tool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    again = call("reply_to", uri=URI, text="Paris.")
    model, script = scripted(again, again, final("Done."))
    deps = Deps()
    with caplog.at_level(logging.INFO, logger="phi.llm"):
        result = await phi_agent(model).run(PROMPT, deps=deps)
    assert result.output == "Done."
    assert deps.calls == [("reply_to", URI, "Paris.")]
    assert [branches(s) for s in script.schemas()] == [
        ["reply_to", "like_post"],
        ["reply_to", "like_post", "final_answer"],
        ["like_post", "final_answer"],
    ]
    assert "scripted repeated a call of 'reply_to': asking without it" in caplog.messages
    second = result.all_messages()[3]
    assert isinstance(second, ModelResponse)
    assert (second.usage.input_tokens, second.usage.output_tokens) == (200, 40)


async def test_a_call_with_other_arguments_is_no_repeat() -> None:
    model, script = scripted(
        call("like_post", uri=URI), call("like_post", uri=URI + "x"), final("Done.")
    )
    deps = Deps()
    await phi_agent(model).run(PROMPT, deps=deps)
    assert deps.calls == [("like_post", URI), ("like_post", URI + "x")]
    assert len(script.requests) == 3


async def test_a_retry_is_shown_as_text() -> None:
    model, script = scripted(
        call("reply_to", uri="alice", text="Paris."),
        call("reply_to", uri=URI, text="Paris."),
        final("Done."),
    )
    await phi_agent(model).run(PROMPT, deps=Deps())
    assert script.requests[1]["messages"][-1] == snapshot(
        {"role": "user", "content": "Wrong arguments for reply_to: uri must be an at:// URI"}
    )


async def test_invalid_json_raises_with_the_raw_text() -> None:
    model, _ = scripted('{"tool": "reply_to", "argu')
    with pytest.raises(UnexpectedModelBehavior, match="not valid JSON") as raised:
        await phi_agent(model).run(PROMPT, deps=Deps())
    assert raised.value.body == '{"tool": "reply_to", "argu'


async def test_an_answer_cut_off_at_max_tokens_says_so() -> None:
    script = Script(['{"tool": "reply_to", "arguments": {"uri": "at://'], finish_reason="length")
    model = GrammarToolModel(script.complete, model_name="scripted")
    with pytest.raises(UnexpectedModelBehavior, match=r"cut off at max_tokens"):
        await phi_agent(model).run(PROMPT, deps=Deps(), model_settings={"max_tokens": 16})
    assert script.requests[0]["max_tokens"] == 16


async def test_settings_reach_the_request() -> None:
    model, script = scripted(
        call("like_post", uri=URI),
        final("Done."),
        settings={"temperature": 0.7, "seed": 42, "top_p": 0.9},
    )
    await phi_agent(model).run(PROMPT, deps=Deps())
    assert {k: v for k, v in script.requests[0].items() if k != "messages"} == snapshot(
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "decision",
                    "schema": {
                        "anyOf": [
                            {
                                "type": "object",
                                "properties": {
                                    "tool": {"const": "reply_to"},
                                    "arguments": {
                                        "additionalProperties": False,
                                        "properties": {
                                            "uri": {
                                                "description": "The post's AT URI.",
                                                "type": "string",
                                                "maxLength": MAX_STRING,
                                            },
                                            "text": {
                                                "description": "The reply.",
                                                "type": "string",
                                                "maxLength": MAX_STRING,
                                            },
                                        },
                                        "required": ["uri", "text"],
                                        "type": "object",
                                    },
                                },
                                "required": ["tool", "arguments"],
                                "additionalProperties": False,
                            },
                            {
                                "type": "object",
                                "properties": {
                                    "tool": {"const": "like_post"},
                                    "arguments": {
                                        "additionalProperties": False,
                                        "properties": {
                                            "uri": {"type": "string", "maxLength": MAX_STRING}
                                        },
                                        "required": ["uri"],
                                        "type": "object",
                                    },
                                },
                                "required": ["tool", "arguments"],
                                "additionalProperties": False,
                            },
                        ]
                    },
                    "strict": True,
                },
            },
            "max_tokens": 512,
            "temperature": 0.7,
            "seed": 42,
            "top_p": 0.9,
        }
    )


class Verdict(BaseModel):
    """Whether the post deserves a reply."""

    worth_replying: bool
    reason: str


async def test_output_tools_are_branches_and_end_the_run() -> None:
    model, script = scripted(call("final_result", worth_replying=True, reason="a question"))
    result = await Agent(model, output_type=Verdict).run(PROMPT)
    assert result.output == Verdict(worth_replying=True, reason="a question")
    assert branches(script.schemas()[0]) == ["final_result"]


class Place(BaseModel):
    name: str


class Trip(BaseModel):
    places: list[Place]


async def test_argument_schemas_with_definitions_are_hoisted_to_the_root() -> None:
    def plan(trip: Trip) -> str:
        """Plan a trip."""
        return "planned"

    model, script = scripted(call("plan", trip={"places": [{"name": "Paris"}]}), final("ok"))
    await Agent(model, tools=[plan]).run("plan a trip")
    schema = script.schemas()[0]
    assert schema["$defs"] == snapshot(
        {
            "plan__Place": {
                "properties": {"name": {"type": "string", "maxLength": MAX_STRING}},
                "required": ["name"],
                "title": "Place",
                "type": "object",
            }
        }
    )
    assert schema["properties"]["arguments"] == snapshot(
        {
            "properties": {"places": {"items": {"$ref": "#/$defs/plan__Place"}, "type": "array"}},
            "required": ["places"],
            "title": "Trip",
            "type": "object",
        }
    )


async def test_a_long_history_loses_its_oldest_middle_turns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    history: list[ModelRequest | ModelResponse] = []
    for turn in range(30):
        history.append(ModelRequest(parts=[UserPromptPart(f"question {turn}: " + "x" * 300)]))
        history.append(ModelResponse(parts=[TextPart(f"answer {turn}: " + "y" * 300)]))
    model, script = scripted(call("like_post", uri=URI), final("Done."), max_prompt_chars=4000)
    with caplog.at_level(logging.WARNING, logger="phi.llm"):
        await phi_agent(model).run(PROMPT, deps=Deps(), message_history=history)
    sent = script.requests[0]["messages"]
    assert sum(len(m["content"]) + 12 for m in sent) <= 4000
    assert sent[1]["content"].startswith("question 0: ")
    assert sent[2]["content"] == IsStr(
        regex=r"\[\d+ earlier messages were left out to fit the context\]"
    )
    assert sent[-1]["content"] == PROMPT
    assert sent[-2]["content"].startswith("answer 29: ")
    assert any("left out" in m and "earlier messages" in m for m in caplog.messages)


async def test_one_huge_message_is_cut_in_the_middle() -> None:
    prompt = "START " + "z" * 20_000 + " END"
    model, script = scripted(call("like_post", uri=URI), final("Done."), max_prompt_chars=3000)
    await phi_agent(model).run(prompt, deps=Deps())
    sent = script.requests[0]["messages"]
    assert sum(len(m["content"]) + 12 for m in sent) <= 3000
    assert sent[0]["content"].startswith(SYSTEM)
    assert sent[1]["content"].startswith("START ")
    assert sent[1]["content"].endswith(" END")
    assert "characters left out" in sent[1]["content"]


async def test_no_message_is_ever_empty() -> None:
    model, script = scripted(call("like_post", uri=URI), final("Done."))
    history: list[ModelRequest | ModelResponse] = [
        ModelRequest(parts=[UserPromptPart("")]),
        ModelResponse(parts=[TextPart("")]),
    ]
    await phi_agent(model).run(PROMPT, deps=Deps(), message_history=history)
    for request in script.requests:
        assert all(m["content"].strip() for m in request["messages"])


async def test_a_prompt_refused_as_over_the_context_is_retried_with_half_the_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = Script([call("like_post", uri=URI), final("Done.")])

    async def small_context(request: ChatRequest) -> Mapping[str, Any]:
        if sum(len(m["content"]) for m in request["messages"]) > 2500:
            raise ModelHTTPError.for_category(
                ModelContextWindowExceededError, status_code=400, model_name="scripted"
            )
        return await script.complete(request)

    model = GrammarToolModel(small_context, model_name="scripted", max_prompt_chars=8000)
    prompt = "START " + "z" * 20_000 + " END"
    with caplog.at_level(logging.WARNING, logger="phi.llm"):
        result = await phi_agent(model).run(prompt, deps=Deps())
    assert result.output == "Done."
    budgets = [int(m.split("budget of ")[1].split(" ")[0]) for m in caplog.messages]
    assert budgets[:3] == [8000, 4000, 2000]


async def test_a_prompt_always_refused_raises_after_three_retries() -> None:
    attempts: list[int] = []

    async def no_context(request: ChatRequest) -> Mapping[str, Any]:
        attempts.append(sum(len(m["content"]) for m in request["messages"]))
        raise ModelHTTPError.for_category(
            ModelContextWindowExceededError, status_code=400, model_name="scripted"
        )

    model = GrammarToolModel(no_context, model_name="scripted", max_prompt_chars=8000)
    with pytest.raises(ModelContextWindowExceededError):
        await phi_agent(model).run("z" * 20_000, deps=Deps())
    assert len(attempts) == 4


async def test_free_text_strings_are_capped_so_a_looping_model_closes_them() -> None:
    model, script = scripted(call("reply_to", uri="at://x", text="hi"), final("done"))
    agent = Agent(model, system_prompt=SYSTEM)

    @agent.tool_plain
    def reply_to(uri: str, text: str, mood: Literal["warm", "dry"] = "warm") -> str:
        """Reply to a post."""
        return "replied"

    await agent.run("hello")
    arguments = script.schemas()[0]["properties"]["arguments"]["properties"]
    assert arguments["text"]["maxLength"] == MAX_STRING
    assert "maxLength" not in arguments["mood"]  # an enum is already bounded


async def test_calls_per_run_ends_the_run_after_the_action_without_asking() -> None:
    model, complete = scripted(call("reply_to", uri="at://x", text="hi"), calls_per_run=1)
    agent = Agent(model, system_prompt=SYSTEM)

    @agent.tool_plain
    def reply_to(uri: str, text: str) -> str:
        """Reply to a post."""
        return "replied: at://reply"

    result = await agent.run("hello")
    assert result.output == "done: replied: at://reply"
    assert len(complete.requests) == 1


async def test_a_call_sent_back_for_a_retry_is_asked_again_with_other_sampling() -> None:
    """With one call per run, a refused call (the degenerate guard raises `ModelRetry`) must
    not end the run: it did not happen, and the model tries once more, not at temperature 0."""
    model, script = scripted(
        call("reply_to", uri="alice", text="hi"),
        call("reply_to", uri=URI, text="Paris."),
        calls_per_run=1,
    )
    deps = Deps()
    result = await phi_agent(model).run(PROMPT, deps=deps)
    assert deps.calls == [("reply_to", URI, "Paris.")]
    assert result.output == "done: Reply posted."
    first, retry = script.requests
    assert (first["temperature"], first["seed"], "frequency_penalty" in first) == (0.0, 0, False)
    assert (retry["temperature"], retry["seed"], retry["frequency_penalty"]) == (0.7, 1, 0.5)
    assert retry["top_p"] == 0.9
