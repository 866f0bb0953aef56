"""The owner gate on the local network: a goal change needs the owner's like on phi's
request, passes once in the batch that brings the like, and never with someone else in it."""

from __future__ import annotations

import pytest
from pydantic_ai import ToolCallPart

from phi.agent import NotificationContext, gate
from phi.atproto import Goal, PhiClient
from phi.atproto.sandbox import Sandbox

from ._brain import Brain, call
from .conftest import OWNER, RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]

GOAL = {
    "title": "make 3 friends",
    "description": "have three people who come back to talk",
    "progress_signal": "three handles with exchanges in two different weeks",
}


def propose(**overrides: object) -> ToolCallPart:
    return call("propose_goal_change", **{**GOAL, **overrides})


async def _goals(phi: PhiClient) -> list[str]:
    return [g.value.title for g in await phi.list_records(Goal)]


async def test_goal_change_needs_the_owners_like_in_an_owner_only_batch(
    runtime: RuntimeFactory,
    phi: PhiClient,
    operator: PhiClient,
    alice: PhiClient,
    sandbox: Sandbox,
) -> None:
    for existing in await phi.list_records(Goal):
        await phi.delete_record(Goal, existing.rkey)

    async def always_propose(prompt: str, step: int) -> list[ToolCallPart]:
        title = "make 5 friends" if "make 5 friends" in prompt else GOAL["title"]
        return [propose(title=title)] if step == 0 else []

    brain = Brain(always_propose)
    async with runtime(brain) as phi_runtime:
        # 1. asked, not approved: phi posts an authorization request instead
        (ask,) = await operator.post("@phi.test please take on a goal: make 3 friends")
        await sandbox.wait_for_indexing()
        report = await phi_runtime.tick()
        assert await _goals(phi) == []
        assert brain.results[-1].startswith("not approved yet: posted an authorization request")
        (request,) = report.replies
        await sandbox.wait_for_indexing()
        assert request.in_reply_to == ask.uri
        assert "@phi-operator.test authorization request: propose_goal_change(" in request.text

        # 2. the owner likes the request: the next batch lets exactly that action through
        await operator.like(request.uri)
        await sandbox.wait_for_indexing()
        the_like = await _like_on(phi, request.uri)
        assert len(await gate.approvals_in(phi_runtime.memory, [the_like], OWNER)) == 1
        await phi_runtime.tick()
        assert (
            "[OWNER APPROVAL] @phi-operator.test liked your authorization request"
            in (brain.prompts[-1])
        )
        assert brain.results[-1].startswith("goal [")
        assert await _goals(phi) == ["make 3 friends"]

        # 3. the same like cannot approve twice: were it seen again (replayed, or fetched
        # anew), it carries no approval, and asking again posts a new request
        assert await gate.approvals_in(phi_runtime.memory, [the_like], OWNER) == []
        await operator.post("@phi.test and again?")
        await sandbox.wait_for_indexing()
        await phi_runtime.tick()
        assert brain.results[-1].startswith("not approved yet")
        second_request = phi_runtime_last_request(brain)

        # 4. approved, but alice is in the same batch: refused
        (ask5,) = await operator.post("@phi.test make it make 5 friends")
        await sandbox.wait_for_indexing()
        await phi_runtime.tick()
        await sandbox.wait_for_indexing()
        request5 = phi_runtime_last_request(brain)
        assert request5 != second_request
        await operator.like(request5)
        await alice.post("@phi.test hi! what are you up to?")
        await sandbox.wait_for_indexing()
        report = await phi_runtime.tick()
        assert {n.author_handle for n in report.admitted} == {"phi-operator.test", "alice.test"}
        assert "refused='this batch also holds @alice.test" in brain.results[-1]
        assert await _goals(phi) == ["make 3 friends"]
        assert ask5.uri


async def _like_on(phi: PhiClient, subject: str) -> NotificationContext:
    """The notification of the like on `subject`, read or not."""
    page = await phi.list_notifications(limit=50)
    (found,) = [n for n in page.notifications if n.reason == "like" and n.reason_subject == subject]
    return NotificationContext(notification=found)


def phi_runtime_last_request(brain: Brain) -> str:
    """The URI of the authorization request phi posted last, from the tool's answer."""
    text = brain.results[-1]
    return text.split("(", 1)[1].split(")", 1)[0]
