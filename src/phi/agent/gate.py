"""The owner gate: like-as-approval, scoped to one action discussed in one thread.

A gated tool (goal changes, follows, labels, the mention-consent list) that is not approved
posts an authorization request that names the exact action and tags the owner, and pins the
owner's DID to it. When the account with that DID likes the request, the next notification
batch carries an `Approval` for exactly that action (arguments compared as values, lists as
lists), and the tool lets it through once, provided:

- the action is discussed in the thread the request was made in (or no other thread is
  named), so an approval from one conversation cannot pass an action in another;
- the batch holds nobody but the owner (a stranger in the same batch could otherwise steer
  phi into acting on the approval).

The approval is taken out of the batch before the first `await`, so two identical calls in
one model response (pydantic-ai runs them concurrently) cannot both spend it. Scheduled
runs never pass: no one is there to approve.
"""

from __future__ import annotations

import json
from typing import Final

from phi.agent.deps import Action, ActionValue, Approval, NotificationContext, PhiDeps, PhiPost
from phi.agent.outcomes import Refused
from phi.memory import Memory

__all__ = [
    "REQUEST_SCOPE",
    "approvals_in",
    "check",
    "consume",
    "gated",
    "request",
]

REQUEST_SCOPE: Final = "approval-request"
"""Learning-state scope of authorization requests, keyed by the request post's URI."""


def _request_text(owner: str, action: Action, why: str) -> str:
    return (
        f"@{owner} authorization request: {action.describe()} ({why.strip()[:120]}). "
        "like this post to approve exactly this, once."
    )


def _args_to_json(action: Action) -> list[list[object]]:
    return [[k, list(v) if isinstance(v, tuple) else v] for k, v in action.args]


def _args_from_json(raw: object) -> tuple[tuple[str, ActionValue], ...] | None:
    """The stored arguments, or None when they are not (name, text or list of text) pairs."""
    if not isinstance(raw, list):
        return None
    args: list[tuple[str, ActionValue]] = []
    for pair in raw:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            return None
        name, value = pair
        if isinstance(value, str):
            args.append((name, value))
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            args.append((name, tuple(value)))
        else:
            return None
    return tuple(args)


def _thread_root(deps: PhiDeps, thread_uri: str | None) -> str | None:
    """The root of the batch thread `thread_uri` belongs to, if it is a batch post."""
    item = deps.batch.item(thread_uri) if deps.batch is not None and thread_uri else None
    return item.thread_root if item is not None else None


async def request(deps: PhiDeps, action: Action, why: str, *, thread_uri: str | None) -> str:
    """Post an authorization request for `action` (a reply in `thread_uri`'s thread when
    given) and remember it with the owner's DID; returns what to tell the model."""
    owner = deps.owner_handle
    assert owner is not None, "check() refuses gated actions when no owner is configured"
    # Resolved before posting: the request belongs to the account that holds the handle
    # now, and only that account's like approves it, whatever its handle becomes later.
    owner_did = await deps.client.resolve_handle(owner)
    text = _request_text(owner, action, why)
    refs = await deps.client.post(text, reply_to=thread_uri)
    root_uri = _thread_root(deps, thread_uri) or thread_uri or refs[0].uri
    await deps.memory.state.write(
        REQUEST_SCOPE,
        refs[0].uri,
        json.dumps(
            {
                "tool": action.tool,
                "args": _args_to_json(action),
                "thread_root": root_uri,
                "owner_did": owner_did,
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
    """The approvals a batch carries: likes on pending requests from the DID each request
    was made to (the like's handle plays no part), one per request."""
    if owner_handle is None:
        return []
    found: dict[str, Approval] = {}
    for item in items:
        n = item.notification
        if n.reason != "like" or not n.reason_subject or n.reason_subject in found:
            continue
        entry = await memory.state.read(REQUEST_SCOPE, n.reason_subject)
        if entry is None:
            continue
        value = json.loads(entry.value)
        if not isinstance(value, dict) or value.get("status") != "pending":
            continue
        # Requests stored before the owner's DID was pinned have none: they approve nothing.
        if value.get("owner_did") != n.author_did:
            continue
        args = _args_from_json(value.get("args"))
        if args is None or not isinstance(value.get("tool"), str):
            continue
        found[n.reason_subject] = Approval(
            action=Action(tool=value["tool"], args=args),
            request_uri=n.reason_subject,
            thread_root=str(value["thread_root"]),
            owner_did=n.author_did,
        )
    return list(found.values())


def _others(deps: PhiDeps, owner_dids: set[str], owner_handle: str | None) -> list[str]:
    """Handles of the batch's authors other than phi and the owner."""
    assert deps.batch is not None
    return sorted(
        {
            f"@{n.author_handle}"
            for n in (item.notification for item in deps.batch.items)
            if n.author_did != deps.client.me.did
            and n.author_did not in owner_dids
            and n.author_handle.lower() != owner_handle
        }
    )


def check(
    deps: PhiDeps, action: Action, *, thread_root: str | None = None
) -> Approval | Refused | None:
    """The approval that lets `action` run now (discussed in `thread_root`'s thread, when
    given), a refusal, or None when it is merely not approved yet (asking makes sense)."""
    owner = deps.owner_handle
    if owner is None:
        return Refused(refused="no owner is configured, so gated actions never run")
    if deps.entry != "notifications" or deps.batch is None:
        return Refused(refused=f"a {deps.entry} run never passes the owner gate; nobody approved")
    approvals = deps.batch.approvals
    approval = next(
        (a for a in approvals if a.action == action and thread_root in (None, a.thread_root)),
        None,
    )
    if approval is not None:
        # Passing is decided by DID alone: whoever holds the owner's handle now does not count.
        others = _others(deps, {approval.owner_did}, None)
    else:
        # Nothing passes here; the handle only decides whether asking the owner makes sense.
        others = _others(deps, {a.owner_did for a in approvals}, owner)
    if others:
        return Refused(
            refused=f"this batch also holds {', '.join(others)}; a gated action runs only in "
            f"a batch with nobody but @{owner}"
        )
    return approval


async def consume(deps: PhiDeps, approval: Approval) -> bool:
    """Spend `approval`: one like approves one action, once. False when it was already
    spent (by another call in this run); True once it is marked used in memory too."""
    if deps.batch is None or approval not in deps.batch.approvals:
        return False
    # Taken out before the first await: a concurrent identical call checks after this.
    deps.batch.approvals.remove(approval)
    entry = await deps.memory.state.read(REQUEST_SCOPE, approval.request_uri)
    if entry is not None:
        value = json.loads(entry.value)
        value["status"] = "used"
        await deps.memory.state.write(
            REQUEST_SCOPE, approval.request_uri, json.dumps(value), at=deps.now
        )
    return True


async def gated(
    deps: PhiDeps, action: Action, why: str, *, thread_uri: str | None
) -> Approval | Refused | str:
    """The spent approval when `action` may run now (act on it); otherwise a refusal, or
    what to tell the model after asking the owner (a request posted in `thread_uri`)."""
    verdict = check(deps, action, thread_root=_thread_root(deps, thread_uri))
    if isinstance(verdict, Refused):
        return verdict
    if verdict is not None and await consume(deps, verdict):
        return verdict
    return await request(deps, action, why, thread_uri=thread_uri)
