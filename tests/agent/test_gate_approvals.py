"""The owner gate's approvals over a real memory store: one like spends once, it is the
owner's by DID, it covers exactly the action asked for, in the thread where it was asked."""

from __future__ import annotations

from typing import TypedDict

import pytest
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phi.agent import AgentConfig, Batch, NotificationContext, PhiDeps, PromptCaches, gate
from phi.agent.core import toolset_for
from phi.agent.tools.intent import manage_labels, propose_goal_change
from phi.atproto import Goal, Notification
from phi.memory import Memory

from ._network import FakeClient, run_context
from .test_gate_logic import OWNER, WHEN

pytestmark = pytest.mark.anyio

OWNER_DID = "did:plc:owner"


class GoalArgs(TypedDict):
    title: str
    description: str
    progress_signal: str


GOAL: GoalArgs = {
    "title": "make 3 friends",
    "description": "three regulars",
    "progress_signal": "three",
}


def like(subject: str, *, did: str = OWNER_DID, handle: str = OWNER) -> NotificationContext:
    return NotificationContext(
        notification=Notification(
            uri=f"at://{did}/app.bsky.feed.like/{subject.rsplit('/', 1)[-1]}",
            cid="c",
            reason="like",
            author_did=did,
            author_handle=handle,
            text="",
            reason_subject=subject,
            is_read=False,
            indexed_at=WHEN,
        )
    )


def mention(uri: str, *, did: str = OWNER_DID, handle: str = OWNER) -> NotificationContext:
    return NotificationContext(
        notification=Notification(
            uri=uri,
            cid="c",
            reason="mention",
            author_did=did,
            author_handle=handle,
            text="@phi.test please",
            reason_subject=None,
            is_read=False,
            indexed_at=WHEN,
        )
    )


def deps_for(memory: Memory, client: FakeClient, *items: NotificationContext) -> PhiDeps:
    return PhiDeps(
        client=client,  # type: ignore[arg-type]
        memory=memory,
        blocks=None,  # type: ignore[arg-type]
        small=None,
        config=AgentConfig(owner_handle=OWNER),
        caches=PromptCaches(),
        batch=Batch(items=list(items)),
        now=WHEN,
    )


def network() -> FakeClient:
    return FakeClient(handles={OWNER: OWNER_DID})


async def asked(
    memory: Memory, client: FakeClient, *items: NotificationContext, discussed_in: str | None = None
) -> str:
    """Propose the goal in a batch of `items`: phi posts a request; its URI."""
    d = deps_for(memory, client, *items)
    answer = await propose_goal_change(run_context(d), **GOAL, discussed_in=discussed_in)
    assert str(answer).startswith("not approved yet: posted an authorization request")
    return f"at://{client.me.did}/app.bsky.feed.post/{len(client.posts)}"


async def approved_batch(
    memory: Memory, client: FakeClient, *items: NotificationContext
) -> PhiDeps:
    """Deps of a batch of `items` with the approvals they carry, as `build_batch` makes it."""
    d = deps_for(memory, client, *items)
    assert d.batch is not None
    d.batch.approvals = await gate.approvals_in(memory, list(items), OWNER)
    return d


async def test_approvals_in_finds_the_owners_like_on_a_pending_request(memory: Memory) -> None:
    client = network()
    request = await asked(memory, client)
    (found,) = await gate.approvals_in(memory, [like(request)], OWNER)
    assert found.request_uri == request
    assert found.action.tool == "propose_goal_change"
    assert await gate.approvals_in(memory, [like("at://phi/never-asked")], OWNER) == []
    assert await gate.approvals_in(memory, [like(request)], None) == []


async def test_two_likes_on_one_request_are_one_approval(memory: Memory) -> None:
    client = network()
    request = await asked(memory, client)
    twice = [like(request), like(request)]
    assert len(await gate.approvals_in(memory, twice, OWNER)) == 1


async def test_a_consumed_approval_is_gone_from_the_batch_and_from_later_batches(
    memory: Memory,
) -> None:
    client = network()
    request = await asked(memory, client)
    d = await approved_batch(memory, client, like(request))
    assert d.batch is not None
    (approval,) = d.batch.approvals
    await gate.consume(d, approval)
    assert d.batch.approvals == []
    # the same like seen again (a replayed or re-fetched notification) approves nothing
    assert await gate.approvals_in(memory, [like(request)], OWNER) == []


async def test_the_approval_passes_once_and_the_action_runs(memory: Memory) -> None:
    client = network()
    request = await asked(memory, client)
    d = await approved_batch(memory, client, like(request))
    answer = await propose_goal_change(run_context(d), **GOAL)
    assert str(answer).startswith("goal [")
    assert [r.title for r in client.records if isinstance(r, Goal)] == ["make 3 friends"]


async def test_two_identical_calls_in_one_response_spend_the_approval_once(
    memory: Memory,
) -> None:
    """The model answers with the same gated call twice; pydantic-ai runs them concurrently."""
    client = network()
    request = await asked(memory, client)
    d = await approved_batch(memory, client, like(request))
    results: list[str] = []

    async def twice(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        returns = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returns:
            results.extend(str(p.content) for p in returns)
            return ModelResponse(parts=[TextPart("done")])
        call = ToolCallPart(tool_name="propose_goal_change", args=dict(GOAL))
        return ModelResponse(parts=[call, ToolCallPart(tool_name=call.tool_name, args=dict(GOAL))])

    agent = Agent(
        FunctionModel(twice),
        deps_type=PhiDeps,
        toolsets=[
            toolset_for(AgentConfig(owner_handle=OWNER), only=frozenset({"propose_goal_change"}))
        ],
    )
    await agent.run("go", deps=d)
    assert len(results) == 2
    assert [r.title for r in client.records if isinstance(r, Goal)] == ["make 3 friends"]
    assert sum(r.startswith("goal [") for r in results) == 1


async def test_approved_labels_are_compared_as_lists_not_joined_text(memory: Memory) -> None:
    client = network()
    answer = await manage_labels(run_context(deps_for(memory, client)), ["a", "b"])
    assert str(answer).startswith("not approved yet")
    request = f"at://{client.me.did}/app.bsky.feed.post/{len(client.posts)}"
    d = await approved_batch(memory, client, like(request))
    await manage_labels(run_context(d), ["a,b"])
    assert client.labels == []
    assert len(d.batch.approvals if d.batch else []) == 1
    assert str(await manage_labels(run_context(d), ["b", "a"])).startswith("labels are now")
    assert client.labels == [["a", "b"]]


async def test_the_owner_is_known_by_did_when_their_handle_changes(memory: Memory) -> None:
    client = network()
    request = await asked(memory, client)
    renamed = like(request, handle="operator-renamed.test")
    d = await approved_batch(memory, client, renamed)
    assert str(await propose_goal_change(run_context(d), **GOAL)).startswith("goal [")


async def test_whoever_takes_the_owners_old_handle_approves_nothing(memory: Memory) -> None:
    client = network()
    request = await asked(memory, client)
    impostor = like(request, did="did:plc:impostor", handle=OWNER)
    assert await gate.approvals_in(memory, [impostor], OWNER) == []
    d = await approved_batch(memory, client, impostor)
    await propose_goal_change(run_context(d), **GOAL)
    assert client.records == []


async def test_an_approval_from_one_thread_does_not_pass_an_action_in_another(
    memory: Memory,
) -> None:
    client = network()
    thread_a = mention("at://did:plc:owner/app.bsky.feed.post/a")
    request = await asked(memory, client, thread_a, discussed_in=thread_a.notification.uri)
    assert client.posts[-1][1] == thread_a.notification.uri
    thread_b = mention("at://did:plc:owner/app.bsky.feed.post/b")
    d = await approved_batch(memory, client, like(request), thread_b)
    answer = await propose_goal_change(
        run_context(d), **GOAL, discussed_in=thread_b.notification.uri
    )
    assert client.records == []
    assert str(answer).startswith("not approved yet")
    assert client.posts[-1][1] == thread_b.notification.uri  # asked again, in thread B
