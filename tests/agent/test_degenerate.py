"""phi on the local network never posts degenerate text, whatever the brain writes: an echo
of the post it answers, a loop or an empty reply is sent back once, then given up, and the
activity output says why."""

from __future__ import annotations

import pytest
from pydantic_ai import ToolCallPart

from phi.agent.outcomes import Refused
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox
from phi.llm.sampling import Answering, current_answering

from ._brain import Brain, call, mentions
from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]

GREETING = "@phi.test hi phi! i'm alice. what do you remember about me?"


async def test_an_echo_and_a_loop_are_never_posted(
    runtime: RuntimeFactory, alice: PhiClient, phi: PhiClient, sandbox: Sandbox
) -> None:
    async def degenerate_brain(prompt: str, step: int) -> list[ToolCallPart]:
        ((_, uri),) = mentions(prompt)
        match step:
            case 0:  # SmolLM2's answer in issue 16, word for word
                return [
                    call("reply_to", uri=uri, text="hi, i'm alice. what do you remember about me?")
                ]
            case 1:
                return [call("reply_to", uri=uri, text="i'm a cat. i'm a cat. i'm a cat.")]
            case 2:
                return [call("post", text="...")]
            case 3:
                return [call("post", text="…(10 posts) (1000000000…")]
        return []

    brain = Brain(degenerate_brain)
    # Other tests on this shared network post as phi too: compare with what was there.
    posted_before = [p.uri for p in await phi.list_own_posts(limit=20)]
    (opening,) = await alice.post(GREETING)
    await sandbox.wait_for_indexing()
    async with runtime(brain) as phi_runtime:
        report = await phi_runtime.tick()
    await sandbox.wait_for_indexing()
    assert report.replies == []
    assert brain.results == [
        "not posted: echo (86% of its word trigrams repeat the post it answers). "
        "write something of your own, in new words",
        str(Refused(refused='not posted: loop ("i\'m a cat" repeated 3 times)')),
        "not posted: empty (no words in '...'). write something of your own, in new words",
        str(Refused(refused="not posted: loop ('0' repeated 9 times)")),
    ]
    # The activity also shows each refused call with what the model was told; the guard's
    # own lines say what was not posted and why.
    refusals = [line for line in report.actions if " not posted (" in line]
    assert [line.split(" (")[0] for line in refusals] == [
        "reply_to not posted",
        "reply_to not posted",
        "post not posted",
        "post not posted",
    ]
    assert refusals[0].endswith(': "hi, i\'m alice. what do you remember about me?"')
    assert sum("asked again: not posted" in line for line in report.actions) == 2
    thread = await alice.get_thread(opening.uri)
    assert [p.author_handle for p in thread.posts] == ["alice.test"]
    assert [p.uri for p in await phi.list_own_posts(limit=20)] == posted_before


async def test_a_run_tells_the_brain_which_posts_it_answers(
    runtime: RuntimeFactory, alice: PhiClient, sandbox: Sandbox
) -> None:
    """The tiny model's sampling is biased against copying these (`phi.llm.sampling`)."""
    seen: list[Answering | None] = []

    async def listening_brain(prompt: str, step: int) -> list[ToolCallPart]:
        seen.append(current_answering())
        return []

    text = "@phi.test what do the crows in your street talk about?"
    await alice.post(text)
    await sandbox.wait_for_indexing()
    async with runtime(Brain(listening_brain)) as phi_runtime:
        await phi_runtime.tick()
    answering = seen[0]
    assert answering is not None
    assert text in answering.texts
    assert "alice" in answering.names
    assert current_answering() is None  # only for the run
