"""The run journal and tracing, with a scripted model: what a run saw, did and cost is kept,
bounded, shown by `phi runs`, and traced through pydantic-ai's instrumentation."""

from __future__ import annotations

import functools
import json
import sqlite3
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, ModelRetry, models
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from typer.testing import CliRunner

from phi.cli import app
from phi.runtime.journal import RunJournal, RunNotFound, RunRecord
from phi.runtime.tracing import start_tracing, tracing_from_env

pytestmark = pytest.mark.anyio

models.ALLOW_MODEL_REQUESTS = False


def _script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    del info
    if len(messages) == 1:
        return ModelResponse(
            parts=[
                ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="c1"),
                ToolCallPart("refuse", {"why": "x"}, tool_call_id="c2"),
            ]
        )
    return ModelResponse(parts=[TextPart("added")])


def _agent() -> Agent[None, str]:
    agent = Agent(FunctionModel(_script), system_prompt="base prompt")

    @agent.system_prompt(dynamic=True)
    def block() -> str:
        return "[NOW] a dynamic block"

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    @agent.tool_plain
    def refuse(why: str) -> str:
        raise ModelRetry(f"not now ({why})")

    return agent


async def test_a_run_is_journalled_with_prompt_tools_usage_and_outcome(tmp_path: Path) -> None:
    journal = RunJournal(path=tmp_path / "runs.db")
    agent = _agent()

    output = await journal.run("musing", lambda: _output(agent), actions=lambda: ["posted: hello"])

    assert output == "added"
    (record,) = await journal.recent()
    assert record.entry == "musing"
    assert record.outcome == "ok"
    assert record.output == "added"
    assert record.system_prompt == "base prompt\n\n[NOW] a dynamic block"
    assert len(record.prompt_hash) == 64
    assert [(c.tool, json.loads(c.args), c.result, c.outcome) for c in record.tool_calls] == [
        ("add", {"a": 2, "b": 3}, "5", "success"),
        ("refuse", {"why": "x"}, '{"error":"not now (x)"}', "retried"),
    ]
    assert all(c.seconds is not None and c.seconds >= 0 for c in record.tool_calls)
    assert record.requests == 2
    assert record.model == "function:_script:"
    assert record.input_tokens > 0 and record.output_tokens > 0
    assert record.actions == ("posted: hello",)
    assert record.seconds > 0
    assert await journal.get(record.run_id[:6]) == record


async def _output(agent: Agent[None, str]) -> str:
    return (await agent.run("go")).output


async def test_a_failed_run_is_journalled_and_its_error_propagates(tmp_path: Path) -> None:
    journal = RunJournal(path=tmp_path / "runs.db")

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("provider down")

    agent = Agent(FunctionModel(broken), system_prompt="base prompt")
    with pytest.raises(RuntimeError, match="provider down"):
        await journal.run("notifications", lambda: _output(agent))

    (record,) = await journal.recent()
    assert (record.outcome, record.output) == ("failed", "RuntimeError: provider down")
    assert record.system_prompt == "base prompt"


async def test_retention_keeps_the_newest_runs_and_their_prompts_only(tmp_path: Path) -> None:
    journal = RunJournal(path=tmp_path / "runs.db", keep=3)
    for n in range(5):
        agent = Agent(FunctionModel(_script), system_prompt=f"prompt {n}")
        await journal.run("musing" if n % 2 else "review", functools.partial(_output, agent))

    kept = await journal.recent(limit=10)
    assert [r.system_prompt for r in kept] == ["prompt 4", "prompt 3", "prompt 2"]
    assert [r.entry for r in await journal.recent(entry="musing")] == ["musing"]
    with sqlite3.connect(journal.path) as conn:
        (prompts,) = conn.execute("SELECT count(*) FROM prompts").fetchone()
    assert prompts == 3  # the aged-out runs' prompts went with them


async def test_an_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    journal = RunJournal(path=tmp_path / "runs.db")
    with pytest.raises(RunNotFound, match="no run with id 'nope'"):
        await journal.get("nope")
    with pytest.raises(RunNotFound):
        await journal.get("")


def test_phi_runs_list_and_show(phi_home: Path) -> None:
    journal = RunJournal.at_home(phi_home)

    async def one_run() -> RunRecord:
        await journal.run("musing", lambda: _output(_agent()))
        (record,) = await journal.recent()
        return record

    record = anyio.run(one_run)
    runner = CliRunner()

    listed = runner.invoke(app, ["runs", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    (summary,) = json.loads(listed.output)
    assert summary["run_id"] == record.run_id
    assert summary["tools"] == ["add", "refuse"]

    shown = runner.invoke(app, ["runs", "show", record.run_id])
    assert shown.exit_code == 0, shown.output
    assert "[NOW] a dynamic block" in shown.output
    assert 'add({"a":2,"b":3}) → success' in shown.output

    missing = runner.invoke(app, ["runs", "show", "zzz"])
    assert missing.exit_code == 2
    assert "no run with id 'zzz'" in missing.output


async def test_runs_are_traced_through_pydantic_ai_instrumentation() -> None:
    exporter = InMemorySpanExporter()
    tracing = start_tracing(exporter, batch=False)
    try:
        await _output(_agent())
    finally:
        tracing.stop()
    names = [span.name for span in exporter.get_finished_spans()]
    assert any(name.startswith("invoke_agent") or name == "agent run" for name in names), names
    assert any("add" in name for name in names), names
    assert any(name.startswith("chat") for name in names), names
    # Stopped: later runs are not instrumented.
    exporter.clear()
    await _output(_agent())
    assert exporter.get_finished_spans() == ()


def test_tracing_is_on_only_when_an_otlp_endpoint_is_set() -> None:
    assert tracing_from_env({}) is None
    assert tracing_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}) is None
    tracing = tracing_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert tracing is not None
    tracing.stop()  # nothing was traced, so nothing is sent
