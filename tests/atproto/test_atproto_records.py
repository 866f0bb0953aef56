"""phi's records on the real local PDS: round trips, refusals, the attention pool."""

from __future__ import annotations

import pytest
from dirty_equals import IsStr

from phi.atproto import (
    AttentionPool,
    CosmikCard,
    CosmikConnection,
    Goal,
    InvalidRecord,
    MentionConsent,
    Observation,
    PhiClient,
    RecordNotFound,
    StoredRecord,
)
from phi.atproto.sandbox import Sandbox

pytestmark = pytest.mark.anyio


async def test_records_round_trip(phi: PhiClient) -> None:
    goal = Goal(title="make 3 friends", description="real ones", progress_signal="3 mutual follows")
    ref = await phi.put_record(goal, "make-friends")
    assert ref.uri == f"at://{phi.me.did}/io.phi.goal/make-friends"
    stored = await phi.get_record(Goal, "make-friends")
    assert stored.value == goal
    assert stored.cid == ref.cid
    assert [s.rkey for s in await phi.list_records(Goal)] == ["make-friends"]

    note = await phi.create_record(CosmikCard.note("crows hold grudges"))
    link = await phi.create_record(CosmikCard.bookmark("https://example.org/crows", title="Crows"))
    edge = CosmikConnection(source=note.uri, target=link.uri, connection_type="SUPPORTS")
    edge_ref = await phi.create_record(edge)
    assert edge_ref.uri == IsStr(regex=rf"at://{phi.me.did}/network\.cosmik\.connection/.+")
    cards = {s.value.type: s.value for s in await phi.list_records(CosmikCard)}
    assert cards["NOTE"] == CosmikCard.note("crows hold grudges").model_copy(
        update={"created_at": cards["NOTE"].created_at}
    )
    assert cards["URL"].url == "https://example.org/crows"
    assert (await phi.get_record(CosmikConnection, edge_ref.rkey)).value == edge

    await phi.delete_record(Goal, "make-friends")
    with pytest.raises(RecordNotFound, match=r"io\.phi\.goal/make-friends"):
        await phi.get_record(Goal, "make-friends")


async def test_invalid_records_are_refused_before_writing(phi: PhiClient) -> None:
    with pytest.raises(InvalidRecord, match="more than 64 graphemes"):
        await phi.create_record(Goal(title="x" * 80, description="d", progress_signal="p"))
    with pytest.raises(InvalidRecord, match=r"record\.handle is not a valid handle"):
        await phi.put_record(MentionConsent(handle="not a handle"), "nope")
    with pytest.raises(InvalidRecord, match=r"record\.createdAt is required"):
        await phi.create_raw_record(
            "io.phi.observation", {"$type": "io.phi.observation", "content": "x"}
        )
    with pytest.raises(InvalidRecord, match="phi writes only"):
        await phi.create_raw_record(
            "app.bsky.feed.post", {"$type": "app.bsky.feed.post", "text": "x"}
        )
    assert await phi.list_records(MentionConsent) == []


class ListArchive:
    """An archive that keeps what it is given (memory's role in the real agent)."""

    def __init__(self) -> None:
        self.archived: list[StoredRecord[Observation]] = []

    async def archive_observation(self, observation: StoredRecord[Observation]) -> None:
        self.archived.append(observation)


async def test_attention_pool_keeps_five_and_archives_the_oldest(phi: PhiClient) -> None:
    archive = ListArchive()
    pool = AttentionPool(phi, archive=archive)
    for i in range(7):
        await pool.observe(Observation(content=f"noticed {i}"))
    active = await pool.active()
    assert [s.value.content for s in active] == [f"noticed {i}" for i in range(2, 7)]
    assert [s.value.content for s in archive.archived] == ["noticed 0", "noticed 1"]
    await pool.drop(active[0].rkey)
    assert len(await pool.active()) == 4
    assert archive.archived[-1].value.content == "noticed 2"


async def test_mention_consent_record_allows_tagging(sandbox: Sandbox, phi: PhiClient) -> None:
    [before] = await phi.post("hello @bob.test")
    await phi.put_record(MentionConsent(handle="bob.test"), "bob.test")
    [after] = await phi.post("hello again @bob.test")
    await sandbox.wait_for_indexing()
    assert (await phi.get_post(before.uri)).facets == []
    assert [f.kind for f in (await phi.get_post(after.uri)).facets] == ["mention"]
    await phi.delete_record(MentionConsent, "bob.test")
