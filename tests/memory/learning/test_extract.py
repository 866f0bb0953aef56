"""Extraction and reconciliation end to end, with a scripted model and real MiniLM."""

from __future__ import annotations

import re
from typing import Any

import pytest

from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory.learning import Proposal, extract, reconcile
from tests.memory.learning.conftest import Script

pytestmark = pytest.mark.anyio

DID = "did:plc:nate"
NATE = user_namespace(DID)


def facts(*items: tuple[str, list[int]]) -> dict[str, Any]:
    return {"observations": [{"text": t, "tags": ["name"], "exchanges": n} for t, n in items]}


async def say(memory: Memory, text: str, reply: str, uri: str) -> None:
    await memory.remember(
        NewRow.interaction(
            [
                Turn(speaker="@nate.test", text=text),
                Turn(speaker="@phi.test", text=reply, by_phi=True),
            ],
            namespace=NATE,
            author=DID,
            source_uris=[uri],
        )
    )


async def active(memory: Memory) -> list[str]:
    return [
        r.content
        async for r in memory.export(namespace=NATE, status="active")
        if r.kind == "observation"
    ]


async def test_correction_across_sessions_supersedes_and_unions_sources(
    memory: Memory, script: Script
) -> None:
    await say(memory, "call me nate", "ok nate!", "at://nate/post/1")
    script.handlers["extract"] = lambda p: facts(("prefers to be called nate", [1]))
    first = await extract(memory, script.model(memory))
    assert [(d.action, d.decided_by) for d in first.decisions] == [("ADD", "no-candidates")]
    assert script.requests == {"extract": 1}

    await say(memory, "actually, nathan", "sorry, nathan!", "at://nate/post/2")
    script.handlers["extract"] = lambda p: facts(("prefers to be called nathan", [1]))
    script.handlers["reconcile"] = lambda p: {
        "action": "UPDATE",
        "candidate": 1,
        "text": "prefers to be called nathan",
    }
    second = await extract(memory, script.model(memory))
    (decision,) = second.decisions
    assert (decision.action, decision.decided_by) == ("UPDATE", "model")
    assert "[1] prefers to be called nate" in script.prompts["reconcile"][0]
    assert re.search(r"[0-9a-f]{8}-", script.prompts["reconcile"][0]) is None  # no raw ids

    assert await active(memory) == ["prefers to be called nathan"]
    new = decision.written
    assert new is not None and decision.target is not None
    assert new.supersedes == decision.target.row_id
    assert set(new.source_uris) == {"at://nate/post/1", "at://nate/post/2"}
    chain = await memory.history(new.row_id)
    assert [(r.content, r.status) for r in chain] == [
        ("prefers to be called nate", "superseded"),
        ("prefers to be called nathan", "active"),
    ]
    edges = await memory.store.edges([new.row_id], types=["supersedes"])
    assert [(e.src, e.dst) for e in edges] == [(new.row_id, decision.target.row_id)]

    # Processed interactions are marked: a third pass reads nothing and calls nobody.
    script.requests.clear()
    third = await extract(memory, script.model(memory))
    assert third.interactions == 0 and script.requests == {}


async def test_phi_words_never_reach_the_extractor(memory: Memory, script: Script) -> None:
    await say(memory, "cool", "you live in Paris, right? you love opera", "at://nate/post/1")
    # A model that makes the claim anyway is stopped by the grounding guard.
    script.handlers["extract"] = lambda p: facts(("lives in paris and loves opera", [1]))
    report = await extract(memory, script.model(memory))
    (prompt,) = script.prompts["extract"]
    assert "@nate.test: cool" in prompt
    assert "Paris" not in prompt and "@phi.test" not in prompt
    assert report.ungrounded == ("lives in paris and loves opera",)
    assert report.decisions == () and await active(memory) == []


async def test_identity_is_never_taken_from_a_handle_or_phi(memory: Memory, script: Script) -> None:
    await memory.remember(
        NewRow.interaction(
            [
                Turn(speaker="@nathan.test", text="hey"),
                Turn(speaker="@phi.test", text="hi Nathan!", by_phi=True),
            ],
            namespace=NATE,
            author=DID,
        )
    )
    script.handlers["extract"] = lambda p: facts(("is called nathan", [1]))
    report = await extract(memory, script.model(memory))
    assert report.ungrounded == ("is called nathan",) and await active(memory) == []


async def test_phi_only_exchange_needs_no_call_and_is_marked(
    memory: Memory, script: Script
) -> None:
    await memory.remember(
        NewRow.interaction(
            [Turn(speaker="@phi.test", text="hello nate, you like jazz", by_phi=True)],
            namespace=NATE,
            author=DID,
        )
    )
    report = await extract(memory, script.model(memory))
    assert report.interactions == 1 and script.requests == {}
    assert (await extract(memory, script.model(memory))).interactions == 0


async def test_duplicates_are_noop_without_a_model_call(memory: Memory, script: Script) -> None:
    model = script.model(memory)
    base = Proposal(namespace=NATE, author=DID, content="is learning to play the guitar")
    await reconcile(memory, model, base)
    exact = await reconcile(
        memory,
        model,
        Proposal(namespace=NATE, author=DID, content="Is learning to play the guitar!"),
    )
    near = await reconcile(
        memory, model, Proposal(namespace=NATE, author=DID, content="is learning guitar")
    )
    assert (exact.action, exact.decided_by) == ("NOOP", "exact-duplicate")
    assert (near.action, near.decided_by) == ("NOOP", "near-duplicate")
    assert near.similarity is not None and near.similarity >= 0.92
    assert script.requests == {} and model.total_calls == 0
    assert await active(memory) == ["is learning to play the guitar"]


@pytest.mark.parametrize(
    ("answer", "action", "active_after"),
    [
        ({"action": "ADD"}, "ADD", {"has two kids", "has a dog named max"}),
        ({"action": "NOOP", "candidate": 1}, "NOOP", {"has two kids"}),
        ({"action": "DELETE", "candidate": 1}, "DELETE", {"has a dog named max"}),
    ],
)
async def test_model_decisions(
    memory: Memory, script: Script, answer: dict[str, Any], action: str, active_after: set[str]
) -> None:
    model = script.model(memory)
    await reconcile(memory, model, Proposal(namespace=NATE, author=DID, content="has two kids"))
    script.handlers["reconcile"] = lambda p: answer
    decision = await reconcile(
        memory, model, Proposal(namespace=NATE, author=DID, content="has a dog named max")
    )
    assert decision.action == action and script.requests == {"reconcile": 1}
    assert set(await active(memory)) == active_after
    if action == "DELETE":
        assert decision.written is not None and decision.target is not None
        assert decision.written.supersedes == decision.target.row_id


@pytest.mark.parametrize(
    "bad",
    [
        "this is not json {",
        {"action": "UPDATE", "candidate": 7, "text": "x"},
        {"action": "DELETE"},
        {"action": "MERGE", "candidate": 1},
    ],
)
async def test_malformed_answer_falls_back_without_losing_data(
    memory: Memory, script: Script, bad: Any
) -> None:
    model = script.model(memory)
    old = await reconcile(
        memory, model, Proposal(namespace=NATE, author=DID, content="works as a nurse")
    )
    script.handlers["reconcile"] = lambda p: bad
    decision = await reconcile(
        memory, model, Proposal(namespace=NATE, author=DID, content="works as a teacher now")
    )
    assert (decision.action, decision.decided_by) == ("ADD", "fallback")
    assert script.requests == {"reconcile": 2}  # the answer and one retry
    assert set(await active(memory)) == {"works as a nurse", "works as a teacher now"}
    assert old.written is not None
    assert (await memory.get(old.written.row_id)).status == "active"
    (usage,) = await memory.store.model_usage()
    assert (usage.purpose, usage.calls, usage.requests, usage.failures) == ("reconcile", 1, 2, 1)


async def test_malformed_extraction_leaves_interactions_for_the_next_pass(
    memory: Memory, script: Script
) -> None:
    await say(memory, "I keep bees", "nice", "at://nate/post/1")
    script.handlers["extract"] = lambda p: {"observations": "nope"}
    report = await extract(memory, script.model(memory))
    assert report.interactions == 0 and len(report.failed) == 1
    script.handlers["extract"] = lambda p: facts(("keeps bees", [1]))
    again = await extract(memory, script.model(memory))
    assert [d.content for d in again.decisions] == ["keeps bees"]


async def test_dry_run_decides_but_writes_and_marks_nothing(memory: Memory, script: Script) -> None:
    await say(memory, "I keep bees", "nice", "at://nate/post/1")
    script.handlers["extract"] = lambda p: facts(("keeps bees", [1]))
    report = await extract(memory, script.model(memory), dry_run=True)
    assert [(d.action, d.written) for d in report.decisions] == [("ADD", None)]
    assert await active(memory) == []
    again = await extract(memory, script.model(memory))
    assert again.interactions == 1 and await active(memory) == ["keeps bees"]
