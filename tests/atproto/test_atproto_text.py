"""Post text without the network: graphemes, splitting, facets, lexicon validation."""

from __future__ import annotations

import pytest
from inline_snapshot import snapshot

from phi.atproto import CosmikCard, Goal, InvalidRecord, Lexicons, find_facets, split_text
from phi.atproto._graphemes import grapheme_count, graphemes


def test_graphemes_count_what_a_person_sees() -> None:
    family = "👩\u200d👩\u200d👧\u200d👦"
    assert grapheme_count(family) == 1
    assert grapheme_count("e\u0301") == 1  # e + combining acute
    assert grapheme_count("🇫🇷🇩🇪") == 2
    assert grapheme_count("👋🏽") == 1
    assert grapheme_count("한국어") == 3
    assert grapheme_count("\r\n") == 1
    assert "".join(graphemes("a🇫🇷b" + family)) == "a🇫🇷b" + family


def test_split_prefers_sentences_and_keeps_every_word() -> None:
    sentence = "Crows remember faces and hold grudges for years. "
    text = sentence * 15
    chunks = split_text(text)
    assert len(chunks) == 3
    assert all(grapheme_count(c) <= 300 for c in chunks)
    assert all(c.endswith(".") for c in chunks)
    assert " ".join(chunks).split() == text.split()


def test_split_counts_emoji_as_one() -> None:
    text = "🐦 " * 200  # 400 graphemes, 1000 UTF-16 units
    chunks = split_text(text)
    assert [grapheme_count(c) for c in chunks] == [299, 99]


def test_split_cuts_an_overlong_word() -> None:
    assert [len(c) for c in split_text("x" * 650)] == [300, 300, 50]
    assert split_text("   ") == []


def test_facets_use_utf8_byte_offsets() -> None:
    text = "héllo @alice.test 👋 voir https://exemple.fr/café et #ça, @bob.test"
    facets = find_facets(text, mention_dids={"alice.test": "did:plc:alice"})
    raw = text.encode()
    spans = [(f.kind, raw[f.byte_start : f.byte_end].decode(), f.value) for f in facets]
    assert spans == snapshot(
        [
            ("mention", "@alice.test", "did:plc:alice"),
            ("link", "https://exemple.fr/café", "https://exemple.fr/café"),
            ("tag", "#ça", "ça"),
        ]
    )


def test_lexicon_refuses_what_does_not_fit() -> None:
    lexicons = Lexicons("io.example.bot")
    assert "io.example.bot.goal" in lexicons.collections
    good = Goal(title="make 3 friends", description="d", progress_signal="3 mutuals")
    lexicons.validate("io.example.bot.goal", good.to_record("io.example.bot"))
    lexicons.validate("network.cosmik.card", CosmikCard.note("crows").to_record("io.example.bot"))
    with pytest.raises(InvalidRecord) as info:
        lexicons.validate(
            "io.example.bot.goal", {"$type": "io.example.bot.goal", "title": "x" * 100}
        )
    assert info.value.problems == snapshot(
        [
            "record.description is required",
            "record.progressSignal is required",
            "record.createdAt is required",
            "record.title has more than 64 graphemes",
        ]
    )
    with pytest.raises(InvalidRecord, match="phi writes only"):
        lexicons.validate("app.bsky.feed.post", {"$type": "app.bsky.feed.post", "text": "hi"})
