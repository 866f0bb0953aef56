"""`phi bench brain`: how a decision is scored, and the command's JSON."""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from typer.testing import CliRunner

from phi.bench.brain import BrainSetup, run_case, system_prompt
from phi.bench.brain_cases import CASES
from phi.cli import app

pytestmark = pytest.mark.anyio

GREETING = CASES[0]  # alice: "hi phi! i'm alice. what do you remember about me?"


def echo_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Echo alice's post, then, sent back by the guard, answer in new words."""
    (uri,) = info.function_tools[
        [t.name for t in info.function_tools].index("reply_to")
    ].parameters_json_schema["properties"]["uri"]["enum"]
    retried = any(
        isinstance(p, ToolReturnPart) and p.outcome == "retried" for m in messages for p in m.parts
    )
    text = (
        "nice to meet you, alice! i don't remember you yet." if retried else GREETING.posts[0].text
    )
    return ModelResponse(parts=[ToolCallPart("reply_to", {"uri": uri, "text": text})])


async def test_an_echo_is_counted_and_the_guard_retry_rescues_it() -> None:
    setup = BrainSetup(name="scripted", spec="test")
    run = await run_case(FunctionModel(echo_then_answer), GREETING, setup)
    assert run.valid and run.rescued
    assert run.degenerate is not None and run.degenerate.reason == "echo"
    assert run.decision.startswith('reply_to({"uri":"at://did:plc:alice/')


def test_twenty_cases_and_both_profiles_show_the_batch() -> None:
    assert len(CASES) == 20 and len({c.name for c in CASES}) == 20
    kinds = {c.kind for c in CASES}
    assert kinds == {"greeting", "memory", "correction", "like", "thread", "refuse", "question"}
    full, compact = system_prompt(GREETING, "full"), system_prompt(GREETING, "compact")
    assert sum(map(len, compact)) < sum(map(len, full))
    for parts in (full, compact):
        assert 'uri: "at://did:plc:alice/app.bsky.feed.post/3k2a"' in "\n".join(parts)


def test_the_command_prints_one_object_per_brain() -> None:
    result = CliRunner().invoke(
        app, ["bench", "brain", "--model", "test", "--cases", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert set(row) == {
        "model", "runs", "valid_tool_calls", "degenerate", "rescued", "median_s", "p95_s",
        "tokens_per_s", "prompt_tokens",
    }  # fmt: skip
    # pydantic-ai's TestModel calls every tool at once: never one valid decision
    assert (row["model"], row["runs"], row["valid_tool_calls"]) == ("test", 2, 0.0)
