"""More of phi's client against the real local network: timeline, embeds, self-labels, likers,
phi's own posts and its recent operations.

Posts with embeds are written by alice through the `atproto` SDK itself, as any Bluesky app
would write them: phi only reads embeds.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

import pytest
from atproto_client import AsyncClient, models  # type: ignore[import-untyped]
from dirty_equals import IsDatetime, IsStr
from inline_snapshot import snapshot

from phi.atproto import (
    Embed,
    EmbedLink,
    Goal,
    Identity,
    ImageRef,
    Operation,
    PhiClient,
    QuotedPost,
)
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.errors import InvalidInput

pytestmark = pytest.mark.anyio

PROFILE = "app.bsky.actor.profile"


def tiny_png() -> bytes:
    """A valid 1x1 grey PNG (the PDS sniffs uploaded blobs)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x80")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def tiny_mp4() -> bytes:
    """The first box of an MP4 file: enough for the PDS to take it as `video/mp4`."""
    brands = b"isom" + struct.pack(">I", 512) + b"isomiso2mp41"
    return struct.pack(">I", 8 + len(brands)) + b"ftyp" + brands


async def sdk_login(cast: SandboxInfo, name: str) -> AsyncClient:
    account = cast.account(name)
    client = AsyncClient(base_url=cast.pds_url)
    await client.login(account.handle, account.app_password, fetch_bsky_profile=False)
    return client


@pytest.fixture
async def alice_app(cast: SandboxInfo) -> AsyncIterator[AsyncClient]:
    """alice's own Bluesky app: the SDK, logged in as her."""
    client = await sdk_login(cast, "alice")
    try:
        yield client
    finally:
        await client.request.close()


async def raw_profile(cast: SandboxInfo, did: str) -> dict[str, Any] | None:
    """An account's profile record exactly as the PDS stores it (JSON), or None."""
    client = AsyncClient(base_url=cast.pds_url)
    try:
        params = models.ComAtprotoRepoGetRecord.Params(repo=did, collection=PROFILE, rkey="self")
        response = await client.invoke_query(
            "com.atproto.repo.getRecord", params=params, output_encoding="application/json"
        )
    except Exception as exc:  # the SDK's BadRequestError for a missing record
        if "RecordNotFound" in repr(exc) or "Could not locate record" in repr(exc):
            return None
        raise
    finally:
        await client.request.close()
    value = response.content["value"]
    assert isinstance(value, dict)
    return value


async def test_timeline_shows_followed_accounts(
    sandbox: Sandbox, phi: PhiClient, alice: PhiClient
) -> None:
    await phi.follow("alice.test")
    [first] = await alice.post("the timeline crow caws")
    [second] = await alice.post("and caws again")
    await sandbox.wait_for_indexing()
    timeline = await phi.get_timeline()
    assert {first.uri, second.uri} <= {p.uri for p in timeline}
    assert len({p.uri for p in timeline}) == len(timeline)
    assert [p.uri for p in await phi.get_timeline(limit=1)] == [second.uri]


# The SDK uploads blobs with httpx's deprecated `data=<bytes>`.
@pytest.mark.filterwarnings("ignore:Use 'content=<...>' to upload raw bytes:DeprecationWarning")
async def test_embeds_are_read_from_post_views(
    sandbox: Sandbox, phi: PhiClient, alice_app: AsyncClient, cast: SandboxInfo
) -> None:
    did = cast.account("alice").did
    [quoted] = await phi.post("crows can count")
    await sandbox.wait_for_indexing()
    quoted_ref = models.ComAtprotoRepoStrongRef.Main(uri=quoted.uri, cid=quoted.cid)
    card = models.AppBskyEmbedExternal.Main(
        external=models.AppBskyEmbedExternal.External(
            uri="https://example.org/corvids", title="All about\ncorvids", description="A page"
        )
    )
    blob = (await alice_app.upload_blob(tiny_png())).blob
    images = models.AppBskyEmbedImages.Main(
        images=[
            models.AppBskyEmbedImages.Image(alt="a crow on a wire", image=blob),
            models.AppBskyEmbedImages.Image(alt="", image=blob),
        ]
    )
    quote = models.AppBskyEmbedRecord.Main(record=quoted_ref)
    with_media = models.AppBskyEmbedRecordWithMedia.Main(
        record=quote,
        media=models.AppBskyEmbedImages.Main(
            images=[models.AppBskyEmbedImages.Image(alt="proof", image=blob)]
        ),
    )
    video_blob = (await alice_app.upload_blob(tiny_mp4())).blob
    video = models.AppBskyEmbedVideo.Main(video=video_blob, alt="crows\nplaying")
    written = [
        await alice_app.send_post(text, profile_identify=did, embed=embed)
        for text, embed in [
            ("read this", card),
            ("look", images),
            ("so true", quote),
            ("see the picture", with_media),
            ("watch", video),
        ]
    ]
    await sandbox.wait_for_indexing()
    posts = await phi.get_posts([w.uri for w in written])
    # Pictures are read as their blobs (from the record) with the AppView's address of each.
    picture = ImageRef(
        did=did,
        cid=str(blob.cid),
        mime_type="image/png",
        size=len(tiny_png()),
        url=f"{cast.appview_url}/img/feed_fullsize/plain/{did}/{blob.cid}",
    )
    assert [p.embed for p in posts] == [
        Embed(
            kind="external",
            media_kind="external",
            external=EmbedLink(
                uri="https://example.org/corvids",
                title="All about\ncorvids",
                description="A page",
            ),
        ),
        Embed(
            kind="images",
            media_kind="images",
            alt_texts=["a crow on a wire", ""],
            images=[replace(picture, alt="a crow on a wire"), picture],
        ),
        Embed(
            kind="record",
            quote=QuotedPost(uri=quoted.uri, author_handle="phi.test", text="crows can count"),
        ),
        Embed(
            kind="record_with_media",
            media_kind="images",
            alt_texts=["proof"],
            quote=QuotedPost(uri=quoted.uri, author_handle="phi.test", text="crows can count"),
            images=[replace(picture, alt="proof")],
        ),
        Embed(kind="video", media_kind="video", alt_texts=["crows\nplaying"]),
    ]
    assert [p.render_embed() for p in posts] == snapshot(
        [
            "[link: All about corvids — https://example.org/corvids]",
            "[image: a crow on a wire] [image]",
            "[quote @phi.test: crows can count]",
            "[quote @phi.test: crows can count] [image: proof]",
            "[video: crows playing]",
        ]
    )
    [plain] = await phi.get_posts([quoted.uri])
    assert (plain.embed, plain.render_embed()) == (None, "")

    # A reply with a link card: the thread phi reads shows the card after the text.
    reply_ref = models.AppBskyFeedPost.ReplyRef(root=quoted_ref, parent=quoted_ref)
    reply = await alice_app.send_post(
        "source:", profile_identify=did, embed=card, reply_to=reply_ref
    )
    await sandbox.wait_for_indexing()
    assert (await phi.get_thread(reply.uri)).render() == snapshot("""\
@phi.test: crows can count
@alice.test: source: [link: All about corvids — https://example.org/corvids]\
""")

    # Notifications carry the embed as the record has it: a quote is a bare reference.
    page = await phi.list_notifications()
    quotes = {n.uri: n.embed for n in page.notifications if n.reason == "quote"}
    assert quotes[written[2].uri] == Embed(
        kind="record", quote=QuotedPost(uri=quoted.uri, state="unresolved")
    )
    embed = quotes[written[2].uri]
    assert embed is not None and embed.render() == f"[quote {quoted.uri}]"


async def test_quote_of_a_deleted_post_says_so(
    sandbox: Sandbox, phi: PhiClient, alice_app: AsyncClient, cast: SandboxInfo
) -> None:
    did = cast.account("alice").did
    gone = await alice_app.send_post("this will vanish", profile_identify=did)
    await sandbox.wait_for_indexing()
    ref = models.ComAtprotoRepoStrongRef.Main(uri=gone.uri, cid=gone.cid)
    quoting = await alice_app.send_post(
        "quoting", profile_identify=did, embed=models.AppBskyEmbedRecord.Main(record=ref)
    )
    await alice_app.delete_post(gone.uri)
    await sandbox.wait_for_indexing()
    post = await phi.get_post(quoting.uri)
    assert post.embed == Embed(kind="record", quote=QuotedPost(uri=gone.uri, state="not_found"))
    assert post.render_embed() == "[quote: post not found]"


async def test_self_labels_keep_the_rest_of_the_profile(
    sandbox: Sandbox, phi: PhiClient, cast: SandboxInfo
) -> None:
    before = await raw_profile(cast, phi.me.did)
    assert before is not None
    assert "labels" not in before
    assert await phi.get_self_labels() == []
    try:
        ref = await phi.set_self_labels(["bot", "!no-unauthenticated", "bot"])
        assert ref.uri == f"at://{phi.me.did}/{PROFILE}/self"
        assert await phi.get_self_labels() == ["bot", "!no-unauthenticated"]
        assert await raw_profile(cast, phi.me.did) == before | {
            "labels": {
                "$type": "com.atproto.label.defs#selfLabels",
                "values": [{"val": "bot"}, {"val": "!no-unauthenticated"}],
            }
        }
        await sandbox.wait_for_indexing()
        profile = await phi.get_profile("phi.test")
        assert (profile.display_name, profile.description) == ("phi", "the bot")
    finally:
        await phi.set_self_labels([])
    assert await phi.get_self_labels() == []
    assert await raw_profile(cast, phi.me.did) == before


async def test_self_labels_create_a_missing_profile(cast: SandboxInfo) -> None:
    operator = await sdk_login(cast, "operator")
    did = cast.account("operator").did
    before = await raw_profile(cast, did)
    assert before is not None
    try:
        await operator.com.atproto.repo.delete_record(
            models.ComAtprotoRepoDeleteRecord.Data(repo=did, collection=PROFILE, rkey="self")
        )
        assert await raw_profile(cast, did) is None
        async with PhiClient(cast.client_config("operator")) as client:
            assert await client.get_self_labels() == []
            await client.set_self_labels(["graphic-media"])
            assert await client.get_self_labels() == ["graphic-media"]
        assert await raw_profile(cast, did) == {
            "$type": PROFILE,
            "createdAt": IsStr(regex=r"\d{4}-\d\d-\d\dT.+"),
            "labels": {
                "$type": "com.atproto.label.defs#selfLabels",
                "values": [{"val": "graphic-media"}],
            },
        }
    finally:
        await operator.com.atproto.repo.put_record(
            models.ComAtprotoRepoPutRecord.Data(
                repo=did, collection=PROFILE, rkey="self", record=before
            )
        )
        await operator.request.close()
    assert await raw_profile(cast, did) == before


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (["NSFW"], r"self-label 'NSFW' is not valid: use lowercase"),
        (["graphic media"], r"'graphic media' is not valid"),
        (["x" * 129], r"is 129 characters long; the limit is 128"),
        ([f"label-{i}" for i in range(11)], r"11 self-labels given; a profile holds at most 10"),
        ("bot", r"a list of values, got the string 'bot'"),
    ],
)
async def test_invalid_self_labels_are_refused_before_writing(
    phi: PhiClient, labels: list[str], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        await phi.set_self_labels(labels)
    assert await phi.get_self_labels() == []


async def test_post_likers(
    sandbox: Sandbox, phi: PhiClient, alice: PhiClient, bob: PhiClient
) -> None:
    [post] = await phi.post("like this if you saw a crow today")
    await sandbox.wait_for_indexing()
    assert await phi.get_post_likers(post.uri) == []
    await alice.like(post)
    await bob.like(post.uri)
    await sandbox.wait_for_indexing()
    likers = await phi.get_post_likers(post.uri)
    assert sorted(likers, key=lambda i: i.handle) == [
        Identity(did=alice.me.did, handle="alice.test"),
        Identity(did=bob.me.did, handle="bob.test"),
    ]
    assert len(await phi.get_post_likers(post.uri, limit=1)) == 1


async def test_list_own_posts_leaves_out_reposts(
    sandbox: Sandbox, phi: PhiClient, alice: PhiClient
) -> None:
    [theirs] = await alice.post("a magpie stole my spoon")
    await sandbox.wait_for_indexing()
    [first] = await phi.post("own post one")
    [reply] = await phi.reply("magpies love shiny things", to=theirs)
    await phi.repost(theirs)
    await sandbox.wait_for_indexing()
    own = await phi.list_own_posts(limit=5)
    assert [p.uri for p in own[:2]] == [reply.uri, first.uri]
    assert {p.author_handle for p in own} == {"phi.test"}
    assert theirs.uri not in {p.uri for p in own}
    assert [p.uri for p in await phi.list_own_posts(limit=1)] == [reply.uri]


async def test_recent_operations_merge_collections_newest_first(
    sandbox: Sandbox, phi: PhiClient, alice: PhiClient
) -> None:
    [theirs] = await alice.post("rooks build nests together")
    await sandbox.wait_for_indexing()
    long_text = "rooks " * 30
    [mine] = await phi.post(long_text)
    like = await phi.like(theirs)
    follow = await phi.follow("alice.test")
    goal = await phi.create_record(
        Goal(title="learn rook calls", description="d", progress_signal="p")
    )
    collections = [
        "app.bsky.feed.post",
        "app.bsky.feed.like",
        "app.bsky.graph.follow",
        "io.phi.goal",
    ]
    ops = await phi.recent_operations(collections, limit=4)
    assert ops == [
        Operation(
            collection="io.phi.goal",
            rkey=goal.rkey,
            uri=goal.uri,
            created_at=cast(datetime, IsDatetime()),
            summary="goal: learn rook calls",
        ),
        Operation(
            collection="app.bsky.graph.follow",
            rkey=follow.rkey,
            uri=follow.uri,
            created_at=cast(datetime, IsDatetime()),
            summary=f"follow {alice.me.did}",
        ),
        Operation(
            collection="app.bsky.feed.like",
            rkey=like.rkey,
            uri=like.uri,
            created_at=cast(datetime, IsDatetime()),
            summary=f"like {theirs.uri}",
        ),
        Operation(
            collection="app.bsky.feed.post",
            rkey=mine.uri.rsplit("/", 1)[-1],
            uri=mine.uri,
            created_at=cast(datetime, IsDatetime()),
            summary="post: " + " ".join(["rooks"] * 30)[:79] + "…",
        ),
    ]
    assert [o.created_at for o in ops] == sorted((o.created_at for o in ops), reverse=True)
    assert len(await phi.recent_operations(collections, limit=2)) == 2
    await phi.delete_record(Goal, goal.rkey)


async def test_recent_operations_refuse_bad_arguments(phi: PhiClient) -> None:
    with pytest.raises(InvalidInput, match=r"'not a collection' is not a collection NSID"):
        await phi.recent_operations(["not a collection"])
    with pytest.raises(InvalidInput, match="limit must be at least 1, got 0"):
        await phi.recent_operations(["app.bsky.feed.post"], limit=0)
    with pytest.raises(InvalidInput, match="a list of NSIDs"):
        await phi.recent_operations("app.bsky.feed.post")
    assert await phi.recent_operations([]) == []


def test_embeds_render_on_one_line() -> None:
    rendered = [
        Embed(
            kind="record", quote=QuotedPost(uri="at://x/app.bsky.feed.post/1", state=state)
        ).render()
        for state in ("blocked", "detached", "unresolved")
    ]
    assert rendered == snapshot(
        [
            "[quote: blocked post]",
            "[quote: removed by its author]",
            "[quote at://x/app.bsky.feed.post/1]",
        ]
    )
    link = Embed(kind="external", media_kind="external", external=EmbedLink(uri="https://a.b"))
    assert link.render() == "[link: https://a.b]"
    assert Embed(kind="video", media_kind="video").render() == "[video]"
    quote = QuotedPost(uri="at://x/app.bsky.feed.post/1", author_handle="bob.test", text="a\n\nb")
    assert quote.render() == "[quote @bob.test: a b]"
