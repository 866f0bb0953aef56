"""The owner gate's decision and the batch-only URIs, as pure logic (the network tests in
test_gate.py show the same end to end)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

import pytest
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel

from phi.agent import (
    Action,
    AgentConfig,
    Approval,
    Batch,
    NotificationContext,
    PhiDeps,
    PromptCaches,
    gate,
)
from phi.agent.core import CORE_TOOLS, toolset_for
from phi.agent.deps import PhiPost
from phi.agent.outcomes import Refused
from phi.agent.prompt.batch import notifications_block
from phi.atproto import Identity, Notification, PostRef

OWNER = "phi-operator.test"
WHEN = datetime(2026, 11, 23, 12, tzinfo=UTC)
GOAL = Action.of("propose_goal_change", title="make 3 friends", rkey="", remove=False)


def notification(
    author: str, reason: str = "mention", *, uri: str | None = None, subject: str | None = None
) -> Notification:
    return Notification(
        uri=uri or f"at://did:plc:{author}/app.bsky.feed.post/{reason}",
        cid="cid",
        reason=reason,
        author_did=f"did:plc:{author.split('.')[0].replace('-', '')}",
        author_handle=author,
        text=f"{reason} by {author}",
        reason_subject=subject,
        is_read=False,
        indexed_at=WHEN,
    )


def deps(
    *items: Notification, approvals: list[Approval] | None = None, entry: Any = None
) -> PhiDeps:
    client = SimpleNamespace(me=Identity(did="did:plc:phi", handle="phi.test"))
    batch = Batch(
        items=[NotificationContext(notification=n) for n in items], approvals=approvals or []
    )
    return PhiDeps(
        client=cast(Any, client),
        memory=cast(Any, None),
        blocks=cast(Any, None),
        small=None,
        config=AgentConfig(owner_handle=OWNER),
        caches=PromptCaches(),
        entry=entry or "notifications",
        batch=None if entry not in (None, "notifications") else batch,
        now=WHEN,
    )


def approval(action: Action = GOAL) -> Approval:
    return Approval(
        action=action,
        request_uri="at://phi/request",
        thread_root="at://root",
        owner_did="did:plc:phioperator",
    )


def test_an_approved_action_passes_in_an_owner_only_batch() -> None:
    like = notification(OWNER, "like", subject="at://phi/request")
    assert gate.check(deps(like, approvals=[approval()]), GOAL) == approval()


def test_an_approval_covers_only_the_exact_action() -> None:
    like = notification(OWNER, "like", subject="at://phi/request")
    other = Action.of("propose_goal_change", title="make 300 friends", rkey="", remove=False)
    assert gate.check(deps(like, approvals=[approval()]), other) is None


def test_anyone_else_in_the_batch_refuses_the_action() -> None:
    like = notification(OWNER, "like", subject="at://phi/request")
    verdict = gate.check(deps(like, notification("alice.test"), approvals=[approval()]), GOAL)
    assert isinstance(verdict, Refused)
    assert verdict.refused.startswith("this batch also holds @alice.test")


@pytest.mark.parametrize("entry", ["musing", "reflection", "service_check"])
def test_scheduled_runs_never_pass(entry: str) -> None:
    verdict = gate.check(deps(entry=entry), GOAL)
    assert isinstance(verdict, Refused) and "never passes the owner gate" in verdict.refused


def test_without_an_owner_nothing_passes() -> None:
    d = deps(notification(OWNER), approvals=[approval()])
    d.config = AgentConfig(owner_handle=None)
    assert gate.check(d, GOAL) == Refused(
        refused="no owner is configured, so gated actions never run"
    )


def test_actions_are_named_by_tool_and_sorted_arguments() -> None:
    assert Action.of("f", b=2, a="x") == Action.of("f", a="x", b=2)
    assert Action.of("f", a=1).describe() == "f(a='1')"
    assert Action.of("f", a=["x", "y"]).describe() == "f(a=['x', 'y'])"
    assert Action.of("f", a=["a", "b"]) != Action.of("f", a=["a,b"])


def test_notifications_are_grouped_by_thread_with_quoted_uris_and_approvals() -> None:
    root = PostRef(uri="at://alice/root", cid="c")
    first = notification("alice.test", uri="at://alice/root")
    reply = Notification(**{**first.__dict__, "uri": "at://alice/2", "reply_root": root})
    like = notification(OWNER, "like", subject="at://phi/request")
    text = notifications_block(deps(first, reply, like, approvals=[approval()]))
    assert text.splitlines()[:6] == [
        "[NEW NOTIFICATIONS — 3 in 1 thread(s)]",
        "thread at://alice/root:",
        '  → mention from @alice.test: "mention by alice.test"',
        '    uri: "at://alice/root"',
        '  → mention from @alice.test: "mention by alice.test"',
        '    uri: "at://alice/2"',
    ]
    assert f"- @{OWNER} liked" not in text  # phi's post was not fetched: shown as plain activity
    assert "[OWNER APPROVAL] @phi-operator.test liked your authorization request" in text


@pytest.mark.anyio
async def test_batch_tools_offer_only_the_batch_uris_and_vanish_without_a_batch() -> None:
    in_batch = deps(notification("alice.test", uri="at://alice/1"))
    tools = [t for t in await _tool_defs(in_batch) if t.name == "reply_to"]
    assert tools[0].parameters_json_schema["properties"]["uri"]["enum"] == ["at://alice/1"]
    musing = await _tool_defs(deps(entry="musing"))
    names = {t.name for t in musing}
    assert {"reply_to", "like_post", "repost_post"}.isdisjoint(names)
    assert {"post", "recall", "observe"} <= names


@pytest.mark.anyio
async def test_a_narrowed_tool_set_answers_who_spoke_to_phi_before_anything_else() -> None:
    mention = notification("alice.test", uri="at://alice/1")
    like = notification("bob.test", "like", uri="at://bob/like", subject="at://phi/post")
    d = deps(mention, like)
    tiny = {t.name: t for t in await _tool_defs(d, only=CORE_TOOLS, answer_first=True)}
    assert sorted(tiny) == ["reply_to"]
    assert tiny["reply_to"].parameters_json_schema["properties"]["uri"]["enum"] == ["at://alice/1"]
    # Once alice has her answer, the rest is on offer again.
    d.activity.posts.append(
        PhiPost(
            uri="at://phi/reply", text="hi", thread_root="at://alice/1", in_reply_to="at://alice/1"
        )
    )
    assert "like_post" in {t.name for t in await _tool_defs(d, only=CORE_TOOLS, answer_first=True)}
    # A model that chooses well keeps every tool.
    assert "like_post" in {t.name for t in await _tool_defs(deps(mention, like), only=CORE_TOOLS)}


async def _tool_defs(
    d: PhiDeps, *, only: frozenset[str] | None = None, answer_first: bool = False
) -> list[Any]:
    """The tool definitions the model would see in a run with deps `d`."""
    ctx = RunContext[PhiDeps](deps=d, model=TestModel(), usage=cast(Any, None))
    toolset = toolset_for(AgentConfig(), only=only, answer_first=answer_first)
    found = await toolset.get_tools(ctx)
    return [tool.tool_def for tool in found.values()]
