"""The coding-memory judge leaves random identifiers out of the leak count.

Row ids, session ids and tool-use ids are random: `7250` (a billing marker) turns up inside a
row id now and then, and `ofx` (a pocketbook marker) inside a tool-use id. Neither is phi
telling one project about another, so neither may count as a leak or stop the generator.
"""

from __future__ import annotations

from pathlib import Path

from bench.coding_memory.metrics import leaks, mask_identifiers
from bench.coding_memory.scenario import build_history, check_markers

MARKERS = {
    "billing": ["payjet", "7250", "e3e70682-6fd0-4b5c-9a3e-0f1f2a3b4c5d", "e3e70682"],
    "pocketbook": ["ofx", "0b1c2d3e"],
}


def test_a_marker_inside_an_identifier_is_no_leak() -> None:
    row_id = "- [interaction, 1m ago, id 01a2158c-6425-7250-83df-da3754162964] assistant: ok"
    tool_id = "- decision of toolu_01XofxQ9aBcDeFgHiJkLmNoP: ok"
    hex_run = "- build 9f17250aa1 passed"
    for entry in (row_id, tool_id, hex_run):
        assert leaks(entry, "inventory", MARKERS) == [], entry
    # What the identifiers hide is only the identifiers.
    assert mask_identifiers(row_id).endswith("assistant: ok")


def test_content_and_whole_session_ids_still_leak() -> None:
    content = "- retry budget 7250 ms for Payjet"
    session = "- [2025-01-02 10:00 UTC, session e3e70682] assistant: done"
    full = "- from e3e70682-6fd0-4b5c-9a3e-0f1f2a3b4c5d"
    for entry in (content, session, full):
        assert leaks(entry, "inventory", MARKERS) == [entry]
    # A session id only counts whole: a longer hex run that starts like it is another id.
    assert leaks("- build e3e70682aa", "inventory", MARKERS) == []
    assert leaks(session, "billing", MARKERS) == []  # its own project


def test_the_generator_accepts_a_marker_inside_a_random_tool_use_id(tmp_path: Path) -> None:
    # Seed 1 draws a tool-use id holding `ofx` for a billing session (it used to be refused).
    history = build_history(tmp_path, seed=1, routine=2)
    ids = [
        str(step.payload.get("tool_use_id", ""))
        for step in history.steps
        if step.project != "pocketbook"
    ]
    assert any("ofx" in i.lower() for i in ids)
    check_markers(history)
