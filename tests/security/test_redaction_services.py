"""Issue 23, finding 4 (and 3, on the live paths): a health URL with a user, a password and
a `?token=` names its service without them in the prompt, the journal and /api/runs; and on
the local AT Protocol network, `phi prompt --preview` and the runs of a real tick show no
secret from a post or a health URL.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic_ai import (
    Agent,
    ModelMessage,
    ModelResponse,
    RunContext,
    TextPart,
    ToolCallPart,
    models,
)
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from typer.testing import CliRunner

from phi.agent import AgentConfig, PhiDeps, build_agent
from phi.agent.core import run, toolset_for
from phi.agent.tools.services import known_services_block, service_names
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.cli import app
from phi.memory import Memory, MiniLMEmbedder
from phi.memory.learning import Blocks
from phi.memory.model import utc_now
from phi.runtime.journal import RunJournal
from phi.runtime.poller import PhiRuntime
from phi.runtime.ratelimit import Admission
from phi.runtime.schedules import Schedule, ScheduleConfig
from phi.services import check_services, transitions
from phi.web import create_app

from ..agent.test_gate_logic import WHEN, deps, notification
from ..conftest import TEST_PORT
from .redaction_corpus import AWS_ID, GITHUB, HEALTH_SECRET

models.ALLOW_MODEL_REQUESTS = False

LOCAL = "http://127.0.0.1"


# -- finding 4: a health URL with credentials -------------------------------------------


class DownHealth:
    """A loopback health endpoint that is down (503), named by a URL with a user, a
    password and a `?token=`."""

    async def __aenter__(self) -> str:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 503 X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            await writer.drain()
            writer.close()

        self.server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://ops:opsFake1@127.0.0.1:{port}/health?token={HEALTH_SECRET}"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
async def health() -> AsyncIterator[str]:
    async with DownHealth() as url:
        yield url


CREDENTIALS = ("opsFake1", HEALTH_SECRET, "ops:")


@pytest.mark.anyio
async def test_a_health_url_names_its_service_without_credentials(
    memory: Memory, health: str, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    """Finding 4: `https://user:pass@host/health?token=...` became the service's name in the
    prompt, the journal and /api/runs."""
    (name,) = service_names((health,))
    assert name == health.split("@")[1].split("/")[0]  # 127.0.0.1:PORT

    d: PhiDeps = deps(notification("alice.test"))
    d.memory, d.blocks = memory, Blocks(memory=memory)
    d.config = AgentConfig(services=(health,))
    d.entry, d.batch, d.now = "service_check", None, WHEN + timedelta(hours=1)
    async with httpx.AsyncClient() as http:
        statuses = await check_services((health,), http)
    d.service_report = "\n".join(transitions({}, statuses))
    assert d.service_report.endswith("went down (503)")

    async def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("told the owner")])
        (tool,) = [t for t in info.function_tools if t.name == "check_service"]
        assert tool.parameters_json_schema["properties"]["name"]["enum"] == [name]
        return ModelResponse(parts=[ToolCallPart("check_service", {"name": name})])

    agent = Agent(
        FunctionModel(brain),
        deps_type=PhiDeps,
        toolsets=[toolset_for(d.config, only=frozenset({"check_service"}))],
    )

    @agent.system_prompt
    async def blocks(ctx: RunContext[PhiDeps]) -> str:
        return (
            f"{await known_services_block(ctx.deps)}\n\n[SERVICE CHECK]\n{ctx.deps.service_report}"
        )

    journal = RunJournal(path=tmp_path / "runs.db")
    await journal.run("service_check", lambda: run(agent, d))
    (record,) = await journal.recent()
    assert f"- {name} (http://{name}/health?token=[REDACTED:token]): " in record.system_prompt
    assert record.tool_calls[0].result.startswith(f"{name}: down (503)")

    web = create_app(lambda: Memory.open(tmp_path / "m.db", embedder=minilm), journal=journal)
    with TestClient(web, base_url=LOCAL) as browser:
        api = browser.get("/api/runs").text + browser.get(f"/api/runs/{record.run_id}").text
    kept = json.dumps(record.to_json())
    assert [c for c in CREDENTIALS if c in kept + api] == []


# -- the prompt preview and a live tick, on the local network ---------------------------


POST = (
    f"@phi.test my deploy broke, token {GITHUB} key {AWS_ID} db postgresql://phi:pgFakePass9@db/x"
)


def test_the_prompt_preview_and_the_runs_of_a_tick_show_no_secret(
    cast: SandboxInfo,
    sandbox: Sandbox,
    sandbox_home: Path,
    minilm: MiniLMEmbedder,
    tmp_path: Path,
) -> None:
    """Findings 3 and 4 where they were seen: alice's post carries secrets and the health
    URL credentials; `phi prompt --preview` shows neither, nor do the journal and /api/runs
    after phi's tick runs on that post and on the service check."""
    secrets = (GITHUB, AWS_ID, "pgFakePass9", *CREDENTIALS)

    async def alice_posts() -> None:
        async with PhiClient(cast.client_config("phi")) as phi:
            await sandbox.wait_for_indexing()
            await phi.update_seen()
        async with PhiClient(cast.client_config("alice")) as alice:
            await alice.post(POST)
        await sandbox.wait_for_indexing()

    anyio.run(alice_posts)

    preview = _preview_cli(
        sandbox_home,
        tmp_path,
        health=f"http://ops:opsFake1@127.0.0.1:9/health?token={HEALTH_SECRET}",
    )

    async def tick() -> tuple[list[str], dict[str, Any]]:
        async with DownHealth() as url:
            return await _tick(cast, minilm, url, tmp_path)

    runs, health_json = anyio.run(tick)
    assert "→ mention from @alice.test" in preview
    assert "[REDACTED:github-token]" in preview and "[KNOWN SERVICES" in preview
    assert [s for s in secrets if s in preview] == []
    assert len(runs) >= 3 and '"service_check"' in runs[0]
    assert "[REDACTED:github-token]" in "\n".join(runs)  # alice's post, in the run's prompt
    assert [s for s in secrets if s in "\n".join(runs) + json.dumps(health_json)] == []


def _preview_cli(home: Path, tmp_path: Path, *, health: str) -> str:
    env = {
        "PHI_HOME": str(home),
        "PHI_SANDBOX_PORT": str(TEST_PORT),
        "PHI_MEMORY_URL": str(tmp_path / "preview.db"),
        "PHI_MODEL": "test",
        "PHI_HEALTH_URLS": health,
    }
    result = CliRunner().invoke(app, ["prompt", "--preview", "--sandbox"], env=env)
    assert result.exit_code == 0, result.output
    return result.output


async def _tick(
    cast: SandboxInfo, minilm: MiniLMEmbedder, url: str, tmp_path: Path
) -> tuple[list[str], dict[str, Any]]:
    """One tick of phi with a brain that only says "done": a notifications run on alice's
    post and a service check run. Returns /api/runs (the list and each run) and health."""
    config = AgentConfig(owner_handle="phi-operator.test", services=(url,))
    agent = build_agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("done")])), config)
    journal = RunJournal(path=tmp_path / "runs.db")
    every = timedelta(minutes=5)
    async with (
        PhiClient(cast.client_config("phi")) as client,
        Memory.open(tmp_path / "memory.db", embedder=minilm) as memory,
    ):
        runtime = PhiRuntime(
            client=client,
            memory=memory,
            agent=agent,
            config=config,
            admission=Admission(self_did=client.me.did),
            schedule=Schedule(
                ScheduleConfig(
                    musing_hours=frozenset(),
                    reflection_hour=None,
                    health_urls=(url,),
                    service_check_every=every,
                ),
                started_at=utc_now() - 2 * every,
            ),
            journal=journal,
        )
        report = await runtime.tick()
        assert "service_check" in report.jobs
        health_json = await runtime.health()
    web = create_app(lambda: Memory.open(tmp_path / "m.db", embedder=minilm), journal=journal)
    with TestClient(web, base_url=LOCAL) as http:
        listed = http.get("/api/runs")
        pages = [listed.text] + [http.get(f"/api/runs/{r['run_id']}").text for r in listed.json()]
    return pages, health_json
