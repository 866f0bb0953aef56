"""Chunking for `capture`: pure function, no store."""

from __future__ import annotations

from phi.mcp import chunk_text


def test_short_text_is_one_chunk() -> None:
    assert chunk_text("  fix the login bug \n") == ["fix the login bug"]
    assert chunk_text(" \n\n ") == []


def test_paragraphs_are_packed_up_to_the_size() -> None:
    text = "\n\n".join(["a" * 40, "b" * 40, "c" * 40])
    assert chunk_text(text, size=90) == ["a" * 40 + "\n\n" + "b" * 40, "c" * 40]


def test_long_paragraphs_split_on_lines_then_words_then_characters() -> None:
    lines = "\n".join(["one two three"] * 4)
    assert chunk_text(lines, size=30) == ["one two three\none two three"] * 2
    assert chunk_text("word " * 10, size=12) == ["word word"] * 5
    assert chunk_text("x" * 25, size=10) == ["x" * 10, "x" * 10, "x" * 5]
    assert all(len(c) <= 100 for c in chunk_text(("y" * 30 + " ") * 40, size=100))
