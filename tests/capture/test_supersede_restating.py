"""Words that restate a reversed decision go with it (`supersede.restates`, `hooks`).

A session that pins httpx says so in words too ("Pinned httpx to 0.27.2: ..."): once a later
session pins it differently, those words are as stale as the pin, and no claim names them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phi.capture.supersede import (
    Claims,
    claims_from_meta,
    claims_of,
    restates,
    reversal,
    term_digests,
)
from phi.memory import Memory
from tests.capture._hook_events import send
from tests.capture.test_supersede_hook import status, tool_call

PYPROJECT = "/repo/pyproject.toml"
PIN = '    "httpx==0.27.2",  # 0.28 dropped proxy auth from the URL: Payjet calls got 407'
BUMP = '    "httpx==0.28.1",  # proxy auth passed explicitly via proxy=httpx.Proxy(...)'


def pin() -> dict[str, str]:
    return {"file_path": PYPROJECT, "old_string": '    "httpx>=0.27",', "new_string": PIN}


def bump() -> dict[str, str]:
    return {"file_path": PYPROJECT, "old_string": PIN, "new_string": BUMP}


def test_a_text_restates_the_old_value_with_its_subject_or_more_old_words() -> None:
    earlier, later = claims_of("Edit", pin()), claims_of("Edit", bump())
    assert reversal(later, earlier) is not None

    def said(text: str) -> bool:
        return restates(term_digests(text), earlier=earlier, later=later)

    assert said("Pinned httpx to 0.27.2: 0.28 stopped reading credentials from the proxy URL.")
    assert said("We stay on httpx 0.27.2 for now.")  # the old value and the subject
    assert said("0.27.2, because Payjet calls got 407")  # the old value and old words
    # About the same thing without the old choice, or the old value by chance.
    assert not said("httpx passes proxy auth for the Payjet client")  # subject, one old word
    assert not said("Release 0.27.2 of the docs is out.")  # a value alone
    assert not said("Cut the Payjet retry budget to 7250 ms.")  # one old word
    # And the new choice is not the old one: a text of the bump restates nothing.
    assert not restates(term_digests(BUMP), earlier=earlier, later=later)


def test_words_alone_restate_only_when_there_are_enough_of_them() -> None:
    def mode(value: str) -> dict[str, str]:
        return {"file_path": "/repo/src/check.py", "old_string": "", "new_string": value}

    earlier = claims_of("Edit", mode("MODE = 'strict validation of incoming payloads'"))
    later = claims_of(
        "Edit",
        {
            "file_path": "/repo/src/check.py",
            "old_string": "MODE = 'strict validation of incoming payloads'",
            "new_string": "MODE = 'lenient parsing'",
        },
    )
    assert reversal(later, earlier) is not None

    def said(text: str) -> bool:
        return restates(term_digests(text), earlier=earlier, later=later)

    assert said("We chose strict validation of incoming payloads.")
    assert not said("strict validation matters")  # two old words: about it, not the choice


def test_terms_are_kept_as_digests_and_old_rows_without_them_still_read() -> None:
    claims = claims_of("Edit", pin())
    assert claims.terms and all(len(t) == 13 and t[0] in "vw" for t in claims.terms)
    assert "payjet" not in json.dumps(claims.as_meta()).lower()  # no text kept twice
    assert claims_from_meta(claims.as_meta()) == claims
    legacy = {k: v for k, v in claims.as_meta().items() if k != "terms"}
    assert claims_from_meta(legacy) == Claims(
        path=claims.path, added=claims.added, removed=claims.removed, settings=claims.settings
    )
    assert claims_from_meta({**legacy, "terms": "x"}) is None
    # A command that sets nothing cannot be reversed: no terms kept for it.
    assert not claims_of("Bash", {"command": "pytest -q"}).terms
    assert claims_of("Bash", {"command": "uv add httpx==0.27.2"}).terms


def transcript(path: Path, *texts: str) -> str:
    with path.open("w", encoding="utf-8") as handle:
        for n, text in enumerate(texts):
            line = {
                "uuid": f"u{n}",
                "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
            }
            handle.write(json.dumps(line) + "\n")
    return str(path)


SUMMARY = "Pinned httpx to 0.27.2: 0.28 stopped reading credentials from the proxy URL."
OTHER = "Also cut the Payjet retry budget to 7250 ms; the tests pass."


@pytest.mark.anyio
async def test_a_reversal_supersedes_the_turns_restating_what_it_reverses(
    memory: Memory, tmp_path: Path
) -> None:
    await send(memory, "UserPromptSubmit", prompt="Payjet calls fail behind the proxy")
    old_decision, old_change = await tool_call(memory, "Edit", pin(), use="t1")
    said = transcript(tmp_path / "s1.jsonl", SUMMARY, OTHER)
    stop = await send(memory, "Stop", transcript_path=said)
    summary, other = stop.rows
    # A later session's question and its answer that restates the pin, before the bump.
    asked = await send(
        memory,
        "Stop",
        session="s2",
        transcript_path=transcript(
            tmp_path / "s2.jsonl", "We are on httpx 0.27.2 because of the proxy."
        ),
    )
    answer = asked.rows[0]
    # The session that bumps it says so before the edit: its own words stay.
    mine = await send(
        memory,
        "Stop",
        session="s3",
        transcript_path=transcript(tmp_path / "s3.jsonl", "Moving httpx off 0.27.2 now."),
    )
    new_decision, new_change = await tool_call(memory, "Edit", bump(), use="t2", session="s3")

    assert new_decision.supersedes == old_decision.row_id  # the reversed row comes first
    assert new_decision.meta["reverses"] == {
        old_decision.row_id: "dep:py:httpx set to '==0.28.1' (was '==0.27.2')"
    }
    assert new_decision.meta["stale_with"] == {
        summary.row_id: f"restates {old_decision.row_id}",
        answer.row_id: f"restates {old_decision.row_id}",
    }
    for row in (old_decision, old_change, summary, answer):
        assert await status(memory, row) == "superseded", row.content
    for row in (other, mine.rows[0], new_decision, new_change):
        assert await status(memory, row) == "active", row.content
    # With provenance: the summary's history leads to the decision that reversed it.
    assert [r.row_id for r in await memory.history(summary.row_id)] == [
        summary.row_id,
        new_decision.row_id,
    ]
    # The change row found nothing left to supersede: the decision had taken them.
    assert "stale_with" not in new_change.meta
    found = await memory.search("which httpx version do we pin", namespace="dev", limit=20)
    assert not {summary.row_id, answer.row_id} & {hit.row.row_id for hit in found}


@pytest.mark.anyio
async def test_what_came_of_a_reversed_command_and_what_restates_it_go_with_it(
    memory: Memory,
) -> None:
    install, installed = await tool_call(
        memory, "Bash", {"command": "uv add 'httpx==0.27.2'"}, use="t1"
    )
    commit, committed = await tool_call(
        memory, "Bash", {"command": "git commit -am 'Pin httpx to 0.27.2 for the proxy'"}, use="t2"
    )
    listing = (
        await send(
            memory,
            "PreToolUse",
            tool_name="Bash",
            tool_use_id="t3",
            tool_input={"command": "uv pip list"},
        )
    ).rows[0]
    listed = (
        await send(
            memory,
            "PostToolUse",
            tool_name="Bash",
            tool_use_id="t3",
            tool_input={"command": "uv pip list"},
            tool_response={"stdout": "anyio 4.4.0\nhttpx 0.27.2\n", "exit_code": 0},
        )
    ).rows[0]
    assert (installed.meta["capture"], listed.meta["capture"]) == ("tool_result", "tool_result")
    bump_decision, _ = await tool_call(
        memory, "Bash", {"command": "uv add 'httpx==0.28.1'"}, use="t4", session="s2"
    )
    assert bump_decision.meta["stale_with"] == {
        installed.row_id: f"result of {install.row_id}",
        commit.row_id: f"restates {install.row_id}",
        listed.row_id: f"restates {install.row_id}",
    }
    for row in (install, installed, commit, listed):
        assert await status(memory, row) == "superseded", row.content
    # What the commit printed ("ok") and the command that listed say nothing of the pin.
    for row in (committed, listing):
        assert await status(memory, row) == "active", row.content
