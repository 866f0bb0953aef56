"""Everyone in the thread, on the local network: the thread's other participants get their
memory shown, strangers' background is looked up once and written as lowest-trust research
with its sources, a preview writes nothing, and the run lands in the journal."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic_ai import ToolCallPart

from phi.agent.context import MAX_PARTICIPANTS, thread_participants
from phi.agent.deps import NotificationContext
from phi.atproto import Notification, PhiClient, Post, Profile, Thread
from phi.atproto.sandbox import Sandbox
from phi.memory import user_namespace
from phi.runtime.journal import RunJournal

from ._brain import Brain, call, mentions
from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]


async def test_threadthread_participants_are_researched_once_and_shown(
    runtime: RuntimeFactory,
    alice: PhiClient,
    bob: PhiClient,
    operator: PhiClient,
    sandbox: Sandbox,
    tmp_path: Path,
) -> None:
    async def answer_alice(prompt: str, step: int) -> list[ToolCallPart]:
        if step > 0:
            return []
        return [
            call("reply_to", uri=uri, text="kingfishers do nest in banks")
            for handle, uri in mentions(prompt)
            if handle == "alice.test"
        ]

    await bob.post("kingfishers dig their nests into riverbanks, wild")
    (root,) = await bob.post("kingfisher thread: where do they nest?")
    await sandbox.wait_for_indexing()
    (middle,) = await operator.post("in sandy banks, I think", reply_to=root.uri)
    await sandbox.wait_for_indexing()
    await alice.post("@phi.test is that right about kingfishers?", reply_to=middle.uri)
    await sandbox.wait_for_indexing()

    brain = Brain(answer_alice)
    async with runtime(brain) as phi_runtime:
        phi_runtime.journal = RunJournal(path=tmp_path / "runs.db")
        memory = phi_runtime.memory
        bob_ns = user_namespace(bob.me.did)

        preview = await phi_runtime.preview()
        assert "[FIRST INTERACTION WITH @alice.test]" in preview
        assert await memory.namespaces(prefix=bob_ns) == []  # a preview writes nothing

        looked_up: list[str] = []
        get_profile = phi_runtime.client.get_profile

        async def counting(actor: str) -> Profile:
            looked_up.append(actor)
            return await get_profile(actor)

        phi_runtime.client.get_profile = counting  # type: ignore[method-assign]
        report = await phi_runtime.tick()
        assert [r.to_handle for r in report.replies] == ["alice.test"]
        assert {alice.me.did, bob.me.did, operator.me.did} <= set(looked_up)

        # bob and the operator only took part in the thread; their research reaches the prompt.
        prompt = brain.prompts[-1]
        assert "[BACKGROUND RESEARCH ON @bob.test — public activity, trust lowest]" in prompt
        assert "[BACKGROUND RESEARCH ON @phi-operator.test" in prompt
        assert "[FIRST INTERACTION WITH @alice.test]" in prompt
        assert "[FIRST INTERACTION WITH @bob.test]" not in prompt  # overheard, not talking

        (note,) = [r async for r in memory.export(namespace=bob_ns)]
        assert (note.kind, note.trust, note.author) == ("exploration_note", "lowest", bob.me.did)
        assert f"at://{bob.me.did}/app.bsky.actor.profile/self" in note.source_uris
        assert root.uri in note.source_uris
        assert "kingfishers dig their nests" in note.content

        # Next time they are known: nobody is looked up again.
        looked_up.clear()
        await alice.post("@phi.test and where do they fish?", reply_to=middle.uri)
        await sandbox.wait_for_indexing()
        await phi_runtime.tick()
        assert looked_up == []
        assert len([r async for r in memory.export(namespace=bob_ns)]) == 1

        runs = await phi_runtime.journal.recent()
    assert [r.entry for r in runs] == ["notifications", "notifications"]
    first = runs[-1]
    assert first.system_prompt == brain.prompts[0]
    assert [c.tool for c in first.tool_calls] == ["reply_to"]
    assert first.tool_calls[0].result.startswith("replied: at://")
    assert first.outcome == "ok"


def _post(n: int, did: str) -> Post:
    return Post(
        uri=f"at://{did}/app.bsky.feed.post/{n}",
        cid="c",
        author_did=did,
        author_handle=f"{did.rsplit(':', 1)[-1]}.test",
        text=f"post {n}",
        created_at=datetime(2026, 11, 1, tzinfo=UTC),
    )


async def test_participants_are_capped_nearest_first_without_authors_or_phi() -> None:
    dids = [f"did:plc:p{n}" for n in range(8)]
    posts = [_post(n, did) for n, did in enumerate(["did:plc:phi", "did:plc:author", *dids])]
    notification = Notification(
        uri=posts[-1].uri,
        cid="c",
        author_did="did:plc:author",
        author_handle="author.test",
        reason="reply",
        text="post",
        reason_subject=None,
        is_read=False,
        indexed_at=datetime(2026, 11, 1, tzinfo=UTC),
    )
    item = NotificationContext(
        notification=notification, post=posts[-1], thread=Thread(focus=posts[-1].uri, posts=posts)
    )
    found = thread_participants(
        [item], exclude={"did:plc:author", "did:plc:phi"}, cap=MAX_PARTICIPANTS
    )
    assert list(found) == dids[::-1][:MAX_PARTICIPANTS]
    assert found["did:plc:p7"] == "p7.test"
