"""Reading the network beyond phi's PDS, on the local network: where an account lives (its
DID document, through the network's PLC directory or a did:web host), and custom feeds
through the AppView (the sandbox serves one from a real feed generator)."""

from __future__ import annotations

import httpx
import pytest
from pydantic import ValidationError
from tests._json_server import json_app
from tests._serving import serving

from phi.atproto import (
    IdentityUnresolved,
    InvalidArgument,
    NetworkUnavailable,
    PhiClient,
)
from phi.atproto.identity import did_document_url, parse_did_document
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.config import Settings

pytestmark = pytest.mark.anyio


async def test_an_account_on_another_pds_resolves_there(phi: PhiClient, cast: SandboxInfo) -> None:
    faraway = cast.account("faraway")
    assert faraway.pds_url is not None and faraway.pds_url != cast.pds_url
    where = await phi.resolve_did(faraway.did)
    assert (where.did, where.handle, where.pds_url) == (
        faraway.did,
        "faraway.elsewhere",
        faraway.pds_url,
    )
    # phi's own document names the network's PDS.
    assert (await phi.resolve_did(phi.me.did)).pds_url == cast.pds_url


async def test_likes_are_read_on_the_likers_own_pds(
    sandbox: Sandbox, cast: SandboxInfo, alice: PhiClient, phi: PhiClient
) -> None:
    (heron,) = await alice.post("a heron on the far bank")
    await sandbox.wait_for_indexing()
    async with PhiClient(cast.client_config("faraway")) as faraway:
        await faraway.like(heron)
    liked = await phi.liked_post_uris(cast.account("faraway").did)
    assert liked[0] == heron.uri
    # phi's own PDS does not hold that repo: reading the likes there finds nothing.
    async with httpx.AsyncClient() as http:
        there = await http.get(
            f"{cast.pds_url}/xrpc/com.atproto.repo.listRecords",
            params={"repo": cast.account("faraway").did, "collection": "app.bsky.feed.like"},
        )
    assert there.status_code == 400


async def test_an_unknown_did_says_why(phi: PhiClient) -> None:
    with pytest.raises(IdentityUnresolved, match="did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"):
        await phi.resolve_did("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa")
    with pytest.raises(IdentityUnresolved, match="did:plc and host-level did:web only"):
        await phi.resolve_did("did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme")


async def test_a_did_web_owner_is_read_where_their_document_says(phi: PhiClient) -> None:
    seen: list[str] = []
    routes: dict[str, object] = {}
    async with serving(json_app(routes, seen)) as port:
        did = f"did:web:localhost%3A{port}"
        routes["/.well-known/did.json"] = {
            "id": did,
            "alsoKnownAs": ["at://web.owner.test"],
            "service": [
                {
                    "id": "#atproto_pds",
                    "type": "AtprotoPersonalDataServer",
                    "serviceEndpoint": f"http://127.0.0.1:{port}",
                }
            ],
        }
        liked = "at://did:plc:bbbbbbbbbbbbbbbbbbbbbbbb/app.bsky.feed.post/3kabc"
        routes["/xrpc/com.atproto.repo.listRecords"] = {
            "records": [
                {"uri": "x", "value": {"subject": {"uri": liked}}},
                {"uri": "y", "value": {"subject": {"uri": "at://d/app.bsky.feed.generator/f"}}},
                {"uri": "z", "value": "not a record"},
            ]
        }
        where = await phi.resolve_did(did)
        assert (where.handle, where.pds_url) == ("web.owner.test", f"http://127.0.0.1:{port}")
        assert await phi.liked_post_uris(did, limit=7) == [liked]
    assert seen == [
        "/.well-known/did.json?",
        "/.well-known/did.json?",
        f"/xrpc/com.atproto.repo.listRecords?repo={did.replace('%', '%25').replace(':', '%3A')}"
        "&collection=app.bsky.feed.like&limit=7",
    ]
    # The server gone: the PDS is unreachable, and the error says which call.
    with pytest.raises(NetworkUnavailable, match="DID document of"):
        await phi.resolve_did(did)


def test_did_documents_are_checked() -> None:
    plc = "did:plc:cccccccccccccccccccccccc"
    assert did_document_url(plc, plc_url="http://127.0.0.1:1/") == f"http://127.0.0.1:1/{plc}"
    assert did_document_url("did:web:example.com", plc_url="x") == (
        "https://example.com/.well-known/did.json"
    )
    with pytest.raises(IdentityUnresolved, match="not this DID's"):
        parse_did_document(plc, {"id": "did:plc:other"})
    with pytest.raises(IdentityUnresolved, match="no #atproto_pds"):
        parse_did_document(plc, {"id": plc, "service": [{"id": "#atproto_pds"}]})
    doc = parse_did_document(
        plc,
        {
            "id": plc,
            "service": [{"id": f"{plc}#atproto_pds", "serviceEndpoint": "https://pds.example/"}],
        },
    )
    assert (doc.handle, doc.pds_url) == (None, "https://pds.example")


async def test_the_sandbox_feed_shows_the_newest_posts(
    sandbox: Sandbox, cast: SandboxInfo, alice: PhiClient, bob: PhiClient, phi: PhiClient
) -> None:
    feed = cast.feeds["cast-latest"]
    (first,) = await alice.post("the first of two posts for the feed")
    (second,) = await bob.post("the second, newer")
    await sandbox.wait_for_indexing()
    posts = await phi.get_feed(feed, limit=2)
    assert [(p.uri, p.author_handle) for p in posts] == [
        (second.uri, "bob.test"),
        (first.uri, "alice.test"),
    ]
    (made,) = await phi.get_actor_feeds(cast.account("operator").handle)
    assert (made.uri, made.creator_handle, made.display_name, made.description) == (
        feed,
        "phi-operator.test",
        "Cast, latest",
        "the sandbox cast's newest posts",
    )
    assert await phi.get_actor_feeds("alice.test") == []


async def test_a_feed_uri_is_checked_before_asking(phi: PhiClient) -> None:
    with pytest.raises(InvalidArgument, match="not a feed URI"):
        await phi.get_feed("at://did:plc:x/app.bsky.feed.post/3k")


def test_the_directory_and_index_settings_must_be_urls() -> None:
    with pytest.raises(ValidationError, match="not an http"):
        Settings(_env_file=None, plc_url="plc.directory")
    with pytest.raises(ValidationError, match="not an http"):
        Settings(_env_file=None, card_search_url="api.semble.so")
    assert Settings(_env_file=None).plc_url == "https://plc.directory"
