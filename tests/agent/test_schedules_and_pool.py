"""Scheduled runs and the attention pool on the local network, with a scripted brain."""

from __future__ import annotations

import pytest
from pydantic_ai import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from atproto import AsyncClient  # type: ignore[import-untyped]
from phi.agent.outcomes import Refused
from phi.atproto import Observation, PhiClient
from phi.atproto.observations import POOL_SIZE
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.memory import NewRow, Turn, user_namespace
from phi.memory.learning import SmallModel
from phi.memory.model import utc_now
from phi.runtime.schedules import ScheduleConfig

from ._brain import Brain, call
from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]


async def _top_level_posts(phi: PhiClient) -> list[str]:
    return [p.uri for p in await phi.list_own_posts(limit=50) if p.reply_root is None]


async def _clear_posts_in_hours(
    phi: PhiClient, cast: SandboxInfo, sandbox: Sandbox, hours: frozenset[int]
) -> None:
    """Delete phi's top-level posts of today in `hours`: other tests on this shared network
    post too, and any such post would read as this hour's musing already made."""
    today = utc_now().date()
    stale = [
        p.uri
        for p in await phi.list_own_posts(limit=100)
        if p.reply_root is None and p.created_at.date() == today and p.created_at.hour in hours
    ]
    if not stale:
        return
    account = cast.account("phi")
    app = AsyncClient(base_url=cast.pds_url)
    await app.login(account.handle, account.app_password, fetch_bsky_profile=False)
    try:
        for uri in stale:
            await app.delete_post(uri)
    finally:
        await app.request.close()
    await sandbox.wait_for_indexing()


async def test_restart_after_a_musing_does_not_post_again_that_hour(
    runtime: RuntimeFactory, phi: PhiClient, sandbox: Sandbox, cast: SandboxInfo
) -> None:
    start = utc_now()
    # this hour and the next, so a run that straddles the hour still finds its slot
    hours = frozenset({start.hour, (start.hour + 1) % 24})
    schedule = ScheduleConfig(musing_hours=hours, reflection_hour=None)
    await _clear_posts_in_hours(phi, cast, sandbox, hours)

    async def muse(prompt: str, step: int) -> list[ToolCallPart]:
        return [call("post", text=f"a thought at {utc_now():%H:%M:%S.%f}")] if step == 0 else []

    before = await _top_level_posts(phi)
    first = Brain(muse)
    async with runtime(first, schedule=schedule) as phi_runtime:
        await phi_runtime.seed()
        report = await phi_runtime.tick()
        assert "musing" in report.jobs
        await sandbox.wait_for_indexing()
    after_musing = await _top_level_posts(phi)
    assert len(after_musing) == len(before) + 1

    restarted = Brain(muse)
    async with runtime(restarted, schedule=schedule) as phi_runtime:
        await phi_runtime.seed()
        report = await phi_runtime.tick()
        assert "musing" not in report.jobs
    assert restarted.prompts == []
    assert await _top_level_posts(phi) == after_musing


async def test_a_musing_that_posted_nothing_used_its_slot_across_a_restart(
    runtime: RuntimeFactory, phi: PhiClient, sandbox: Sandbox, cast: SandboxInfo
) -> None:
    """Finding 25.3: a musing the brain (or the guard) left unposted fired again on every
    start within its hour, since only phi's posts were read back."""
    start = utc_now()
    hours = frozenset({start.hour, (start.hour + 1) % 24})
    schedule = ScheduleConfig(musing_hours=hours, reflection_hour=None)
    await _clear_posts_in_hours(phi, cast, sandbox, hours)

    async def say_nothing(prompt: str, step: int) -> list[ToolCallPart]:
        return []

    first = Brain(say_nothing)
    async with runtime(first, schedule=schedule) as phi_runtime:
        await phi_runtime.seed()
        assert "musing" in (await phi_runtime.tick()).jobs
    assert len(first.prompts) == 1  # the musing ran, and posted nothing

    restarted = Brain(say_nothing)
    async with runtime(restarted, schedule=schedule) as phi_runtime:
        await phi_runtime.seed()
        report = await phi_runtime.tick()
    assert report.jobs == [] and restarted.prompts == []


async def test_scheduled_runs_never_pass_the_owner_gate(
    runtime: RuntimeFactory, phi: PhiClient
) -> None:
    async def follow_someone(prompt: str, step: int) -> list[ToolCallPart]:
        return [call("follow_user", handle="bob.test", why="likes boats")] if step == 0 else []

    brain = Brain(follow_someone)
    async with runtime(brain) as phi_runtime:
        await phi_runtime.post_now()
    assert brain.results == [
        str(Refused(refused="a musing run never passes the owner gate; nobody approved"))
    ]


async def test_the_attention_pool_never_exceeds_five(
    runtime: RuntimeFactory, phi: PhiClient
) -> None:
    for old in await phi.list_records(Observation):
        await phi.delete_record(Observation, old.rkey)
    sizes: list[int] = []

    async def observe_seven_things(prompt: str, step: int) -> list[ToolCallPart]:
        sizes.append(len(await phi.list_records(Observation)))
        if step >= 7:
            return []
        return [call("observe", content=f"noticed thing {step}", reasoning="curious")]

    async with runtime(Brain(observe_seven_things)) as phi_runtime:
        await phi_runtime.post_now()
        archived = await phi_runtime.memory.search(
            "noticed thing", namespace="phi-observations", limit=10
        )
    assert sizes == [0, 1, 2, 3, 4, 5, 5, 5]
    assert max(sizes) <= POOL_SIZE
    remaining = sorted(o.value.content for o in await phi.list_records(Observation))
    assert remaining == [f"noticed thing {n}" for n in range(2, 7)]
    assert sorted(h.row.content for h in archived) == [
        "noticed thing 0 — curious",
        "noticed thing 1 — curious",
    ]


async def test_the_daily_reflection_runs_extraction_first(
    runtime: RuntimeFactory, alice: PhiClient
) -> None:
    order: list[str] = []

    def small_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tool = info.output_tools[0]
        if "line" in tool.parameters_json_schema["properties"]:  # the self-awareness line
            return ModelResponse(
                parts=[ToolCallPart(tool_name=tool.name, args={"line": "i echo too much"})]
            )
        assert "observations" in tool.parameters_json_schema["properties"]
        order.append("extract")
        fact = {"text": "likes herons", "tags": ["birds"], "exchanges": [1]}
        return ModelResponse(
            parts=[ToolCallPart(tool_name=tool.name, args={"observations": [fact]})]
        )

    async def reflect(prompt: str, step: int) -> list[ToolCallPart]:
        order.append("reflection")
        return []

    moment = utc_now()  # one clock for the whole test, so the hour cannot turn under it
    schedule = ScheduleConfig(musing_hours=frozenset(), reflection_hour=moment.hour)
    async with runtime(Brain(reflect), schedule=schedule, clock=lambda: moment) as phi_runtime:
        memory = phi_runtime.memory
        phi_runtime.small = SmallModel(model=FunctionModel(small_model), memory=memory)
        phi_runtime.schedule.mark("summary_refresh", moment)
        await memory.remember(
            NewRow.interaction(
                [
                    Turn(speaker="@alice.test", text="i love herons, they stand so still"),
                    Turn(speaker="@phi.test", text="patience on legs", by_phi=True),
                ],
                namespace=user_namespace(alice.me.did),
                author=alice.me.did,
            )
        )
        report = await phi_runtime.tick()
        again = await phi_runtime.tick()
        (fact,) = await memory.search(
            "herons", namespace=user_namespace(alice.me.did), kinds=["observation"]
        )
    assert report.jobs == ["reflection"]
    assert order == ["extract", "reflection"]
    assert fact.row.content == "likes herons"
    assert again.jobs == []  # once a day


async def test_paused_phi_lets_notifications_accumulate(
    runtime: RuntimeFactory, alice: PhiClient, sandbox: Sandbox
) -> None:
    async def stay_silent(prompt: str, step: int) -> list[ToolCallPart]:
        return []

    brain = Brain(stay_silent)
    async with runtime(brain) as phi_runtime:
        await phi_runtime.pause()
        (ping,) = await alice.post("@phi.test are you there?")
        await sandbox.wait_for_indexing()
        paused = await phi_runtime.tick()
        assert paused.admitted == [] and brain.prompts == []
        page = await phi_runtime.client.list_notifications()
        assert any(n.uri == ping.uri and not n.is_read for n in page.notifications)
        await phi_runtime.resume()
        resumed = await phi_runtime.tick()
    assert [n.uri for n in resumed.admitted] == [ping.uri]
    assert len(brain.prompts) == 1
