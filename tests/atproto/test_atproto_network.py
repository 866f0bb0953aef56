"""phi's client against the real local network: login, social actions, notifications, threads."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from inline_snapshot import snapshot

from phi.atproto import AuthenticationFailed, ClientConfig, PhiClient, split_text
from phi.atproto._graphemes import grapheme_count
from phi.atproto.sandbox import Sandbox, SandboxInfo

pytestmark = pytest.mark.anyio


async def test_login_with_app_password(phi: PhiClient, cast: SandboxInfo) -> None:
    assert phi.me.handle == "phi.test"
    assert phi.me.did == cast.account("phi").did
    profile = await phi.get_profile("alice.test")
    assert (profile.handle, profile.display_name) == ("alice.test", "Alice")
    assert await phi.resolve_handle("@Bob.test") == cast.account("bob").did


async def test_wrong_password_is_a_clear_error(cast: SandboxInfo) -> None:
    config = ClientConfig(pds_url=cast.pds_url, handle="phi.test", password="wrong-pass-word")
    with pytest.raises(AuthenticationFailed) as info:
        async with PhiClient(config):
            pass
    assert "'phi.test'" in str(info.value)
    assert "PHI_APP_PASSWORD" in str(info.value)


async def test_session_is_persisted_and_renewed(cast: SandboxInfo, tmp_path: Path) -> None:
    session_file = tmp_path / "phi.session"
    base = cast.client_config("phi")
    config = ClientConfig(
        pds_url=base.pds_url, handle=base.handle, password=base.password, session_file=session_file
    )
    async with PhiClient(config) as client:
        did = client.me.did
    saved = session_file.read_text()
    assert did in saved
    # An expired, unusable session: the client logs in again with the app password.
    handle, did_, _access, _refresh, pds = saved.split(":::")
    expired = "eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjEwMDAwMDAwMDAsInN1YiI6ImRpZDpwbGM6eCJ9.c2ln"
    session_file.write_text(":::".join([handle, did_, expired, expired, pds]))
    async with PhiClient(config) as client:
        assert client.me.did == did
        assert (await client.get_profile("phi.test")).did == did
    assert session_file.read_text() != ":::".join([handle, did_, expired, expired, pds])
    # The same expired session with a wrong password: a clear error, not a stack of HTTP codes.
    session_file.write_text(":::".join([handle, did_, expired, expired, pds]))
    wrong = ClientConfig(
        pds_url=base.pds_url, handle=base.handle, password="nope", session_file=session_file
    )
    with pytest.raises(AuthenticationFailed, match=r"refused the login of 'phi\.test'"):
        async with PhiClient(wrong):
            pass


async def test_post_reply_like_follow(
    sandbox: Sandbox, phi: PhiClient, alice: PhiClient, bob: PhiClient
) -> None:
    [post] = await phi.post("what do crows eat?")
    await sandbox.wait_for_indexing()
    [reply] = await alice.reply("everything, mostly", to=post)
    await sandbox.wait_for_indexing()
    [nested] = await phi.reply("even chips?", to=reply.uri)
    await sandbox.wait_for_indexing()
    got = await phi.get_post(nested.uri)
    assert got.reply_root == post  # the thread's root, not the post replied to
    assert got.reply_parent == reply
    await phi.like(reply.uri)
    await phi.follow("bob.test")
    await sandbox.wait_for_indexing()
    assert (await phi.get_post(reply.uri)).like_count == 1
    assert (await bob.get_profile("bob.test")).followers_count >= 1
    page = await alice.list_notifications()
    assert {(n.reason, n.author_handle) for n in page.notifications} >= {
        ("like", "phi.test"),
        ("reply", "phi.test"),
    }
    await alice.repost(post)
    await sandbox.wait_for_indexing()
    mine = await phi.list_notifications()
    assert ("repost", "alice.test") in {(n.reason, n.author_handle) for n in mine.notifications}
    feed = await alice.get_author_feed("phi.test")
    assert nested.uri in {p.uri for p in feed}


async def test_mention_and_reply_notify_until_seen(
    sandbox: Sandbox, phi: PhiClient, alice: PhiClient
) -> None:
    await phi.update_seen()
    [mention] = await alice.post("hey @phi.test, seen any crows today?")
    [mine] = await phi.post("thinking about corvids")
    await sandbox.wait_for_indexing()
    [reply] = await alice.reply("corvids are the best", to=mine)
    await sandbox.wait_for_indexing()
    page = await phi.list_notifications()
    unread = {(n.reason, n.author_handle, n.uri) for n in page.notifications if not n.is_read}
    assert ("mention", "alice.test", mention.uri) in unread
    assert ("reply", "alice.test", reply.uri) in unread
    await phi.update_seen()
    await sandbox.wait_for_indexing()
    page = await phi.list_notifications()
    assert [n for n in page.notifications if not n.is_read] == []


async def test_thread_context_renders_in_order(
    sandbox: Sandbox, phi: PhiClient, alice: PhiClient
) -> None:
    [first] = await alice.post("I love birds")
    await sandbox.wait_for_indexing()
    [second] = await phi.reply("me too! what's your favorite?", to=first)
    await sandbox.wait_for_indexing()
    [third] = await alice.reply("especially crows", to=second)
    await sandbox.wait_for_indexing()
    expected = snapshot("""\
@alice.test: I love birds
@phi.test: me too! what's your favorite?
@alice.test: especially crows\
""")
    assert (await phi.get_thread(third.uri)).render() == expected
    assert (await phi.get_thread(first.uri, depth=100)).render() == expected


async def test_long_post_becomes_a_self_thread(sandbox: Sandbox, phi: PhiClient) -> None:
    text = " ".join(
        f"Crow fact {i}: they remember faces 🐦‍⬛ and tell each other." for i in range(14)
    )
    refs = await phi.post(text)
    await sandbox.wait_for_indexing()
    posts = await phi.get_posts([r.uri for r in refs])
    assert [p.uri for p in posts] == [r.uri for r in refs]
    assert [p.text for p in posts] == split_text(text)
    assert len(posts) == 3
    assert all(grapheme_count(p.text) <= 300 for p in posts)
    assert " ".join(p.text for p in posts).split() == text.split()
    assert posts[0].reply_root is None
    for previous, post in itertools.pairwise(posts):
        assert (post.reply_root, post.reply_parent) == (refs[0], previous.ref)


async def test_facets_have_byte_offsets_and_honour_consent(
    sandbox: Sandbox, phi: PhiClient, alice: PhiClient
) -> None:
    [hello] = await alice.post("bonjour phi")
    await sandbox.wait_for_indexing()
    text = "héllo @alice.test 👋 voir https://exemple.fr/café et #ça, @bob.test"
    [reply] = await phi.reply(text, to=hello)
    await sandbox.wait_for_indexing()
    post = await phi.get_post(reply.uri)
    raw = post.text.encode()
    spans = [(f.kind, raw[f.byte_start : f.byte_end].decode()) for f in post.facets]
    # alice is replied to, so she may be tagged; bob has not consented: plain text.
    assert spans == [
        ("mention", "@alice.test"),
        ("link", "https://exemple.fr/café"),
        ("tag", "#ça"),
    ]
    assert post.facets[0].value == alice.me.did


async def test_search_posts(sandbox: Sandbox, phi: PhiClient) -> None:
    (posted,) = await phi.post("searchable jackdaw")
    await phi.post("nothing to see here")
    await sandbox.wait_for_indexing()
    found = await phi.search_posts("jackdaw")
    assert posted.uri in {p.uri for p in found}
    assert all("jackdaw" in p.text for p in found)
