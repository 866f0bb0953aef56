"""The owner gate: like-as-approval, scoped to one action discussed in one thread.

A gated tool (goal changes, follows, labels, the mention-consent list) that is not approved
posts an authorization request that names the exact action and tags the owner. When the
owner likes that post, the next notification batch carries an `Approval` for exactly that
action, and the tool lets it through once, provided the batch holds nobody but the owner
(a stranger in the same batch could otherwise steer phi into acting on the approval).
Scheduled runs never pass: no one is there to approve.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from phi.agent.deps import Action, Approval, NotificationContext, PhiDeps, PhiPost
from phi.memory import Memory

__all__ = [
    "REQUEST_SCOPE",
    "GateVerdict",
    "approvals_in",
    "check",
    "consume",
    "gated",
    "request",
]

REQUEST_SCOPE: Final = "approval-request"
"""Learning-state scope of authorization requests, keyed by the request post's URI."""


@dataclass(frozen=True, kw_only=True)
class GateVerdict:
    """Whether a gated action may run now, and what to tell the model when not."""

    passes: bool
    reason: str
    approval: Approval | None = None


def _request_text(owner: str, action: Action, why: str) -> str:
    return (
        f"@{owner} authorization request: {action.describe()} ({why.strip()[:120]}). "
        "like this post to approve exactly this, once."
    )


async def request(deps: PhiDeps, action: Action, why: str, *, thread_uri: str | None) -> str:
    """Post an authorization request for `action` (a reply in `thread_uri`'s thread when
    given) and remember it; returns what to tell the model."""
    owner = deps.owner_handle
    if owner is None:
        return "refused: no owner is configured (PHI_OWNER_HANDLE), so gated actions never run"
    text = _request_text(owner, action, why)
    refs = await deps.client.post(text, reply_to=thread_uri)
    asked_in = deps.batch.item(thread_uri) if deps.batch and thread_uri else None
    root_uri = asked_in.thread_root if asked_in is not None else thread_uri or refs[0].uri
    await deps.memory.store.write_state(
        REQUEST_SCOPE,
        refs[0].uri,
        json.dumps(
            {
                "tool": action.tool,
                "args": [list(pair) for pair in action.args],
                "thread_root": root_uri,
                "status": "pending",
            }
        ),
        at=deps.now,
    )
    deps.activity.posts.append(
        PhiPost(uri=refs[0].uri, text=text, thread_root=root_uri, in_reply_to=thread_uri)
    )
    deps.wrote("self_awareness")
    deps.activity.record(f"asked @{owner} to approve {action.describe()}: {refs[0].uri}")
    return (
        f"not approved yet: posted an authorization request ({refs[0].uri}); "
        f"when @{owner} likes it, the action can run in the batch that brings the like"
    )


async def approvals_in(
    memory: Memory, items: list[NotificationContext], owner_handle: str | None
) -> list[Approval]:
    """The approvals a batch carries: the owner's likes on pending requests."""
    if owner_handle is None:
        return []
    owner = owner_handle.removeprefix("@").lower()
    found: list[Approval] = []
    for item in items:
        n = item.notification
        if n.reason != "like" or n.author_handle.lower() != owner or not n.reason_subject:
            continue
        entry = await memory.store.read_state(REQUEST_SCOPE, n.reason_subject)
        if entry is None:
            continue
        value = json.loads(entry.value)
        if value.get("status") != "pending":
            continue
        action = Action(tool=value["tool"], args=tuple((k, v) for k, v in value["args"]))
        found.append(
            Approval(action=action, request_uri=n.reason_subject, thread_root=value["thread_root"])
        )
    return found


def check(deps: PhiDeps, action: Action) -> GateVerdict:
    """Whether `action` may run in this run."""
    owner = deps.owner_handle
    if owner is None:
        return GateVerdict(
            passes=False, reason="no owner is configured, so gated actions never run"
        )
    if deps.entry != "notifications" or deps.batch is None:
        return GateVerdict(
            passes=False, reason=f"a {deps.entry} run never passes the owner gate; nobody approved"
        )
    others = sorted(
        {
            f"@{item.notification.author_handle}"
            for item in deps.batch.items
            if item.notification.author_handle.lower() not in (owner, deps.client.me.handle.lower())
        }
    )
    if others:
        return GateVerdict(
            passes=False,
            reason=f"refused: this batch also holds {', '.join(others)}; a gated action runs "
            f"only in a batch with nobody but @{owner}",
        )
    for approval in deps.batch.approvals:
        if approval.action == action:
            return GateVerdict(passes=True, reason="approved by the owner", approval=approval)
    return GateVerdict(passes=False, reason="not approved")


async def consume(deps: PhiDeps, approval: Approval) -> None:
    """Mark an approval used: one like approves one action, once."""
    entry = await deps.memory.store.read_state(REQUEST_SCOPE, approval.request_uri)
    if entry is None:
        return
    value = json.loads(entry.value)
    value["status"] = "used"
    await deps.memory.store.write_state(
        REQUEST_SCOPE, approval.request_uri, json.dumps(value), at=deps.now
    )
    if deps.batch is not None and approval in deps.batch.approvals:
        deps.batch.approvals.remove(approval)


async def gated(deps: PhiDeps, action: Action, why: str, *, thread_uri: str | None) -> GateVerdict:
    """Check `action`; when it is merely unapproved (not refused outright), ask the owner."""
    verdict = check(deps, action)
    if verdict.passes:
        assert verdict.approval is not None
        await consume(deps, verdict.approval)
        return verdict
    if verdict.reason != "not approved":
        return verdict
    return GateVerdict(passes=False, reason=await request(deps, action, why, thread_uri=thread_uri))
