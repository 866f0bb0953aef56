"""What of the recalled rows a prompt is told (`phi.capture.recall`): the gate, near-identical
lines, the order the budget is spent in, and the prompt's own copies kept out of the scores.

The first tests hand `prompt_context` a stand-in memory returning chosen hits (the rules are
ours, not recall's); the last ones replay sessions into a real store with the real embedder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from phi.capture.hooks import apply_event, parse_event
from phi.capture.recall import MIN_SCORE, STRONG_SCORE, prompt_context, session_context
from phi.memory import Memory, Recalled, Row
from phi.memory.recall import DEFAULT_RECIPE, MatchedBy, RecallRecipe
from tests.capture.test_recall import bash, memories, prompt

pytestmark = pytest.mark.anyio

NS = "code:t"
NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def row(n: int, content: str, *, session: str = "s1", **meta: Any) -> Row:
    at = NOW - timedelta(hours=100 - n)
    return Row(
        row_id=f"r{n:03d}",
        namespace=NS,
        kind="note",
        content=content,
        status="active",
        supersedes=None,
        trust="medium",
        tags=(),
        source_uris=(),
        author=None,
        created_at=at,
        updated_at=at,
        meta={"session": session, **meta},
        content_hash=f"h{n}",
    )


def hit(r: Row, score: float, matched_by: MatchedBy = "both") -> Recalled:
    return Recalled(row=r, score=score, matched_by=matched_by, age_seconds=3600.0)


@dataclass
class Recalls:
    """A memory whose search returns `hits` (best first), whatever is asked."""

    hits: list[Recalled]
    recipe: RecallRecipe = DEFAULT_RECIPE
    asked: list[dict[str, Any]] = field(default_factory=list)

    async def search(self, query: str, **options: Any) -> list[Recalled]:
        self.asked.append(options)
        return sorted(self.hits, key=lambda h: -h.score)


async def answer(hits: list[Recalled], *, budget: int = 1500) -> str | None:
    memory: Any = Recalls(hits)
    return await prompt_context(memory, "why", namespace=NS, session="now", budget_tokens=budget)


async def told(hits: list[Recalled], *, budget: int = 1500) -> list[str]:
    return [line.split("] ", 1)[1] for line in memories(await answer(hits, budget=budget) or "")]


async def test_something_is_told_only_when_a_row_shares_a_word_or_matches_strongly() -> None:
    chatter = [hit(row(1, "Done with stock.py"), 0.45, "dense"), hit(row(2, "ok"), 0.4, "graph")]
    # Rows found by meaning alone, lifted above the threshold by their session: not enough.
    assert await told(chatter) == []
    # A row sharing a word with the prompt opens the answer, and the others come with it.
    worded = hit(row(3, "retry budget cut to 7250 ms"), MIN_SCORE, "text")
    assert await told([*chatter, worded]) == [
        "retry budget cut to 7250 ms",
        "ok",
        "Done with stock.py",
    ]
    # So does a strong match by meaning alone; a weaker row sharing a word does not.
    strong = hit(row(4, "pinned the HTTP library"), STRONG_SCORE, "dense")
    assert await told([*chatter, strong]) == ["pinned the HTTP library", "ok", "Done with stock.py"]
    weak = hit(row(5, "retry later"), MIN_SCORE - 0.01, "both")
    assert await told([*chatter, weak]) == []


async def test_near_identical_lines_are_told_once() -> None:
    hits = [
        hit(row(1, "tool result of Bash: ok (56 checks)", capture="tool_result"), 0.6),
        hit(row(2, "tool result of Bash:  ok (73 checks)", capture="tool_result"), 0.5),
        hit(row(3, "assistant: Let me reproduce it first."), 0.55),
        hit(row(4, "assistant: Let me reproduce it first.", session="s2"), 0.5),
        hit(row(5, "assistant: Let me reproduce it later."), 0.45),
    ]
    assert await told(hits) == [
        "assistant: Let me reproduce it later.",
        "assistant: Let me reproduce it first.",
        "tool result of Bash: ok (56 checks)",
    ]


async def test_a_tool_calls_decision_is_told_once_with_its_file_change() -> None:
    decision = row(1, "decision: Edit a.py: X = 2", capture="decision", tool_use_id="t1")
    content = 'file change a.py: {"new_string": "X = 2", "old_string": "X = 1"}'
    change = row(2, content, capture="file_change", tool_use_id="t1")
    other = row(3, "decision: Edit b.py: Y = 3", capture="decision", tool_use_id="t2")
    hits = [hit(decision, 0.9), hit(change, 0.8), hit(other, 0.7)]
    assert await told(hits) == [other.content, change.content]
    # Without its file change among the hits, the decision is told.
    assert await told([hit(decision, 0.9)]) == [decision.content]


async def test_the_budget_goes_to_decisions_before_what_was_looked_at() -> None:
    listed = "files looked at in this session: " + ", ".join(f"src/m{n}.py" for n in range(12))
    looked = row(1, listed, capture="looked_at")
    decided = row(2, "decision: Edit src/x.py: TIMEOUT = 90 # the upload takes a minute")
    hits = [hit(looked, 0.9), hit(decided, 0.5)]
    roomy = await answer(hits)
    assert roomy is not None
    assert [m.split("] ", 1)[1] for m in memories(roomy)] == [decided.content, listed]
    # Room for one of them: the decision, though the list of files scored higher.
    assert await told(hits, budget=-(-len(roomy) // 4) - 1) == [decided.content]


async def test_escaping_the_fence_inside_a_memory_never_takes_it_past_the_budget() -> None:
    # Each `<external-` inside a memory is escaped as `&lt;external-`: three characters more
    # than the budget counted when it chose the line.
    sneaky = row(1, "tool output: " + "<external-memory>" * 30)
    plain = row(2, "retry budget cut to 7250 ms")
    hits = [hit(sneaky, 0.9), hit(plain, 0.8)]
    roomy = await answer(hits)
    assert roomy is not None and "&lt;external-memory>" in roomy
    budget = -(-len(roomy) // 4) - 10  # both lines chosen; escaped, they no longer fit
    text = await answer(hits, budget=budget)
    assert text is not None and -(-len(text) // 4) <= budget
    assert "7250" in text


async def test_a_prompt_without_copies_is_searched_once() -> None:
    memory: Any = Recalls([hit(row(1, "retry budget cut to 7250 ms"), 0.6)])
    await prompt_context(memory, "why so short", namespace=NS, session="s9", budget_tokens=900)
    assert len(memory.asked) == 1
    assert memory.asked[0]["recipe"].smooth_types == ("causal",)


async def test_copies_of_the_prompt_are_searched_around() -> None:
    earlier = row(10, "user: why so short", session="s2", capture="turn")
    mine = row(20, "user: why so short", session="now", capture="turn")
    memory: Any = Recalls([hit(earlier, 1.2), hit(mine, 1.2), hit(row(1, "retry cut"), 0.4)])
    text = await prompt_context(
        memory, "Why  so short", namespace=NS, session="now", budget_tokens=900
    )
    tick = timedelta(microseconds=1)
    spans = [(o.get("since"), o.get("until")) for o in memory.asked[1:]]
    # Before the earlier copy, between the two; nothing after this session's own copy.
    assert spans == [(None, earlier.created_at), (earlier.created_at + tick, mine.created_at)]
    assert "retry cut" in (text or "") and "why so short" not in (text or "")


async def test_a_copy_from_another_session_is_the_last_cut_so_what_follows_is_searched() -> None:
    earlier = row(10, "user: why so short", session="s2", capture="turn")
    memory: Any = Recalls([hit(earlier, 1.2), hit(row(1, "retry cut"), 0.4)])
    await prompt_context(memory, "why so short", namespace=NS, session="now", budget_tokens=900)
    tick = timedelta(microseconds=1)
    spans = [(o.get("since"), o.get("until")) for o in memory.asked[1:]]
    assert spans == [(None, earlier.created_at), (earlier.created_at + tick, None)]


@dataclass
class Preloads:
    """A memory with one earlier task whose preload fills whatever budget it is given."""

    task: Row
    asked: list[int] = field(default_factory=list)

    async def recent(self, **options: Any) -> list[Row]:
        return [self.task]

    async def preload(self, hint: str, *, namespace: str, budget_tokens: int) -> Any:
        self.asked.append(budget_tokens)
        line = "- [note, 1h ago] " + "x" * 63  # 80 characters: 20 tokens
        lines = [line] * (budget_tokens // 21)  # each line and its line break
        return type("Window", (), {"text": "\n".join(lines)})()


async def test_a_session_start_gives_the_preload_what_its_note_leaves() -> None:
    task = row(1, "user: " + "make the charge path retry less " * 12, session="s1")
    memory: Any = Preloads(replace(task, meta={**task.meta, "capture": "turn", "turns": [{}]}))
    text = await session_context(
        memory, namespace=NS, session="s2", cwd="/src/api", budget_tokens=1000
    )
    assert text is not None and -(-len(text) // 4) <= 1000
    # Every line of the preload is there: it was made for the room left, not cut to fit.
    assert text.count("- [note, 1h ago]") == memory.asked[0] // 21
    assert 1000 - 200 < memory.asked[0] < 1000 - 100  # the note names the long task
    # Room for less than the smallest preload (30 tokens): nothing, and no preload asked.
    note_only = 1000 - memory.asked.pop() + 30
    assert (
        await session_context(
            memory, namespace=NS, session="s2", cwd="/src/api", budget_tokens=note_only
        )
        is None
    )
    assert memory.asked == []


# -- on a real store ------------------------------------------------------------------------


def routine(session: str, n: int) -> list[dict[str, Any]]:
    """Ordinary work around a decision: what most of a history is."""
    module = ["invoices", "dunning", "ledger", "exports", "search"][n % 5]
    return [
        prompt(session, Path("/src/api"), f"add type hints to src/{module}_{n}.py"),
        *bash(
            session, Path("/src/api"), f"r{n}", "uv run pytest -q", "Check the work", f"{n} passed"
        ),
    ]


DECIDE = [
    *(event for n in range(12) for event in routine("aaaa-s1", n)),
    prompt("aaaa-s1", Path("/src/api"), "Invoices get charged twice when Payjet is slow."),
    *bash(
        "aaaa-s1",
        Path("/src/api"),
        "t1",
        "sed -i s/30000/7250/ payjet.py",
        "Cut the Payjet retry budget to 7250 ms: Payjet dedupes idempotency keys for 8 s only",
        "",
    ),
    {
        "hook_event_name": "Stop",
        "session_id": "aaaa-s1",
        "last_assistant_message": "Cut the Payjet retry budget to 7250 ms: a later retry charged"
        " the invoice twice, since Payjet dedupes idempotency keys for 8 seconds only.",
    },
    *(event for n in range(12, 24) for event in routine("aaaa-s1", n)),
]
QUESTION = "someone wants longer retries on the charge path; why did we keep them short?"


async def store(memory: Memory, events: list[dict[str, Any]], first: int = 0) -> None:
    for n, event in enumerate(events, start=first):
        await apply_event(memory, parse_event(json.dumps(event)), namespace=NS, event_id=f"e{n}")


async def test_the_prompt_once_stored_changes_nothing(memory: Memory) -> None:
    """The resident process may store the prompt before it answers it, or after: the
    answer is the same."""
    await store(memory, DECIDE)
    ask = prompt("bbbb-s2", Path("/src/api"), QUESTION)
    before = await prompt_context(
        memory, QUESTION, namespace=NS, session="bbbb-s2", budget_tokens=1500
    )
    await store(memory, [ask], first=50)
    after = await prompt_context(
        memory, QUESTION, namespace=NS, session="bbbb-s2", budget_tokens=1500
    )
    assert before is not None and "7250" in before
    assert after == before


async def test_the_same_question_in_an_earlier_session_is_no_evidence(memory: Memory) -> None:
    await store(memory, DECIDE)
    # The same words asked in a second session, and again in a third: the second session's
    # copy is neither told nor allowed to squeeze the decision out.
    first = await prompt_context(
        memory, QUESTION, namespace=NS, session="bbbb-s2", budget_tokens=1500
    )
    await store(memory, [prompt("bbbb-s2", Path("/src/api"), QUESTION)], first=50)
    again = await prompt_context(
        memory, QUESTION, namespace=NS, session="cccc-s3", budget_tokens=1500
    )
    assert first is not None and again is not None
    assert "7250" in again and QUESTION not in again
    assert memories(again) == memories(first)


async def test_an_unrelated_question_asked_again_gets_nothing(memory: Memory) -> None:
    unrelated = "write a haiku about autumn leaves for the newsletter"
    await store(memory, [*DECIDE, prompt("bbbb-s2", Path("/src/api"), unrelated)])
    assert (
        await prompt_context(memory, unrelated, namespace=NS, session="cccc-s3", budget_tokens=1500)
        is None
    )


async def test_a_session_start_keeps_to_its_budget_note_included(memory: Memory) -> None:
    long_task = "Make the retry path sane again: " + "the charge path retries too long; " * 20
    events = list(DECIDE)
    for n in range(30):
        events.append(prompt("bbbb-s2", Path("/src/api"), f"step {n}: " + "tidy the module " * 12))
    await store(memory, [*events, prompt("bbbb-s2", Path("/src/api"), long_task)])
    for budget in (250, 400, 1500):
        text = await session_context(
            memory, namespace=NS, session="cccc-s3", cwd="/src/api", budget_tokens=budget
        )
        assert text is not None and text.startswith(f"Project memory: {NS}.")
        assert -(-len(text) // 4) <= budget, budget
    # A budget the note alone fills: nothing rather than too much.
    tiny = await session_context(
        memory, namespace=NS, session="cccc-s3", cwd="/src/api", budget_tokens=150
    )
    assert tiny is None
