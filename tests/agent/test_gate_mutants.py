"""The owner gate as the owner and phi's memory see it: the exact request phi posts and what it
keeps of it, which likes in a batch approve (a like passed over never hides a later one), an
approval spent once and marked used, and the refusals' exact words. Over a real memory store;
test_gate_logic.py has the decision as pure logic, test_gate_approvals.py the tools end to end.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

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
from phi.agent.deps import PhiPost
from phi.agent.outcomes import Refused
from phi.atproto import Notification, PostRef
from phi.memory import Memory

from ._network import PHI, FakeClient
from .test_gate_approvals import OWNER_DID, like, mention
from .test_gate_logic import OWNER, WHEN

pytestmark = pytest.mark.anyio

LABELS = Action.of("manage_labels", labels=["a", "b"])
SHOWN = "manage_labels(labels=['a', 'b'])"
"""How `LABELS` reads in the request and the activity stream."""


def deps_for(
    memory: Memory | None,
    *items: NotificationContext,
    client: FakeClient | None = None,
    entry: Any = "notifications",
    batch: bool = True,
) -> PhiDeps:
    return PhiDeps(
        client=client or FakeClient(handles={OWNER: OWNER_DID}),  # type: ignore[arg-type]
        memory=memory,  # type: ignore[arg-type]
        blocks=None,  # type: ignore[arg-type]
        small=None,
        config=AgentConfig(owner_handle=OWNER),
        caches=PromptCaches(),
        entry=entry,
        batch=Batch(items=list(items)) if batch else None,
        now=WHEN,
    )


def post_uri(number: int) -> str:
    """The URI `FakeClient` gives phi's `number`th post."""
    return f"at://{PHI.did}/app.bsky.feed.post/{number}"


async def test_the_request_is_exactly_what_the_owner_reads_and_what_phi_keeps(
    memory: Memory,
) -> None:
    d = deps_for(memory)
    client: FakeClient = d.client  # type: ignore[assignment]
    said = await gate.request(d, LABELS, "  " + "w" * 130 + "  ", thread_uri=None)

    text = (
        f"@{OWNER} authorization request: {SHOWN} ({'w' * 120}). "
        "like this post to approve exactly this, once."
    )
    uri = post_uri(1)
    assert client.posts == [(text, None)]
    assert said == (
        f"not approved yet: posted an authorization request ({uri}); "
        f"when @{OWNER} likes it, the action can run in the batch that brings the like"
    )
    # Not in a thread: the request is its own thread.
    assert d.activity.posts == [PhiPost(uri=uri, text=text, thread_root=uri, in_reply_to=None)]
    assert d.activity.actions == [f"asked @{OWNER} to approve {SHOWN}: {uri}"]
    entry = await memory.state.read(gate.REQUEST_SCOPE, uri)
    assert entry is not None
    assert (entry.version, entry.written_at) == (1, WHEN)
    assert json.loads(entry.value) == {
        "tool": "manage_labels",
        "args": [["labels", ["a", "b"]]],
        "thread_root": uri,
        "owner_did": OWNER_DID,
        "status": "pending",
    }


async def test_a_request_belongs_to_the_thread_it_was_asked_in(memory: Memory) -> None:
    root = PostRef(uri="at://did:plc:owner/app.bsky.feed.post/root", cid="c")
    reply = mention("at://did:plc:owner/app.bsky.feed.post/reply")
    reply = NotificationContext(
        notification=Notification(**{**reply.notification.__dict__, "reply_root": root})
    )
    elsewhere = "at://did:plc:owner/app.bsky.feed.post/not-in-this-batch"
    cases = [
        # a reply in the batch: its thread's root
        (deps_for(memory, reply), reply.notification.uri, root.uri),
        # a post the batch does not hold: that post
        (deps_for(memory, reply), elsewhere, elsewhere),
        # no batch at all (a direct call): that post too
        (deps_for(memory, batch=False), elsewhere, elsewhere),
    ]
    for d, thread_uri, thread_root in cases:
        await gate.request(d, LABELS, "why", thread_uri=thread_uri)
        client: FakeClient = d.client  # type: ignore[assignment]
        assert client.posts[-1][1] == thread_uri
        (posted,) = d.activity.posts
        assert (posted.uri, posted.thread_root, posted.in_reply_to) == (
            post_uri(1),
            thread_root,
            thread_uri,
        )
        # The stored root is what a later like's approval is matched against (test_gate_logic).
        entry = await memory.state.read(gate.REQUEST_SCOPE, post_uri(1))
        assert entry is not None
        assert json.loads(entry.value)["thread_root"] == thread_root


async def test_posting_a_request_refreshes_phis_view_of_itself(memory: Memory) -> None:
    """The self-awareness block lists phi's own recent posts: the request must show next turn."""
    d = deps_for(memory)
    renders: list[str] = []

    async def render() -> str:
        renders.append("rendered")
        return "phi's recent posts"

    async def self_awareness() -> str:
        return await d.caches.get("self_awareness", now=WHEN, ttl=timedelta(hours=1), render=render)

    await self_awareness()
    await self_awareness()
    assert len(renders) == 1
    await gate.request(d, LABELS, "why", thread_uri=None)
    await self_awareness()
    assert len(renders) == 2


async def stored_request(memory: Memory, uri: str, **value: object) -> str:
    """A request as some version of phi (or a damaged store) left it."""
    entry = {
        "tool": "manage_labels",
        "args": [["labels", ["a", "b"]]],
        "thread_root": "at://root",
        "owner_did": OWNER_DID,
        "status": "pending",
    }
    await memory.state.write(gate.REQUEST_SCOPE, uri, json.dumps({**entry, **value}), at=WHEN)
    return uri


def reposted(subject: str) -> NotificationContext:
    item = like(subject)
    return NotificationContext(
        notification=Notification(**{**item.notification.__dict__, "reason": "repost"})
    )


def without_subject(item: NotificationContext) -> NotificationContext:
    return NotificationContext(
        notification=Notification(**{**item.notification.__dict__, "reason_subject": None})
    )


async def test_only_the_owners_like_on_a_pending_well_formed_request_approves(
    memory: Memory,
) -> None:
    """Every like the gate passes over comes before the one that approves: passing over one
    must not end the search (nor crash it) for the rest of the batch."""
    good = await stored_request(memory, "at://phi/good", thread_root="at://thread-of-good")
    spent = await stored_request(memory, "at://phi/spent", status="used")
    odd = [
        await stored_request(memory, "at://phi/args-text", args="labels=a,b"),
        await stored_request(memory, "at://phi/pair-of-three", args=[["labels", "a", "b"]]),
        await stored_request(memory, "at://phi/pair-of-one", args=[["labels"]]),
        await stored_request(memory, "at://phi/unnamed-pair", args=[[7, "a"]]),
        await stored_request(memory, "at://phi/value-number", args=[["labels", 5]]),
        await stored_request(memory, "at://phi/value-mixed", args=[["labels", ["a", 5]]]),
        await stored_request(memory, "at://phi/value-object", args=[["labels", {"a": "b"}]]),
        await stored_request(memory, "at://phi/tool-number", tool=7),
        await stored_request(memory, "at://phi/no-tool", tool=None),
    ]
    await memory.state.write(gate.REQUEST_SCOPE, "at://phi/not-json-object", "[1, 2]", at=WHEN)
    batch = [
        mention("at://did:plc:owner/app.bsky.feed.post/hello"),
        without_subject(like(good)),
        reposted(good),  # a repost is no approval, even of a request
        like("at://phi/never-asked"),
        like(spent),
        like(good, did="did:plc:impostor"),
        like("at://phi/not-json-object"),
        *(like(uri) for uri in odd),
        like(good),
        like(good),  # liked twice: still one approval
    ]
    assert await gate.approvals_in(memory, batch, OWNER) == [
        Approval(
            action=LABELS,
            request_uri=good,
            thread_root="at://thread-of-good",
            owner_did=OWNER_DID,
        )
    ]


async def test_an_approval_is_spent_once_and_marked_used_when_spent(memory: Memory) -> None:
    request = await stored_request(memory, "at://phi/request")
    d = deps_for(memory, like(request))
    assert d.batch is not None
    d.batch.approvals = await gate.approvals_in(memory, d.batch.items, OWNER)
    (approval,) = d.batch.approvals
    d.now = WHEN + timedelta(minutes=5)
    assert await gate.consume(d, approval) is True
    assert await gate.consume(d, approval) is False
    entry = await memory.state.read(gate.REQUEST_SCOPE, request)
    assert entry is not None
    assert (entry.version, entry.written_at) == (2, WHEN + timedelta(minutes=5))
    assert json.loads(entry.value) == {
        "tool": "manage_labels",
        "args": [["labels", ["a", "b"]]],
        "thread_root": "at://root",
        "owner_did": OWNER_DID,
        "status": "used",
    }
    assert await gate.consume(deps_for(memory, batch=False), approval) is False


def test_a_batch_with_others_is_refused_naming_each_of_them() -> None:
    """Without an approval too: asking the owner makes no sense while strangers listen."""
    d = deps_for(
        None,
        mention("at://a/1", did="did:plc:bob", handle="bob.test"),
        mention("at://a/2", did="did:plc:alice", handle="alice.test"),
        mention("at://a/3"),
    )
    assert gate.check(d, LABELS) == Refused(
        refused="this batch also holds @alice.test, @bob.test; a gated action runs only in "
        f"a batch with nobody but @{OWNER}"
    )
    assert gate.check(deps_for(None, mention("at://a/3")), LABELS) is None


@pytest.mark.parametrize(
    ("entry", "batch"), [("musing", True), ("notifications", False), ("reflection", False)]
)
def test_only_a_notification_batch_can_pass_the_gate(entry: str, batch: bool) -> None:
    d = deps_for(None, like("at://phi/request"), entry=entry, batch=batch)
    if d.batch is not None:
        d.batch.approvals = [
            Approval(
                action=LABELS,
                request_uri="at://phi/request",
                thread_root="at://root",
                owner_did=OWNER_DID,
            )
        ]
    assert gate.check(d, LABELS) == Refused(
        refused=f"a {entry} run never passes the owner gate; nobody approved"
    )
