"""The control API over a real `PhiRuntime` on the local network, served by uvicorn on
loopback: `POST /post-now` puts a post on the network, `POST /review-now` reviews memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from pydantic_ai import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox
from phi.memory import NewRow, user_namespace
from phi.memory.learning import SmallModel
from phi.runtime.control import create_control_app, serve_control
from phi.runtime.poller import PhiRuntime

from ._brain import Brain, call
from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]

TOKEN = "control-test-token"


@asynccontextmanager
async def control(phi_runtime: PhiRuntime) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the control API of `phi_runtime`, served for real on loopback."""
    app = create_control_app(phi_runtime, TOKEN)
    async with (
        serve_control(app, host="127.0.0.1", port=0) as url,
        httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        ) as http,
    ):
        yield http


async def test_post_now_puts_a_musing_on_the_network(
    runtime: RuntimeFactory, phi: PhiClient, sandbox: Sandbox
) -> None:
    text = "the river is loud today, full of snowmelt"

    async def muse(prompt: str, step: int) -> list[ToolCallPart]:
        return [call("post", text=text)] if step == 0 else []

    brain = Brain(muse)
    async with runtime(brain) as phi_runtime, control(phi_runtime) as http:
        answer = await http.post("/post-now")
        health = (await http.get("/health")).json()
    assert (answer.status_code, answer.json()) == (200, {"result": "done"})
    (written,) = [r for r in brain.results if r.startswith("posted")]
    await sandbox.wait_for_indexing()
    (newest,) = await phi.list_own_posts(limit=1)
    assert newest.text == text and newest.uri in written
    assert health["counters"]["runs_musing"] == 1


async def test_review_now_reviews_memory(runtime: RuntimeFactory, alice: PhiClient) -> None:
    asked: list[str] = []

    def small_brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        (output,) = info.output_tools
        asked.append(str(messages[-1].parts[-1]))
        verdict = {"key": "o1", "verdict": "supersede", "replacement": "lives in hamburg"}
        return ModelResponse(
            parts=[ToolCallPart(tool_name=output.name, args={"verdicts": [verdict]})]
        )

    async def silent(prompt: str, step: int) -> list[ToolCallPart]:
        return []

    did = alice.me.did
    async with runtime(Brain(silent)) as phi_runtime:
        memory = phi_runtime.memory
        old = await memory.remember(
            NewRow(
                content="lives in berlin",
                namespace=user_namespace(did),
                kind="observation",
                author=did,
            )
        )
        async with control(phi_runtime) as http:
            without_model = await http.post("/review-now")
            phi_runtime.small = SmallModel(model=FunctionModel(small_brain), memory=memory)
            answer = await http.post("/review-now")
        current = await memory.search(
            "where does alice live", namespace=user_namespace(did), kinds=["observation"]
        )
        retired = await memory.get(old.row_id)

    assert (without_model.status_code, without_model.json()) == (
        400,
        {"detail": "no memory model: review needs PHI_MEMORY_MODEL (or the local model)"},
    )
    assert (answer.status_code, answer.json()) == (
        200,
        {"result": "reviewed 1 observation: 1 superseded"},
    )
    assert len(asked) == 1 and "lives in berlin" in asked[0]
    assert retired.status == "superseded"
    assert [(hit.row.content, hit.row.supersedes) for hit in current] == [
        ("lives in hamburg", old.row_id)
    ]
