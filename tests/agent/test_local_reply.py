"""The air-gapped brain can talk: on the local network, the real SmolLM2 (phi's local brain,
in-process through llama.cpp) answers alice's greeting with a reply that passes the
degenerate-text guard and is posted in her thread.

The other local-model tests (`test_local_brain.py`, the CLI's sandbox run) also accept the
guard refusing what the tiny model wrote, which is right for an open question; so a brain
that never managed to post passed them all (issue 24). This one requires the post.

Deterministic by construction, not by luck. The model decides at temperature 0 (greedy, no
sampling) with phi's fixed seed for any retry the guard asks for, the clock is fixed and
phi's memory is fresh, so the prompt alone decides the reply, and the test pins the prompt:
- alice's recent posts are shown to the model and would be whatever other tests of the
  session last posted as her (one of those, "hello phi! what is your favourite bird?", led
  the model into "hi, hello, hello, hello!"). So she first sends the same greeting four
  times (phi has read them, and leaves out of her background what the batch already says):
  her background is her profile alone, whatever ran before;
- what still varies is her DID (a new network per session), the post's record key and her
  post and follower counts; the greeting is one the tiny model answers in the shape of the
  compact prompt's first example ("hi sam, nice to meet you! this is our first talk ..."),
  sharing none of its words, so the bias against echoes leaves them free.
Replayed with 24 random DIDs, record keys and counts, its first, greedy decision was a reply
the guard passes every time; "how are you today?" was refused as a loop most of the time.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic_ai import models

from phi.agent import CORE_TOOLS
from phi.agent.guard import degenerate
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox
from phi.llm import GrammarToolModel, resolve_model
from phi.llm.grammar import DEFAULT_SEED
from phi.memory import user_namespace

from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]

GREETING = "@phi.test hey phi! i'm alice. do we know each other?"
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
EARLIER = 4
"""Greetings alice sent before: with the one phi answers, the five recent posts phi reads
about a stranger (`build_batch`'s `recent_posts`)."""


async def test_a_greeting_gets_a_posted_reply_from_the_local_model(
    runtime: RuntimeFactory,
    alice: PhiClient,
    phi: PhiClient,
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)  # local, in-process: no network
    brain = resolve_model(None)
    # The seed is phi's fixed default, never drawn per run (and unused at temperature 0).
    assert isinstance(brain, GrammarToolModel) and brain.settings is None and DEFAULT_SEED == 0
    for _ in range(EARLIER):
        await alice.post(GREETING)
    await sandbox.wait_for_indexing()
    await phi.update_seen()
    (greeting,) = await alice.post(GREETING)
    await sandbox.wait_for_indexing()
    async with runtime(
        brain, tools=sorted(CORE_TOOLS), profile="compact", clock=lambda: NOW
    ) as phi_runtime:
        report = await phi_runtime.tick()
        stored = await phi_runtime.memory.recent(namespace=user_namespace(alice.me.did))
    await sandbox.wait_for_indexing()
    assert [n.uri for n in report.admitted] == [greeting.uri]
    replies = [r for r in report.replies if r.in_reply_to == greeting.uri]
    assert len(replies) == 1, f"phi did {report.actions}"
    thread = await alice.get_thread(greeting.uri)
    (answer,) = [p for p in thread.posts if p.uri == replies[0].uri]
    assert answer.author_handle == "phi.test"
    assert answer.reply_parent is not None and answer.reply_parent.uri == greeting.uri
    assert answer.text.strip() == replies[0].text.strip()
    assert degenerate(answer.text, answering=GREETING) is None, answer.text
    # The exchange is remembered, both sides of it.
    (exchange,) = [row for row in stored if row.kind == "interaction"]
    assert GREETING in exchange.content and answer.text.strip() in exchange.content
