"""`RowEraser` conformance: forgetting one row and what was made from it alone.

Mixed into `StoreConformance`, so SQLite and PostgreSQL both run it.
"""

from __future__ import annotations

import pytest

from phi.errors import RowNotFound
from phi.memory.model import Edge, Row
from phi.memory.store import RowFilter, RowForgetReport, Store
from phi.memory.store.base import DERIVED_FROM, PUBLISHED_URIS
from tests.memory.conformance_rows import T0, make_row, vec, w

LEARNED = {"learned_by": "extract"}


def _ids(rows: list[Row]) -> list[str]:
    return sorted(r.row_id for r in rows)


@pytest.mark.anyio
class ForgetRowConformance:
    async def test_forget_row_takes_what_was_made_from_it_alone(self, store: Store) -> None:
        post = "at://did:plc:bob/app.bsky.feed.post/1"
        other = "at://did:plc:bob/app.bsky.feed.post/2"
        said = make_row("bob: I moved to httpx 0.28", kind="interaction", source_uris=(post,))
        also = make_row("bob: and pinned ruff", kind="interaction", source_uris=(other,))
        unsourced = make_row("bob: we use uv", kind="interaction")
        fact = make_row("uses httpx 0.28", kind="observation", source_uris=(post,), meta=LEARNED)
        # Extracted from an exchange without URIs of its own (`phi-memory:<id>`).
        fact2 = make_row(
            "uses uv", kind="observation", source_uris=(f"phi-memory:{unsourced.row_id}",),
            meta=LEARNED,
        )  # fmt: skip
        card = make_row(
            "httpx 0.28 is out", namespace="phi-public",
            meta={DERIVED_FROM: [fact.row_id], PUBLISHED_URIS: ["at://did:plc:phi/card/1"]},
        )  # fmt: skip
        lone = make_row("bob upgrades", kind="summary", source_uris=(post,), meta=LEARNED)
        both = make_row("bob tidies", kind="summary", source_uris=(post, other), meta=LEARNED)
        outcome = make_row("tool_result: 3 files changed")
        rows = [said, also, unsourced, fact, fact2, card, lone, both, outcome]
        await store.write(
            [w(r, vec(1, i, 0, 1), ("httpx",) if r is said else ()) for i, r in enumerate(rows)],
            [
                # A consequence is an event of its own, not a copy: it stays.
                Edge(src=said.row_id, dst=outcome.row_id, edge_type="causal"),
                Edge(src=said.row_id, dst=also.row_id, edge_type="temporal"),
                Edge(src=fact.row_id, dst=card.row_id, edge_type="causal"),
                Edge(src=also.row_id, dst=both.row_id, edge_type="semantic", weight=0.5),
            ],
        )
        await store.mark("extract", [said.row_id, also.row_id], at=T0)

        report = await store.forget_row(said.row_id)

        assert report == RowForgetReport(
            row_id=said.row_id,
            erased=(said.row_id, *sorted([fact.row_id, card.row_id, lone.row_id])),
            edges=3,
            kinds={"interaction": 1, "observation": 1, "note": 1, "summary": 1},
            published=("at://did:plc:phi/card/1",),
        )
        assert report.derived == tuple(sorted([fact.row_id, card.row_id, lone.row_id]))
        kept = [also, unsourced, fact2, both, outcome]
        assert _ids(await store.get_rows([r.row_id for r in rows])) == _ids(kept)
        assert [(e.src, e.dst) for e in await store.edges([also.row_id, outcome.row_id])] == [
            (also.row_id, both.row_id)
        ]
        assert await store.ref_counts(["httpx"]) == {}
        assert await store.text_search(["httpx"], RowFilter(statuses=None), limit=10) == []
        hits = await store.vector_search(vec(1, 0, 0, 1), RowFilter(statuses=None), limit=20)
        assert sorted(h.row_id for h in hits) == _ids(kept)
        assert [m.row_id for m in await store.marks_of([said.row_id, also.row_id])] == [also.row_id]

        second = await store.forget_row(unsourced.row_id)
        assert second.erased == (unsourced.row_id, fact2.row_id)
        with pytest.raises(RowNotFound, match=repr(said.row_id)):
            await store.forget_row(said.row_id)

    async def test_forget_row_follows_derivations_to_a_fixed_point(self, store: Store) -> None:
        base = make_row("exchange", kind="interaction")
        first = make_row("fact", meta={DERIVED_FROM: [base.row_id]})
        second = make_row("fact of a fact", meta={DERIVED_FROM: [first.row_id]})
        own_id = "row-naming-itself"
        mixed = make_row(
            "from two", row_id=own_id,
            meta={DERIVED_FROM: [second.row_id, "gone-long-ago", own_id]},
        )  # fmt: skip
        rows = [base, first, second, mixed]
        await store.write([w(r, vec(0, 1, i, 1)) for i, r in enumerate(rows)], [])
        report = await store.forget_row(base.row_id)
        # A source that no longer exists, or the row itself (damaged data), does not keep a
        # row: only the other present sources count.
        assert set(report.erased) == {r.row_id for r in rows}
        assert report.erased[0] == base.row_id

    async def test_a_forgotten_correction_makes_the_old_row_current(self, store: Store) -> None:
        old = make_row("pin httpx 0.27", at=1)
        await store.write([w(old, vec(1, 0, 0, 0))], [])
        new = make_row("pin httpx 0.28", at=2, supersedes=old.row_id)
        edge = Edge(src=new.row_id, dst=old.row_id, edge_type="supersedes")
        await store.write([w(new, vec(1, 1, 0, 0))], [edge], superseded=[old.row_id])
        assert [r.status for r in await store.get_rows([old.row_id])] == ["superseded"]
        report = await store.forget_row(new.row_id)
        assert (report.erased, report.reinstated, report.edges) == ((new.row_id,), (old.row_id,), 1)
        assert [r.status for r in await store.get_rows([old.row_id])] == ["active"]
        hits = await store.vector_search(vec(1, 0, 0, 0), RowFilter(), limit=5)
        assert [h.row_id for h in hits] == [old.row_id]

    async def test_a_row_superseded_by_another_stays_superseded(self, store: Store) -> None:
        old = make_row("v1", at=1)
        await store.write([w(old, vec(1, 0, 0, 0))], [])
        one = make_row("v2", at=2, supersedes=old.row_id)
        two = make_row("v2 again", at=3, supersedes=old.row_id)
        await store.write([w(one, vec(0, 1, 0, 0)), w(two, vec(0, 0, 1, 0))], [])
        await store.set_status([old.row_id], "superseded", at=T0)
        report = await store.forget_row(one.row_id)
        assert report.reinstated == ()
        assert [r.status for r in await store.get_rows([old.row_id])] == ["superseded"]

    async def test_rows_sharing_its_source_stay_while_one_carries_it(self, store: Store) -> None:
        event = "capture://s1/e1"
        first = make_row("tool_result: part 1", source_uris=(event,))
        second = make_row("tool_result: part 2", source_uris=(event,))
        learned = make_row("the build needs 2 GB", source_uris=(event,), meta=LEARNED)
        rows = [first, second, learned]
        await store.write([w(r, vec(1, 1, i, 0)) for i, r in enumerate(rows)], [])
        # The other chunk is no copy of this one, and the fact still has a source.
        assert (await store.forget_row(first.row_id)).erased == (first.row_id,)
        assert _ids(await store.get_rows([r.row_id for r in rows])) == _ids([second, learned])
        assert (await store.forget_row(second.row_id)).erased == (second.row_id, learned.row_id)

    async def test_only_a_superseded_row_is_reinstated(self, store: Store) -> None:
        current = make_row("v1", at=1)
        claims = make_row("v2", at=2, supersedes=current.row_id)
        await store.write([w(current, vec(1, 0, 0, 0)), w(claims, vec(0, 1, 0, 0))], [])
        report = await store.forget_row(claims.row_id)
        assert report.reinstated == ()
        (kept,) = await store.get_rows([current.row_id])
        assert (kept.status, kept.updated_at) == ("active", current.updated_at)

    async def test_forget_row_within_a_confinement(self, store: Store) -> None:
        mine = make_row("mine", namespace="team-a-notes", kind="interaction")
        inside = make_row("fact", namespace="team-a-facts", meta={DERIVED_FROM: [mine.row_id]})
        outside = make_row("fact", namespace="team-b-facts", meta={DERIVED_FROM: [mine.row_id]})
        theirs = make_row("theirs", namespace="team-b-notes")
        rows = [mine, inside, outside, theirs]
        await store.write([w(r, vec(0, 0, 1, i)) for i, r in enumerate(rows)], [])

        def team_a(namespace: str) -> bool:
            return namespace.startswith("team-a-")

        # Someone else's row is "not found", word for word as a missing one: no hint it exists.
        with pytest.raises(RowNotFound) as refused:
            await store.forget_row(theirs.row_id, confine=team_a)
        with pytest.raises(RowNotFound) as missing:
            await store.forget_row("no-such-row", confine=team_a)
        assert str(refused.value) == str(missing.value).replace("no-such-row", theirs.row_id)
        report = await store.forget_row(mine.row_id, confine=team_a)
        assert set(report.erased) == {mine.row_id, inside.row_id}
        assert _ids(await store.get_rows([r.row_id for r in rows])) == _ids([outside, theirs])
