"""What phi notes of a stranger from their public profile and recent posts."""

from __future__ import annotations

from datetime import UTC, datetime

from phi.agent.context import background_note
from phi.agent.deps import AuthorLookup
from phi.atproto.models import Post, Profile

ALICE = "did:plc:alice"


def _post(rkey: str, text: str) -> Post:
    return Post(
        uri=f"at://{ALICE}/app.bsky.feed.post/{rkey}",
        cid=f"cid{rkey}",
        author_did=ALICE,
        author_handle="alice.test",
        text=text,
        created_at=datetime(2026, 11, 23, tzinfo=UTC),
    )


def test_the_same_words_posted_again_are_noted_once() -> None:
    greeting = "@phi.test hi phi! i'm alice. what do you remember about me?"
    lookup = AuthorLookup(
        profile=Profile(did=ALICE, handle="alice.test", description="likes birds"),
        recent_posts=[
            _post("3a", greeting),
            _post("3b", "off to see the herons"),
            _post("3c", greeting),
        ],
    )
    note, sources = background_note(lookup)
    assert note.count(greeting) == 1
    assert "off to see the herons" in note
    assert len(sources) == 4  # the profile and every post, repeated or not
