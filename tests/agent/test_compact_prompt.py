"""The compact prompt profile for small local models: which blocks, within what budget."""

from __future__ import annotations

from pathlib import Path

from phi.agent.prompt import (
    BLOCKS,
    COMPACT_BLOCKS,
    COMPACT_EXAMPLES,
    OPERATIONAL_RULES,
    base_prompt,
    compact_base,
    fit_block,
    profile_blocks,
)


def test_the_full_profile_is_every_block_unchanged() -> None:
    assert profile_blocks("full") is BLOCKS


def test_the_compact_profile_keeps_the_conversation_blocks_in_prompt_order() -> None:
    names = [name for name, _ in profile_blocks("compact")]
    assert names == ["now", "notifications", "people", "first_interaction"]
    assert list(COMPACT_BLOCKS) == names


def test_the_compact_base_is_short_and_static(tmp_path: Path) -> None:
    base = compact_base()
    assert base == compact_base()  # nothing dynamic: llama.cpp reuses its KV cache
    # The rules are short; the worked examples (measured to halve a tiny model's echoes
    # and loops) still keep the whole under the full base.
    assert len(base.removesuffix(f"\n{COMPACT_EXAMPLES}")) < len(base_prompt()) / 2
    assert COMPACT_EXAMPLES in base and len(base) < len(base_prompt())
    assert "reply_to" in base and "never repeat their post back" in base
    assert OPERATIONAL_RULES not in base
    mine = tmp_path / "me.md"
    mine.write_text("you are a helpful crab.", encoding="utf-8")
    assert compact_base(mine).startswith("you are a helpful crab.")  # the owner's choice wins


def test_a_block_within_budget_is_unchanged() -> None:
    assert fit_block("[NOW]\n2026-11-23 14:05 UTC", 80) == "[NOW]\n2026-11-23 14:05 UTC"


def test_an_overlong_block_keeps_its_label_and_its_newest_lines() -> None:
    block = "\n".join(
        [
            "[NEW NOTIFICATIONS — 1 in 1 thread(s)]",
            *(f"    @bob: {'x' * 100} {i}" for i in range(30)),
            '  → mention from @alice.test: "hi"',
            '    uri: "at://a/1"',
        ]
    )
    fitted = fit_block(block, 600)
    assert len(fitted) <= 600
    lines = fitted.splitlines()
    assert lines[0] == "[NEW NOTIFICATIONS — 1 in 1 thread(s)]"
    assert lines[1].startswith("(… ") and lines[1].endswith(" earlier lines left out)")
    assert lines[-2:] == ['  → mention from @alice.test: "hi"', '    uri: "at://a/1"']


def test_a_long_line_is_shortened() -> None:
    fitted = fit_block("[X]\n" + "y" * 1000, 2000)
    assert fitted.splitlines()[1] == "y" * 239 + "…"
