"""phi sees: a batch's pictures reach a model that takes images, byte for byte, on the local
network; a text-only model reads their alt text; what is too big is never fetched; a quoted
post's picture comes too; and a picture address on loopback other than phi's PDS is refused."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import struct
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from atproto_client import AsyncClient, models  # type: ignore[import-untyped]
from dirty_equals import IsStr
from pydantic_ai import ModelMessage, ModelResponse, TextPart
from pydantic_ai.messages import BinaryContent, ModelRequest, SystemPromptPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile

from phi.agent import AgentConfig, build_agent
from phi.agent.deps import Vision
from phi.agent.images import BatchImage, fetch_images
from phi.atproto import ImageRef, PhiClient
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.atproto.text import find_facets
from phi.memory import Memory, MiniLMEmbedder
from phi.memory.model import utc_now
from phi.runtime.journal import JournalImage, RunJournal
from phi.runtime.poller import PhiRuntime
from phi.runtime.ratelimit import Admission
from phi.runtime.schedules import Schedule, ScheduleConfig
from phi.runtime.timing import TimedModel
from tests._serving import serving

from .conftest import OWNER

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("quiet"),
    # The SDK's own `upload_blob` passes bytes the way httpx now warns about.
    pytest.mark.filterwarnings("ignore:Use 'content=<...>' to upload raw bytes:DeprecationWarning"),
]


def png(width: int = 4, height: int = 4) -> bytes:
    """A real PNG of random pixels (the PDS sniffs uploads): each call a new blob."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Eyes:
    """A scripted model that keeps what each run's first request carried."""

    sees: bool = True
    user_prompts: list[list[Any]] = field(default_factory=list)
    system_prompts: list[str] = field(default_factory=list)

    async def _answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        if len(messages) == 1:
            (request,) = messages
            assert isinstance(request, ModelRequest)
            for part in request.parts:
                if isinstance(part, UserPromptPart):
                    content = part.content
                    self.user_prompts.append([content] if isinstance(content, str) else [*content])
            self.system_prompts.append(
                "\n\n".join(p.content for p in request.parts if isinstance(p, SystemPromptPart))
            )
        return ModelResponse(parts=[TextPart("seen")])

    def model(self) -> FunctionModel:
        profile = None if self.sees else ModelProfile(supports_image_input=False)
        return FunctionModel(self._answer, profile=profile)

    def images(self) -> list[BinaryContent]:
        return [c for c in self.user_prompts[-1] if isinstance(c, BinaryContent)]

    def text(self) -> str:
        return "\n".join(c for c in self.user_prompts[-1] if isinstance(c, str))


@pytest.fixture
async def alice_app(cast: SandboxInfo) -> AsyncIterator[AsyncClient]:
    """alice's own Bluesky app (the SDK), which posts pictures."""
    account = cast.account("alice")
    client = AsyncClient(base_url=cast.pds_url)
    await client.login(account.handle, account.app_password, fetch_bsky_profile=False)
    client.me_did = account.did  # the SDK learns `me` only from the profile it did not fetch
    try:
        yield client
    finally:
        await client.request.close()


@pytest.fixture
async def bob_app(cast: SandboxInfo) -> AsyncIterator[AsyncClient]:
    account = cast.account("bob")
    client = AsyncClient(base_url=cast.pds_url)
    await client.login(account.handle, account.app_password, fetch_bsky_profile=False)
    client.me_did = account.did  # the SDK learns `me` only from the profile it did not fetch
    try:
        yield client
    finally:
        await client.request.close()


def pictures(blobs: list[tuple[Any, str]]) -> models.AppBskyEmbedImages.Main:
    return models.AppBskyEmbedImages.Main(
        images=[models.AppBskyEmbedImages.Image(alt=alt, image=blob) for blob, alt in blobs]
    )


async def post_to_phi(app: AsyncClient, cast: SandboxInfo, text: str, embed: Any) -> str:
    """`text` mentioning phi (a real mention facet, so phi is notified) with `embed`."""
    phi = cast.account("phi")
    facets = [f.to_sdk() for f in find_facets(text, mention_dids={phi.handle: phi.did})]
    written = await app.send_post(text, embed=embed, facets=facets, profile_identify=app.me_did)
    return str(written.uri)


@asynccontextmanager
async def phi_seeing(
    eyes: Eyes,
    cast: SandboxInfo,
    minilm: MiniLMEmbedder,
    tmp_path: Path,
    *,
    vision: Vision = "auto",
    image_max_bytes: int = 5_000_000,
) -> AsyncIterator[PhiRuntime]:
    config = AgentConfig(owner_handle=OWNER, vision=vision, image_max_bytes=image_max_bytes)
    timed = TimedModel(eyes.model())
    async with (
        PhiClient(cast.client_config("phi")) as client,
        Memory.open(tmp_path / "memory.db", embedder=minilm) as memory,
    ):
        yield PhiRuntime(
            client=client,
            memory=memory,
            agent=build_agent(timed, config),
            config=config,
            admission=Admission(self_did=client.me.did),
            schedule=Schedule(
                ScheduleConfig(musing_hours=frozenset(), reflection_hour=None),
                started_at=utc_now(),
            ),
            model_timer=timed,
            journal=RunJournal(path=tmp_path / "runs.db"),
        )


async def test_a_picture_reaches_a_model_that_sees_byte_for_byte(
    cast: SandboxInfo,
    sandbox: Sandbox,
    alice_app: AsyncClient,
    minilm: MiniLMEmbedder,
    tmp_path: Path,
) -> None:
    image = png()
    blob = (await alice_app.upload_blob(image)).blob
    uri = await post_to_phi(
        alice_app, cast, "@phi.test what bird is this?", pictures([(blob, "a heron on one leg")])
    )
    await sandbox.wait_for_indexing()

    eyes = Eyes()
    async with phi_seeing(eyes, cast, minilm, tmp_path) as phi:
        # `phi prompt --preview` shows the user's turn too: the picture as a line, not bytes.
        preview = await phi.preview()
        await phi.tick()
        assert phi.journal is not None
        (record,) = await phi.journal.recent()
    user_turn = preview.split("[USER PROMPT — what the run sends as the user's turn]\n", 1)[1]
    assert '<external-images shown="1" of="1">' in user_turn
    assert f"[image part: image/png, {len(image):,} bytes, from " in user_turn
    assert f"cid={blob.cid}]" in user_turn

    (seen,) = eyes.images()
    assert (sha(seen.data), seen.media_type) == (sha(image), "image/png")
    text = eyes.text()
    assert (
        f"""@alice.test's picture in the post {uri}: alt text "a heron on one leg"; \
image 1 below"""
        in text
    )
    assert '<external-images shown="1" of="1">' in text
    # The batch block still names the picture for every model.
    assert "[image: a heron on one leg]" in eyes.system_prompts[-1]
    # The journal says a picture was passed, and from where, not what it was.
    source: Any = IsStr(regex=rf".*/xrpc/com\.atproto\.sync\.getBlob\?did=.+&cid={blob.cid}$")
    assert record.images == (JournalImage(media_type="image/png", size=len(image), source=source),)
    assert record.to_json()["images"] == [
        {"media_type": "image/png", "size": len(image), "source": source}
    ]


@pytest.mark.parametrize(("sees", "vision"), [(False, "auto"), (True, "off")])
async def test_a_text_only_model_reads_the_alt_text(
    sees: bool,
    vision: Vision,
    cast: SandboxInfo,
    sandbox: Sandbox,
    alice_app: AsyncClient,
    minilm: MiniLMEmbedder,
    tmp_path: Path,
) -> None:
    blob = (await alice_app.upload_blob(png())).blob
    await post_to_phi(
        alice_app, cast, "@phi.test look at this", pictures([(blob, "a kingfisher, blue")])
    )
    await sandbox.wait_for_indexing()

    eyes = Eyes(sees=sees)
    async with phi_seeing(eyes, cast, minilm, tmp_path, vision=vision) as phi:
        await phi.tick()
        assert phi.journal is not None
        (record,) = await phi.journal.recent()

    assert eyes.user_prompts[-1] == ["process your new notifications batch — silence is fine."]
    assert "[image: a kingfisher, blue]" in eyes.system_prompts[-1]
    assert record.images == ()


@dataclass
class Recorder(httpx.AsyncBaseTransport):
    """The real transport, with every request it sends written down."""

    sent: list[str] = field(default_factory=list)
    inner: httpx.AsyncHTTPTransport = field(default_factory=httpx.AsyncHTTPTransport)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(str(request.url))
        return await self.inner.handle_async_request(request)


async def test_an_oversize_picture_is_not_fetched(
    cast: SandboxInfo,
    sandbox: Sandbox,
    alice_app: AsyncClient,
    minilm: MiniLMEmbedder,
    tmp_path: Path,
) -> None:
    big, small = png(64, 64), png()
    big_blob = (await alice_app.upload_blob(big)).blob
    small_blob = (await alice_app.upload_blob(small)).blob
    limit = len(big) - 1
    assert len(small) <= limit
    uri = await post_to_phi(
        alice_app,
        cast,
        "@phi.test two birds",
        pictures([(big_blob, "a big owl"), (small_blob, "a small wren")]),
    )
    await sandbox.wait_for_indexing()

    eyes = Eyes()
    async with phi_seeing(eyes, cast, minilm, tmp_path, image_max_bytes=limit) as phi:
        await phi.tick()

    (seen,) = eyes.images()
    assert sha(seen.data) == sha(small)
    assert f"""@alice.test's picture in the post {uri}: alt text "a big owl"; not shown: \
{len(big):,} bytes, over the {limit:,}-byte limit""" in eyes.text()

    # Not fetched at all: no request leaves for it.
    recorder = Recorder()
    ref = ImageRef(
        did=cast.account("alice").did, cid=str(big_blob.cid), mime_type="image/png", size=len(big)
    )
    async with httpx.AsyncClient(transport=recorder) as http:
        (fetched,) = await fetch_images(
            [BatchImage(post_uri=uri, author_handle="alice.test", ref=ref)],
            pds_url=cast.pds_url,
            max_bytes=limit,
            limit=4,
            client=http,
        )
    assert (fetched.data, recorder.sent) == (None, [])
    # A record that understates the size is caught while reading.
    understated = ImageRef(did=ref.did, cid=ref.cid, mime_type="image/png", size=10)
    async with httpx.AsyncClient(transport=recorder) as http:
        (fetched,) = await fetch_images(
            [BatchImage(post_uri=uri, author_handle="alice.test", ref=understated)],
            pds_url=cast.pds_url,
            max_bytes=limit,
            limit=4,
            client=http,
        )
    assert fetched.data is None and recorder.sent
    assert fetched.skipped == IsStr(regex=rf".*{len(big):,} bytes, over the {limit:,}-byte limit")


async def test_a_quoted_posts_picture_arrives_with_the_quoting_posts_own(
    cast: SandboxInfo,
    sandbox: Sandbox,
    alice_app: AsyncClient,
    bob_app: AsyncClient,
    minilm: MiniLMEmbedder,
    tmp_path: Path,
) -> None:
    boat, proof = png(), png()
    boat_blob = (await bob_app.upload_blob(boat)).blob
    quoted = await bob_app.send_post(
        "my new boat", embed=pictures([(boat_blob, "a red boat")]), profile_identify=bob_app.me_did
    )
    await sandbox.wait_for_indexing()
    proof_blob = (await alice_app.upload_blob(proof)).blob
    with_media = models.AppBskyEmbedRecordWithMedia.Main(
        record=models.AppBskyEmbedRecord.Main(
            record=models.ComAtprotoRepoStrongRef.Main(uri=quoted.uri, cid=quoted.cid)
        ),
        media=pictures([(proof_blob, "the same boat, sinking")]),
    )
    uri = await post_to_phi(alice_app, cast, "@phi.test is this boat seaworthy?", with_media)
    await sandbox.wait_for_indexing()

    eyes = Eyes()
    async with phi_seeing(eyes, cast, minilm, tmp_path) as phi:
        await phi.tick()

    assert [sha(c.data) for c in eyes.images()] == [sha(proof), sha(boat)]
    text = eyes.text()
    assert f'@alice.test\'s picture in the post {uri}: alt text "the same boat, sinking"' in text
    assert (
        f'@bob.test\'s picture in the post it quotes {uri}: alt text "a red boat"; image 2 below'
    ) in text
    assert (
        "[quote @bob.test: my new boat [image: a red boat]] [image: the same boat, sinking]"
        in (eyes.system_prompts[-1])
    )


async def test_a_picture_on_a_foreign_loopback_port_is_refused(cast: SandboxInfo) -> None:
    hits: list[str] = []
    image = png()
    served_as = [b"image/png"]

    async def picture_server(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        hits.append(scope["path"])
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", served_as[-1])],  # no length: sent chunked
            }
        )
        half = len(image) // 2
        await send({"type": "http.response.body", "body": image[:half], "more_body": True})
        await send({"type": "http.response.body", "body": image[half:]})

    async with serving(picture_server) as port:
        # A blob phi's PDS does not have, whose AppView address is on this machine.
        ref = ImageRef(
            did=cast.account("alice").did,
            cid="bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
            mime_type="image/png",
            size=len(image),
            alt="a trap",
            url=f"http://localhost:{port}/img/feed_fullsize/plain/x/y",
        )
        wanted = [BatchImage(post_uri="at://x/app.bsky.feed.post/1", author_handle="a", ref=ref)]
        (refused,) = await fetch_images(wanted, pds_url=cast.pds_url, max_bytes=10**6, limit=4)
        assert hits == []
        assert refused.data is None
        assert refused.skipped == IsStr(
            regex=r".*HTTP 400 .*; refused .*'localhost' is this machine"
        )

        # The same server as phi's configured PDS is trusted configuration: fetched.
        (trusted,) = await fetch_images(
            wanted, pds_url=f"http://localhost:{port}", max_bytes=10**6, limit=4
        )
        assert trusted.data == image and hits == ["/xrpc/com.atproto.sync.getBlob"]

        # What the server sends is held to the limit as it arrives, and must be an image.
        understated = [replace(wanted[0], ref=replace(ref, size=1))]
        (chunked,) = await fetch_images(
            understated, pds_url=f"http://localhost:{port}", max_bytes=len(image) - 1, limit=4
        )
        assert chunked.skipped == IsStr(regex=rf".*more than the {len(image) - 1:,}-byte limit.*")
        served_as.append(b"text/html; charset=utf-8")
        (page,) = await fetch_images(
            wanted, pds_url=f"http://localhost:{port}", max_bytes=10**6, limit=4
        )
        assert page.skipped == IsStr(regex=r".*served as 'text/html', not an image type.*")
        assert len(hits) == 5  # getBlob, then the AppView's address (the same origin here)

        # Numbers for loopback are refused too, on any port but the PDS's.
        numeric = BatchImage(
            post_uri="x",
            author_handle="a",
            ref=ImageRef(
                did="did:plc:x",
                cid="c",
                mime_type="image/png",
                size=1,
                url=f"http://127.0.0.1:{port}/a.png",
            ),
        )
        (refused,) = await fetch_images(
            [numeric], pds_url=f"http://127.0.0.1:{port + 1}", max_bytes=10**6, limit=4
        )
        assert refused.skipped == IsStr(regex=r".*refused .*127\.0\.0\.1 is a loopback address")
        assert len(hits) == 5


async def test_a_journal_kept_before_pictures_opens_and_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE prompts (hash TEXT PRIMARY KEY, text TEXT NOT NULL);"
        "CREATE TABLE runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE,"
        " entry TEXT NOT NULL, started_at TEXT NOT NULL, seconds REAL NOT NULL,"
        " outcome TEXT NOT NULL, output TEXT NOT NULL, prompt_hash TEXT NOT NULL,"
        " model TEXT, requests INTEGER NOT NULL, input_tokens INTEGER NOT NULL,"
        " output_tokens INTEGER NOT NULL, tool_calls TEXT NOT NULL, actions TEXT NOT NULL);"
        "INSERT INTO prompts VALUES ('h', 'the prompt');"
        "INSERT INTO runs (run_id, entry, started_at, seconds, outcome, output, prompt_hash,"
        " model, requests, input_tokens, output_tokens, tool_calls, actions) VALUES ('old1',"
        " 'musing', '2026-11-01T00:00:00+00:00', 1.0, 'ok', 'done', 'h', NULL, 1, 2, 3, '[]',"
        " '[]');"
    )
    old.commit()
    old.close()
    journal = RunJournal(path=path)
    (before,) = await journal.recent()
    assert (before.run_id, before.images) == ("old1", ())

    picture = JournalImage(media_type="image/jpeg", size=1234, source="https://cdn.example/a")
    await journal.add(replace(before, run_id="new1", images=(picture,)))
    assert (await journal.get("new1")).images == (picture,)
