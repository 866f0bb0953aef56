"""The poller on a bad day, on the local network: a post deleted under a batch, a backlog of
more than one page, a restart in the middle of a flood. No notification is lost, and none is
marked seen unless phi ran on it or dropped it on purpose."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from atproto_client import AsyncClient  # type: ignore[import-untyped]
from pydantic_ai import ToolCallPart

from phi.agent import build_batch
from phi.agent.deps import Batch
from phi.atproto import NotificationPage, PhiClient
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.errors import InvalidInput, StoreError
from phi.memory import Memory
from phi.runtime import poller
from phi.runtime.unread import read_unread

from ._brain import Brain, call, mentions
from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]


@pytest.fixture
async def alice_app(cast: SandboxInfo) -> AsyncIterator[AsyncClient]:
    """alice's own Bluesky app (the SDK), which can delete her posts."""
    account = cast.account("alice")
    client = AsyncClient(base_url=cast.pds_url)
    await client.login(account.handle, account.app_password, fetch_bsky_profile=False)
    try:
        yield client
    finally:
        await client.request.close()


async def reply_to_everyone(prompt: str, step: int) -> list[ToolCallPart]:
    if step > 0:
        return []
    return [call("reply_to", uri=uri, text=f"hi @{handle}") for handle, uri in mentions(prompt)]


async def stay_silent(prompt: str, step: int) -> list[ToolCallPart]:
    return []


async def unread_count(phi: PhiClient) -> int:
    page = await phi.list_notifications(limit=100)
    return sum(1 for n in page.notifications if not n.is_read)


async def test_a_deleted_mention_leaves_the_rest_of_the_batch_answered(
    runtime: RuntimeFactory,
    phi: PhiClient,
    alice: PhiClient,
    bob: PhiClient,
    alice_app: AsyncClient,
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (first,) = await alice.post("@phi.test what do herons eat?")
    (second,) = await bob.post("@phi.test are kingfishers shy?")
    (doomed,) = await alice.post("@phi.test never mind, ignore this")
    await sandbox.wait_for_indexing()
    brain = Brain(reply_to_everyone)
    async with runtime(brain) as phi_runtime:
        listed = phi_runtime.client.list_notifications

        async def list_then_delete(
            *, limit: int = 50, cursor: str | None = None
        ) -> NotificationPage:
            # alice deletes her post after phi listed its notifications, before the batch
            # is built: the thread fetch for it now finds nothing.
            page = await listed(limit=limit, cursor=cursor)
            await alice_app.delete_post(doomed.uri)
            await sandbox.wait_for_indexing()
            return page

        monkeypatch.setattr(phi_runtime.client, "list_notifications", list_then_delete)
        report = await phi_runtime.tick()

    assert sorted(n.uri for n in report.admitted) == sorted([first.uri, second.uri])
    assert [(n.uri, why) for n, why in report.dropped] == [(doomed.uri, "post deleted")]
    assert sorted(r.in_reply_to or "" for r in report.replies) == sorted([first.uri, second.uri])
    assert doomed.uri not in brain.prompts[0]
    await sandbox.wait_for_indexing()
    for asked in (first, second):
        thread = await phi.get_thread(asked.uri)
        assert [p.author_handle for p in thread.posts if p.reply_parent] == ["phi.test"]
    assert await unread_count(phi) == 0


async def test_a_profile_that_cannot_be_fetched_leaves_the_notification_in(
    phi: PhiClient, alice: PhiClient, memory: Memory, sandbox: Sandbox
) -> None:
    (post,) = await alice.post("@phi.test hello from an account that is about to vanish")
    await sandbox.wait_for_indexing()
    (real,) = [n for n in (await phi.list_notifications()).notifications if n.uri == post.uri]
    # The same notification, as if its author's account were gone: no profile to fetch.
    vanished = replace(real, author_did="did:plc:vanishedaccount00000000")
    batch = await build_batch(phi, memory, [vanished], owner_handle=None)
    (item,) = batch.items
    assert item.post is not None and item.post.uri == post.uri
    assert batch.author_lookups == {}


async def test_a_batch_that_fails_to_build_is_retried_not_lost(
    runtime: RuntimeFactory,
    phi: PhiClient,
    alice: PhiClient,
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (asked,) = await alice.post("@phi.test still there?")
    await sandbox.wait_for_indexing()
    built = build_batch  # what the poller calls, until the patch below
    failures = [StoreError("the memory store is locked by another program")]

    async def fails_once(*args: Any, **kwargs: Any) -> Batch:
        if failures:
            raise failures.pop()
        return await built(*args, **kwargs)

    monkeypatch.setattr(poller, "build_batch", fails_once)
    brain = Brain(reply_to_everyone)
    async with runtime(brain) as phi_runtime:
        with pytest.raises(StoreError):
            await phi_runtime.tick()
        assert await unread_count(phi) == 1  # phi did nothing with it: still unread
        again = await phi_runtime.tick()
        counted = phi_runtime.admission.rate_limit.count(alice.me.did, phi_runtime.clock())
    assert [n.uri for n in again.admitted] == [asked.uri]
    assert [r.in_reply_to for r in again.replies] == [asked.uri]
    assert counted == 1  # screened twice, counted once
    assert await unread_count(phi) == 0


async def test_a_backlog_longer_than_one_page_is_all_handled(
    runtime: RuntimeFactory, phi: PhiClient, alice: PhiClient, bob: PhiClient, sandbox: Sandbox
) -> None:
    # 52 unread mentions: more than the default page of 50, two authors under the rate
    # limit of 30 each.
    posted = []
    for n in range(26):
        posted += await alice.post(f"@phi.test backlog alice {n}")
        posted += await bob.post(f"@phi.test backlog bob {n}")
    await sandbox.wait_for_indexing()
    brain = Brain(stay_silent)
    async with runtime(brain) as phi_runtime:
        assert phi_runtime.notification_page == 50
        report = await phi_runtime.tick()
    assert sorted(n.uri for n in report.admitted) == sorted(ref.uri for ref in posted)
    assert report.dropped == []
    assert {uri for _, uri in mentions(brain.prompts[0])} == {ref.uri for ref in posted}
    assert await unread_count(phi) == 0


async def test_paging_stops_at_its_bound_and_says_so(
    runtime: RuntimeFactory,
    phi: PhiClient,
    alice: PhiClient,
    sandbox: Sandbox,
    caplog: pytest.LogCaptureFixture,
) -> None:
    posted = []
    for n in range(5):
        posted += await alice.post(f"@phi.test outage {n}")
    await sandbox.wait_for_indexing()
    async with runtime(Brain(stay_silent)) as phi_runtime:
        phi_runtime.notification_page, phi_runtime.max_notification_pages = 2, 2
        with caplog.at_level(logging.WARNING, logger="phi.runtime"):
            report = await phi_runtime.tick()
        health = await phi_runtime.health()
    # The newest four (two pages) were handled; the oldest is past the bound.
    assert [n.uri for n in report.admitted] == [ref.uri for ref in posted[1:]]
    assert "read 2 pages of unread notifications (4) and stopped" in caplog.text
    assert health["counters"]["notification_pages_exhausted"] == 1
    with pytest.raises(InvalidInput, match="max_pages must be at least 1, got 50 and 0"):
        await read_unread(phi, max_pages=0)


async def test_a_mention_that_arrives_during_the_run_stays_unread(
    runtime: RuntimeFactory, alice: PhiClient, bob: PhiClient, sandbox: Sandbox
) -> None:
    late: list[str] = []

    async def bob_writes_meanwhile(prompt: str, step: int) -> list[ToolCallPart]:
        if not late:
            (ref,) = await bob.post("@phi.test sorry, one more thing")
            await sandbox.wait_for_indexing()
            late.append(ref.uri)
        return []

    (early,) = await alice.post("@phi.test morning!")
    await sandbox.wait_for_indexing()
    async with runtime(Brain(bob_writes_meanwhile)) as phi_runtime:
        first = await phi_runtime.tick()
        second = await phi_runtime.tick()
    assert [n.uri for n in first.admitted] == [early.uri]
    assert [n.uri for n in second.admitted] == late


async def test_the_rate_limit_window_survives_a_restart(
    runtime: RuntimeFactory, bob: PhiClient, sandbox: Sandbox
) -> None:
    for n in range(30):
        await bob.post(f"@phi.test flood {n}")
    await sandbox.wait_for_indexing()
    async with runtime(Brain(stay_silent)) as phi_runtime:
        report = await phi_runtime.tick()
    assert (len(report.admitted), report.dropped) == (30, [])

    # phi restarts: a new runtime, its memory (the same file) as it was left.
    (last,) = await bob.post("@phi.test flood 30")
    await sandbox.wait_for_indexing()
    async with runtime(Brain(stay_silent)) as restarted:
        again = await restarted.tick()
    assert again.admitted == []
    ((dropped, reason),) = again.dropped
    assert (dropped.uri, reason) == (last.uri, "rate limit: 30/hour from @bob.test")
