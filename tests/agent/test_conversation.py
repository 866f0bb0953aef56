"""phi on the local network, end to end, with a scripted brain: replies in the right thread,
remembers the exchange, and sees it in the next batch's prompt."""

from __future__ import annotations

import pytest
from pydantic_ai import ToolCallPart

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox
from phi.memory import user_namespace

from ._brain import Brain, call, mentions
from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]


async def test_mention_reply_memory_and_past_exchanges(
    runtime: RuntimeFactory, phi: PhiClient, alice: PhiClient, sandbox: Sandbox
) -> None:
    async def reply_to_alice(prompt: str, step: int) -> list[ToolCallPart]:
        if step > 0:
            return []
        return [
            call("reply_to", uri=uri, text=f"hello @{handle}, try dawn walks by the river")
            for handle, uri in mentions(prompt)
            if handle == "alice.test"
        ]

    brain = Brain(reply_to_alice)
    (opening,) = await alice.post("@phi.test hi phi! any tips for birdwatching?")
    await sandbox.wait_for_indexing()
    async with runtime(brain) as phi_runtime:
        report = await phi_runtime.tick()
        assert [n.author_handle for n in report.admitted] == ["alice.test"]
        (reply,) = report.replies
        assert brain.results == [f"replied: {reply.uri}"]
        await sandbox.wait_for_indexing()

        thread = await alice.get_thread(opening.uri)
        answer = next(p for p in thread.posts if p.uri == reply.uri)
        assert answer.author_handle == "phi.test"
        assert answer.reply_parent is not None and answer.reply_parent.uri == opening.uri
        assert answer.reply_root is not None and answer.reply_root.uri == opening.uri

        alice_ns = user_namespace(alice.me.did)
        (stored,) = await phi_runtime.memory.search(
            "birdwatching tips", namespace=alice_ns, kinds=["interaction"]
        )
        assert stored.row.content == (
            "@alice.test: @phi.test hi phi! any tips for birdwatching?\n"
            "@phi.test: hello @alice.test, try dawn walks by the river"
        )
        assert set(stored.row.source_uris) == {opening.uri, reply.uri}
        background = [
            row
            for row in await phi_runtime.memory.recent(namespace=alice_ns)
            if row.kind == "exploration_note"
        ]
        assert background and all("tips for birdwatching" not in r.content for r in background)
        assert stored.row.author == alice.me.did

        (follow_up,) = await alice.reply("thanks! and owls?", to=reply.uri)
        await sandbox.wait_for_indexing()
        second = await phi_runtime.tick()
        assert [n.uri for n in second.admitted] == [follow_up.uri]

    next_prompt = brain.prompts[-1]
    assert "[PAST EXCHANGES WITH @alice.test — verbatim, trust high]" in next_prompt
    assert "try dawn walks by the river" in next_prompt
    assert "[FIRST INTERACTION WITH @alice.test]" not in next_prompt
    assert "[FIRST INTERACTION WITH @alice.test]" in brain.prompts[0]
    # Her recent posts there leave out the one phi answers (shown above it already): a
    # small model copies whatever it sees twice.
    first_interaction = brain.prompts[0].split("[FIRST INTERACTION WITH @alice.test]")[1]
    assert "any tips for birdwatching" not in first_interaction
    # phi answered in the thread it was asked in: the follow-up hangs under phi's reply
    assert any(uri == follow_up.uri for _, uri in mentions(next_prompt))
    assert (await phi.list_notifications()).notifications[0].is_read


async def test_non_consenting_handle_is_not_linked(
    runtime: RuntimeFactory, alice: PhiClient, bob: PhiClient, sandbox: Sandbox
) -> None:
    async def introduce_bob(prompt: str, step: int) -> list[ToolCallPart]:
        if step > 0:
            return []
        return [
            call("reply_to", uri=uri, text="@alice.test you might like @bob.test's boats")
            for _, uri in mentions(prompt)
        ]

    await alice.post("@phi.test who should i talk to about boats?")
    await sandbox.wait_for_indexing()
    async with runtime(Brain(introduce_bob)) as phi_runtime:
        report = await phi_runtime.tick()
        (reply,) = report.replies
        await sandbox.wait_for_indexing()
        written = await phi_runtime.client.get_post(reply.uri)
    linked = {f.value for f in written.facets if f.kind == "mention"}
    assert linked == {alice.me.did}  # alice is in the conversation; bob never agreed
    assert bob.me.did not in linked
    assert "@bob.test" in written.text  # the handle stays, as plain text


async def test_thirty_first_notification_in_an_hour_is_dropped(
    runtime: RuntimeFactory, bob: PhiClient, sandbox: Sandbox
) -> None:
    async def stay_silent(prompt: str, step: int) -> list[ToolCallPart]:
        return []

    for n in range(31):
        await bob.post(f"@phi.test ping {n}")
    await sandbox.wait_for_indexing()
    async with runtime(Brain(stay_silent)) as phi_runtime:
        report = await phi_runtime.tick()
    assert len(report.admitted) == 30
    ((dropped, reason),) = report.dropped
    assert reason == "rate limit: 30/hour from @bob.test"
    assert dropped.text == "@phi.test ping 30"  # the latest one
    assert {n.author_handle for n in report.admitted} == {"bob.test"}
