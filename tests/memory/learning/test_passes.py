"""Synthesis, relationship summaries, review and usage accounting, with a scripted model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory.learning import (
    PUBLIC,
    model_usage,
    refresh_summary,
    review,
    synthesize_episodic,
)
from tests.memory.learning.conftest import Script

pytestmark = pytest.mark.anyio

DID = "did:plc:alice"
ALICE = user_namespace(DID)
NOW = datetime(2026, 11, 1, tzinfo=UTC)


async def test_synthesis_flags_stale_notes_and_is_cached(memory: Memory, script: Script) -> None:
    old = await memory.remember(
        NewRow(
            content="pending: reply to the crow photo thread",
            namespace="phi-episodic",
            created_at=NOW - timedelta(days=90),
        )
    )
    await memory.remember(
        NewRow(content="replied to the crow photo thread", namespace="phi-episodic")
    )
    await memory.remember(
        NewRow(content="Replied to the crow photo thread!", namespace="phi-episodic")
    )

    def answer(prompt: str) -> dict[str, Any]:
        stale = [int(line[1]) for line in prompt.splitlines() if "(old)" in line]
        return {"block": "phi replied to the crow photo thread.", "stale": stale}

    script.handlers["synthesize"] = answer
    model = script.model(memory)
    first = await synthesize_episodic(
        memory, model, "crow photos", goals=["make 3 friends"], now=NOW
    )
    (prompt,) = script.prompts["synthesize"]
    assert "make 3 friends" in prompt and prompt.count("crow photo thread") == 2  # deduplicated
    assert first.text == "phi replied to the crow photo thread."
    assert first.stale_row_ids == (old.row_id,) and not first.cached
    again = await synthesize_episodic(
        memory, model, "Crow photos?", goals=["make 3 friends"], now=NOW
    )
    assert again.cached and again.text == first.text and script.requests == {"synthesize": 1}
    other = await synthesize_episodic(memory, model, "crow photos", goals=["post daily"], now=NOW)
    assert not other.cached and script.requests == {"synthesize": 2}


async def test_synthesis_without_notes_makes_no_call(memory: Memory, script: Script) -> None:
    found = await synthesize_episodic(memory, script.model(memory), "anything")
    assert found.text == "" and script.requests == {}


async def test_summary_refreshes_after_enough_new_exchanges(memory: Memory, script: Script) -> None:
    script.handlers["summarize"] = lambda p: {"summary": f"talked {p.count('@alice')} times"}
    model = script.model(memory)
    for i in range(2):
        await memory.remember(
            NewRow.interaction(
                [Turn(speaker="@alice", text=f"crows are great {i}")],
                namespace=ALICE,
                author=DID,
                source_uris=[f"at://alice/{i}"],
            )
        )
    early = await refresh_summary(memory, model, ALICE, min_new=3)
    assert not early.refreshed and script.requests == {}
    await memory.remember(
        NewRow.interaction([Turn(speaker="@alice", text="ravens too")], namespace=ALICE, author=DID)
    )
    first = await refresh_summary(memory, model, ALICE, min_new=3)
    assert first.refreshed and first.summary is not None
    assert (first.summary.kind, first.summary.trust, first.summary.content) == (
        "summary",
        "low",
        "talked 3 times",
    )
    for i in range(3):
        await memory.remember(
            NewRow.interaction(
                [Turn(speaker="@alice", text=f"owls {i}")], namespace=ALICE, author=DID
            )
        )
    second = await refresh_summary(memory, model, ALICE, min_new=3)
    assert second.summary is not None and second.summary.supersedes == first.summary.row_id
    assert "talked 3 times" in script.prompts["summarize"][1]  # the previous impression
    assert [r.status for r in await memory.history(second.summary.row_id)] == [
        "superseded",
        "active",
    ]


async def observations(memory: Memory, *texts: str) -> list[str]:
    ids = []
    for text in texts:
        row = await memory.remember(
            NewRow(
                content=text,
                namespace=ALICE,
                kind="observation",
                author=DID,
                source_uris=["at://a/1"],
            )
        )
        ids.append(row.row_id)
    return ids


async def test_review_matches_verdicts_by_key(memory: Memory, script: Script) -> None:
    keep, wrong, share, retire = await observations(
        memory,
        "likes crows",
        "lives in berlin",
        "recommends the book 'Mind of the Raven'",
        "is busy this week",
    )
    # Verdicts out of order, one missing: matching is by key, not by position.
    script.handlers["review"] = lambda p: {
        "verdicts": [
            {"key": "o4", "verdict": "supersede"},
            {"key": "o3", "verdict": "promote", "card": "Mind of the Raven: a book on ravens"},
            {"key": "o2", "verdict": "supersede", "replacement": "lives in hamburg"},
        ]
    }
    outcomes = {o.row.row_id: o for o in await review(memory, script.model(memory))}
    assert outcomes[keep].verdict == "keep"
    assert (await memory.get(retire)).status == "superseded"
    replaced = outcomes[wrong].written
    assert replaced is not None and replaced.supersedes == wrong
    assert (await memory.get(wrong)).status == "superseded"
    card = outcomes[share].written
    assert card is not None and (card.namespace, card.kind) == (PUBLIC, "note")
    assert card.meta["promoted_from"] == share
    assert (await memory.get(share)).status == "active"


async def test_forgetting_a_person_erases_what_review_promoted_from_them(
    memory: Memory, script: Script
) -> None:
    (share,) = await observations(memory, "recommends the book 'Mind of the Raven'")
    unrelated = await memory.remember(NewRow(content="ravens nest early", namespace=PUBLIC))
    script.handlers["review"] = lambda p: {
        "verdicts": [{"key": "o1", "verdict": "promote", "card": "Mind of the Raven: ravens"}]
    }
    (outcome,) = await review(memory, script.model(memory))
    card = outcome.written
    assert card is not None and card.namespace == PUBLIC
    assert (card.author, card.meta["derived_from"]) == (DID, [share])
    # Say phi then published the card as a public record on its PDS.
    published = "at://did:plc:phi/io.phi.cosmikCard/3k"
    await memory.remember(
        NewRow(
            content="Mind of the Raven, on cosmik",
            namespace=PUBLIC,
            meta={"derived_from": [card.row_id], "published_uris": [published]},
        )
    )
    report = await memory.forget(ALICE)
    assert (report.rows, dict(report.derived), report.published) == (
        3, {PUBLIC: 2}, (published,),
    )  # fmt: skip
    assert [r.row_id async for r in memory.export(namespace=PUBLIC)] == [unrelated.row_id]


async def test_review_with_unknown_keys_keeps_everything(memory: Memory, script: Script) -> None:
    ids = await observations(memory, "likes crows", "lives in berlin")
    script.handlers["review"] = lambda p: {"verdicts": [{"key": "o9", "verdict": "supersede"}]}
    outcomes = await review(memory, script.model(memory))
    assert [o.verdict for o in outcomes] == ["keep", "keep"]
    assert [(await memory.get(i)).status for i in ids] == ["active", "active"]
    assert script.requests == {"review": 2}


async def test_review_dry_run_writes_nothing(memory: Memory, script: Script) -> None:
    (row_id,) = await observations(memory, "lives in berlin")
    script.handlers["review"] = lambda p: {
        "verdicts": [{"key": "o1", "verdict": "supersede", "replacement": "lives in hamburg"}]
    }
    (outcome,) = await review(memory, script.model(memory), dry_run=True)
    assert (outcome.verdict, outcome.text, outcome.written) == (
        "supersede",
        "lives in hamburg",
        None,
    )
    assert (await memory.get(row_id)).status == "active"


async def test_usage_is_logged_per_pass(memory: Memory, script: Script) -> None:
    await observations(memory, "likes crows")
    script.handlers["review"] = lambda p: {"verdicts": []}
    script.handlers["synthesize"] = lambda p: {"block": "x"}
    model = script.model(memory)
    await review(memory, model)
    await review(memory, model)
    await memory.remember(NewRow(content="a note about crows", namespace="phi-episodic"))
    await synthesize_episodic(memory, model, "crows")
    totals = {u.purpose: (u.calls, u.requests, u.failures) for u in await model_usage(memory)}
    assert totals == {"review": (2, 2, 0), "synthesize": (1, 1, 0)}
    assert all(u.input_tokens > 0 for u in await model_usage(memory))
    assert dict(model.calls) == {"review": 2, "synthesize": 1}
