"""Notification → reply latency on the local network, the model's own time left out.

    uv run python bench/reply_latency.py [--rounds 20] [--local] [--port 2882]

Brings up its own sandbox (separate ports, state folder and schema, so a developer's
network and the test network keep running), then repeats: alice mentions phi, the
AppView indexes it, phi ticks once — fetches the notification, builds the batch's context
(thread, stranger lookup, memory), composes the prompt, runs the agent, posts the reply and
stores the exchange in memory (MiniLM embedding included). The brain is scripted
(`FunctionModel` replying at once), or the real SmolLM2 with `--local`; either way the
model's time is measured separately and subtracted. The wait for the next poll (10 s at
most by default) is not included: it is a setting, not work.

Prints the median and p95 of the tick, of the model's part and of phi's own part.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
from pathlib import Path

import anyio
from pydantic_ai import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ModelRequest, SystemPromptPart, ToolReturnPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phi.agent import CORE_TOOLS, AgentConfig, build_agent
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxConfig
from phi.config import Settings
from phi.llm import resolve_model
from phi.memory import Memory
from phi.memory.model import utc_now
from phi.runtime.poller import PhiRuntime
from phi.runtime.ratelimit import Admission
from phi.runtime.schedules import Schedule, ScheduleConfig
from phi.runtime.timing import TimedModel

_URI = re.compile(r'uri: "(at://[^"]+)"')


def scripted() -> Model:
    """Replies to every post of the batch at once, then stops."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("done")])
        system = "\n".join(
            p.content
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, SystemPromptPart)
        )
        return ModelResponse(
            parts=[
                ToolCallPart(tool_name="reply_to", args={"uri": uri, "text": "noted, thanks!"})
                for uri in _URI.findall(system)
            ]
        )

    return FunctionModel(answer)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(rounds: int, local: bool, port: int) -> None:
    settings = Settings(_env_file=None)
    state = Path(tempfile.mkdtemp(prefix="phi-bench-latency-"))
    schema = "phi_bench_" + "".join(chr(ord("a") + int(d)) for d in str(port))
    sandbox = Sandbox(
        SandboxConfig(
            cache_dir=settings.resolved_sandbox_cache(),
            state_dir=state / "sandbox",
            base_port=port,
            schema=schema,
        )
    )
    info = await sandbox.up()
    try:
        model = TimedModel(resolve_model(None) if local else scripted())
        config = AgentConfig(owner_handle="phi-operator.test", synthesize=False)
        agent = build_agent(model, config, tools=sorted(CORE_TOOLS) if local else None)
        ticks: list[float] = []
        models: list[float] = []
        async with (
            PhiClient(info.client_config("phi")) as phi,
            PhiClient(info.client_config("alice")) as alice,
            Memory.open(state / "memory.db") as memory,
        ):
            runtime = PhiRuntime(
                client=phi,
                memory=memory,
                agent=agent,
                config=config,
                admission=Admission(self_did=phi.me.did),
                schedule=Schedule(
                    ScheduleConfig(musing_hours=frozenset(), reflection_hour=None),
                    started_at=utc_now(),
                ),
                model_timer=model,
            )
            runtime.schedule.mark("summary_refresh", utc_now())
            for n in range(rounds + 1):
                await alice.post(f"@phi.test question {n}: what do you make of herons?")
                await sandbox.wait_for_indexing()
                report = await runtime.tick()
                if len(report.replies) != 1:
                    raise SystemExit(f"round {n}: expected one reply, got {report.actions}")
                if n > 0:  # the first round loads the embedder (and the local model)
                    ticks.append(report.seconds)
                    models.append(report.model_seconds)
        own = [t - m for t, m in zip(ticks, models, strict=True)]
        brain = "SmolLM2 (local)" if local else "scripted FunctionModel"
        print(f"notification → reply, {rounds} rounds, brain: {brain}")
        print("| part | median ms | p95 ms |")
        print("|---|---|---|")
        for name, values in (("tick", ticks), ("model", models), ("phi itself", own)):
            median = statistics.median(values) * 1000
            print(f"| {name} | {median:.0f} | {_quantile(values, 0.95) * 1000:.0f} |")
    finally:
        await sandbox.down()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--local", action="store_true", help="the real SmolLM2, not a script")
    parser.add_argument("--port", type=int, default=2882)
    args = parser.parse_args()
    anyio.run(main, args.rounds, args.local, args.port)
