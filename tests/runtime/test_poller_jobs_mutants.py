"""The poller's scheduled jobs and what the operator calls and sees (`phi.runtime.poller`):
musings, the reflection, the service check against health URLs on 127.0.0.1, the summary
refresh, `post_now`, `review_now`, the prompt preview and health, in process as in
`test_poller_mutants.py`."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import timedelta

import anyio
import pytest
from pydantic_ai import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from tests.agent._network import PHI
from tests.runtime._feed import START, mention
from tests.runtime._runtime import (
    MUSING,
    muse,
    open_phi,
    own_post,
    stay_silent,
)

from phi.agent.gate import REQUEST_SCOPE
from phi.atproto import Profile
from phi.errors import UserError
from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory.learning import SmallModel
from phi.runtime.schedules import Fired, ScheduleConfig, ScheduleState

pytestmark = pytest.mark.anyio


# -- scheduled jobs --------------------------------------------------------------------------


async def test_a_due_musing_runs_with_the_last_post_and_its_slot_is_kept(memory: Memory) -> None:
    async with open_phi(memory, muse, schedule=MUSING) as phi:
        phi.client.own_posts = [own_post("the river is loud today", at=START - timedelta(days=1))]
        report = await phi.runtime.tick()
        again = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert report.jobs == ["musing", "summary_refresh"]
    assert again.jobs == []
    assert phi.client.posts == [("the herons are back", None)]
    (prompt,) = phi.brain.prompts
    assert "the river is loud today" in prompt
    assert set(phi.client.own_asked) == {1}  # only the newest post is read for it
    assert "scheduled: musing" in phi.said
    assert health["counters"] == {"runs_musing": 1}
    fired = await ScheduleState(memory).load()
    assert fired.musings == {(START.date(), START.hour)}


async def test_a_musing_the_brain_fails_is_logged_and_its_slot_used(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(prompt: str, step: int) -> list[ToolCallPart]:
        raise UnexpectedModelBehavior("no answer")

    async with open_phi(memory, broken, schedule=MUSING) as phi:
        with caplog.at_level(logging.ERROR, logger="phi.runtime"):
            report = await phi.runtime.tick()
        again = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert (report.jobs, again.jobs) == (["musing", "summary_refresh"], [])
    assert health["counters"] == {"runs_musing": 1, "runs_failed": 1}
    assert [r.getMessage() for r in caplog.records] == ["musing run failed: no answer"]


async def test_a_musing_that_breaks_otherwise_ends_the_tick_and_stays_due(memory: Memory) -> None:
    async def broken(prompt: str, step: int) -> list[ToolCallPart]:
        raise ConnectionResetError("reset")

    async with open_phi(memory, broken, schedule=MUSING) as phi:
        with pytest.raises(ConnectionResetError):
            await phi.runtime.tick()
        assert phi.runtime.schedule.due(phi.clock.now) == ["musing", "summary_refresh"]
    assert await ScheduleState(memory).load() == Fired()


async def test_seed_recovers_the_used_slots_from_memory_and_own_posts(memory: Memory) -> None:
    hours = ScheduleConfig(
        musing_hours=frozenset({START.hour, START.hour + 1, START.hour + 2}),
        reflection_hour=None,
        summary_refresh_every=timedelta(days=365),
    )
    await ScheduleState(memory).save(Fired(musings=frozenset({(START.date(), START.hour)})))
    async with open_phi(memory, muse, schedule=hours) as phi:
        phi.client.own_posts = [
            own_post("an hour later", at=START + timedelta(hours=1, minutes=2)),
            # A repost in phi's feed is someone else's post: it used no slot of phi's.
            replace(
                own_post("not phi's", at=START + timedelta(hours=2, minutes=1)),
                author_did="did:plc:someone",
            ),
        ]
        await phi.runtime.seed()
        due = [phi.runtime.schedule.due(phi.clock.now + timedelta(hours=h)) for h in (0, 1, 2)]
    assert due == [["summary_refresh"], ["summary_refresh"], ["musing", "summary_refresh"]]
    assert phi.client.own_asked == [50]


async def test_post_now_muses_at_once_and_uses_the_slot(memory: Memory) -> None:
    async with open_phi(memory, muse, schedule=MUSING) as phi:
        output = await phi.runtime.post_now()
        due = phi.runtime.schedule.due(phi.clock.now)
    assert output == "done"
    assert phi.client.posts == [("the herons are back", None)]
    assert due == ["summary_refresh"]
    assert (await ScheduleState(memory).load()).musings == {(START.date(), START.hour)}


def finds_nothing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A memory model that reads the exchanges and finds no durable fact in them."""
    (output,) = info.output_tools
    return ModelResponse(parts=[ToolCallPart(tool_name=output.name, args={"observations": []})])


async def test_the_reflection_runs_after_extraction_when_there_is_a_memory_model(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    reflect = ScheduleConfig(
        musing_hours=frozenset(),
        reflection_hour=START.hour,
        summary_refresh_every=timedelta(days=365),
    )
    await memory.remember(
        NewRow.interaction(
            [Turn(speaker="@alice.test", text="I moved to Hamburg last spring")],
            namespace=user_namespace("did:plc:alice"),
            author="did:plc:alice",
        )
    )
    async with open_phi(memory, muse, schedule=reflect) as phi:
        phi.client.own_posts = [own_post("what a day", at=START)]
        report = await phi.runtime.tick()
        health = await phi.runtime.health()
    # Without a memory model: no extraction (nothing would make it), the run itself goes on.
    assert report.jobs == ["reflection", "summary_refresh"]
    assert health["counters"] == {"runs_reflection": 1}
    assert "what a day" in phi.brain.prompts[0]
    small = SmallModel(model=FunctionModel(finds_nothing), memory=memory)
    async with open_phi(memory, muse, schedule=reflect, small=small) as phi:
        with caplog.at_level(logging.INFO, logger="phi.runtime"):
            await phi.runtime.tick()
    assert small.calls["extract"] == 1
    # What extraction did is in the log `phi run` keeps (nothing found: no action).
    assert "reflection: extraction {}" in [r.getMessage() for r in caplog.records]


async def test_the_summary_refresh_needs_a_memory_model(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    every_day = ScheduleConfig(musing_hours=frozenset(), reflection_hour=None)
    for n in range(5):  # enough new exchanges for a summary
        await memory.remember(
            NewRow.interaction(
                [Turn(speaker="@alice.test", text=f"a heron again, the {n}th this week")],
                namespace=user_namespace("did:plc:alice"),
                author="did:plc:alice",
            )
        )
    async with open_phi(memory, schedule=every_day) as phi:
        skipped = await phi.runtime.tick()
    small = SmallModel(model=TestModel(), memory=memory)
    async with open_phi(memory, schedule=every_day, small=small) as phi:
        with caplog.at_level(logging.INFO, logger="phi.runtime"):
            refreshed = await phi.runtime.tick()
    assert skipped.jobs == refreshed.jobs == ["summary_refresh"]
    assert small.calls["summarize"] == 1
    assert "summary refresh: 1 people" in [r.getMessage() for r in caplog.records]


# -- the service check -----------------------------------------------------------------------


@dataclass
class Health:
    """Health URLs on 127.0.0.1 answering `status` (or nothing, when `silent`)."""

    status: int = 200
    silent: bool = False
    server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return self.at("/health")

    def at(self, path: str) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}{path}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        if self.silent:
            await reader.read()  # until the client gives up
            writer.close()
            return
        writer.write(
            f"HTTP/1.1 {self.status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        writer.close()


@pytest.fixture
async def health_server() -> AsyncIterator[Health]:
    health = Health()
    health.server = await asyncio.start_server(health.serve, "127.0.0.1", 0)
    yield health
    health.server.close()
    await health.server.wait_closed()


async def test_the_service_check_runs_phi_only_on_a_change(
    memory: Memory, health_server: Health
) -> None:
    checks = ScheduleConfig(
        musing_hours=frozenset(),
        reflection_hour=None,
        summary_refresh_every=timedelta(days=365),
        service_check_every=timedelta(hours=1),
        health_urls=(health_server.url, health_server.at("/ready")),
    )
    async with open_phi(memory, stay_silent, schedule=checks) as phi:
        assert (await phi.runtime.tick()).jobs == ["summary_refresh"]
        health_server.status = 503
        phi.clock.advance(3600)
        down = await phi.runtime.tick()
        down_health = await phi.runtime.health()
        phi.clock.advance(3600)
        still = await phi.runtime.tick()
        health_server.status = 200
        phi.clock.advance(3600)
        await phi.runtime.tick()
        up_health = await phi.runtime.health()
    assert (down.jobs, still.jobs) == (["service_check"], ["service_check"])
    first, second = phi.brain.prompts
    ready = health_server.at("/ready")
    # One line per service that changed.
    assert f"{health_server.url} went down (503)\n{ready} went down (503)" in first
    assert f"{health_server.url} recovered\n{ready} recovered" in second
    assert down_health["services"] == {health_server.url: False, ready: False}
    assert up_health["services"] == {health_server.url: True, ready: True}
    assert up_health["counters"] == {"runs_service_check": 2}


async def test_a_health_url_that_never_answers_is_down_after_ten_seconds(
    memory: Memory, health_server: Health
) -> None:
    checks = ScheduleConfig(
        musing_hours=frozenset(),
        reflection_hour=None,
        summary_refresh_every=timedelta(days=365),
        service_check_every=timedelta(hours=1),
        health_urls=(health_server.url,),
    )
    health_server.silent = True
    async with open_phi(memory, stay_silent, schedule=checks) as phi:
        await phi.runtime.tick()
        phi.clock.advance(3600)
        with anyio.fail_after(30):  # the check gives up after 10 s: the tick goes on
            report = await phi.runtime.tick()
    assert report.jobs == ["service_check"]
    (prompt,) = phi.brain.prompts
    assert f"{health_server.url} went down (ReadTimeout)" in prompt


# -- the control API's calls -----------------------------------------------------------------


OBSERVATION = re.compile(r"^(o\d+): (.*) \(noted", re.MULTILINE)


def promote_recommendations(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Promotes each observation that is a recommendation, keeps the rest."""
    (output,) = info.output_tools
    verdicts = [
        {"key": key, "verdict": "promote", "card": text}
        if "recommends" in text
        else {"key": key, "verdict": "keep"}
        for key, text in OBSERVATION.findall(str(getattr(messages[-1].parts[-1], "content", "")))
    ]
    return ModelResponse(parts=[ToolCallPart(tool_name=output.name, args={"verdicts": verdicts})])


async def test_review_now_needs_a_memory_model_and_says_what_it_did(memory: Memory) -> None:
    async with open_phi(memory) as phi:
        with pytest.raises(UserError) as refused:
            await phi.runtime.review_now()
        assert str(refused.value) == (
            "no memory model: review needs PHI_MEMORY_MODEL (or the local model)"
        )
        phi.runtime.small = SmallModel(model=FunctionModel(promote_recommendations), memory=memory)
        nothing = await phi.runtime.review_now()
        said: list[str] = []
        for text in (
            "alice lives in hamburg",
            "alice recommends the heron hide at the lake",
            "alice recommends the reed walk at dawn",
        ):
            await memory.remember(
                NewRow(
                    content=text,
                    namespace=user_namespace("did:plc:alice"),
                    kind="observation",
                    author="did:plc:alice",
                )
            )
            if not said:
                said.append(await phi.runtime.review_now())
        reviewed = await phi.runtime.review_now()
    assert nothing == "reviewed 0 observations: nothing to review"
    assert said == ["reviewed 1 observation: 1 kept"]
    assert reviewed == (
        "reviewed 3 observations: 1 kept, 2 promoted; published "
        "at://did:plc:phi/io.phi.record/1, at://did:plc:phi/io.phi.record/2"
    )
    assert ["heron hide" in str(c) for c in phi.client.records] == [True, False]


# -- what the operator sees ------------------------------------------------------------------


async def test_the_preview_shows_the_next_batch_without_touching_it(memory: Memory) -> None:
    secret = replace(
        mention(1), text="@phi.test my key is ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    )
    own = mention(2, handle="phi.test", did=PHI.did)
    async with open_phi(memory, feed=[secret, own]) as phi:
        # alice is a stranger with a profile: a tick would write what it found to memory.
        phi.client.profiles = {
            secret.author_did: Profile(did=secret.author_did, handle="alice.test")
        }
        phi.client.own_posts = [own_post("the river is loud today", at=START)]
        shown = await phi.runtime.preview()
        # The prompt's cached blocks are warm now: a notification preview does not fetch
        # phi's latest post for itself (only a musing's or a reflection's shows it).
        warm = len(phi.client.own_asked)
        assert await phi.runtime.preview() == shown
        assert phi.client.own_asked[warm:] == []
        musing = await phi.runtime.preview("musing")
        reflection = await phi.runtime.preview("reflection")
        counted = phi.runtime.admission.rate_limit.count(secret.author_did, phi.clock.now)
        assert await memory.namespaces() == []  # a preview writes nothing
        assert set(phi.client.own_asked) == {1}
        await phi.runtime.tick()
        researched = [n.namespace for n in await memory.namespaces()]
    assert secret.uri in shown and own.uri not in shown
    assert "[REDACTED:github-token]" in shown and "ghp_" not in shown
    assert "the river is loud today" not in shown
    assert "the river is loud today" in musing and "the river is loud today" in reflection
    assert secret.uri not in musing
    assert (phi.client.seen_calls[:-1], phi.client.replies[:-1], counted) == ([], [], 0)
    assert len(phi.brain.prompts) == 1  # the tick's
    assert researched == [user_namespace(secret.author_did)]


async def test_the_preview_shows_what_waits_once_it_is_due(memory: Memory) -> None:
    async def broken(prompt: str, step: int) -> list[ToolCallPart]:
        raise UnexpectedModelBehavior("overloaded")

    async with open_phi(memory, broken, feed=[mention(1)]) as phi:
        await phi.runtime.tick()
        waiting = await phi.runtime.preview()
        phi.clock.advance(30)
        due = await phi.runtime.preview()
    assert mention(1).uri not in waiting
    assert mention(1).uri in due


async def test_an_owner_like_on_a_pending_request_reaches_the_run(memory: Memory) -> None:
    like = mention(1, handle="phi-operator.test", did="did:plc:operator", reason="like")
    assert like.reason_subject is not None
    request = {
        "tool": "follow_user",
        "args": [["handle", "carol.test"]],
        "thread_root": like.reason_subject,
        "owner_did": "did:plc:operator",
        "status": "pending",
    }
    await memory.state.write(REQUEST_SCOPE, like.reason_subject, json.dumps(request))
    approval = (
        f"[OWNER APPROVAL] @phi-operator.test liked your authorization request "
        f"{like.reason_subject}: it approves exactly follow_user(handle='carol.test')"
    )
    async with open_phi(memory, stay_silent, feed=[like]) as phi:
        previewed = await phi.runtime.preview()
        await phi.runtime.tick()
    assert approval in previewed
    assert approval in phi.brain.prompts[0]


async def test_health_names_services_without_their_credentials(memory: Memory) -> None:
    async with open_phi(memory) as phi:
        phi.runtime._service_up = {"http://user:hunter2@127.0.0.1:9/health": False}
        health = await phi.runtime.health()
    assert health["services"] == {"http://127.0.0.1:9/health": False}
