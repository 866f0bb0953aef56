"""`Store.forget` and `forget_row` for the PostgreSQL store: hard deletes, in the caller's write
transaction (after `lock_writes`, so the text statistics stay exact).

Which rows go is the provenance rule of `Store.forget`, as in `_sqlite_forget`: the
namespace, the person's rows in any namespace (by `author` and by their own record URIs in
`source_uris`), then every row derived from an erased row (`meta["derived_from"]` or a
`causal` edge), to a fixed point.

`Store.forget_row` (`erase_row`) runs `_derivation.RowWalk` over this backend's reads: the
row, then the rows whose only sources are erased rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

from phi.errors import NamespaceNotFound, RowNotFound
from phi.memory.store._derivation import (
    LEARNED_BY,
    MEMORY_URI,
    Node,
    RowWalk,
    derived_closure,
    node,
    split_keys,
)
from phi.memory.store._pg_learning import delete_state
from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_write import set_status
from phi.memory.store.base import DERIVED_FROM, PUBLISHED_URIS, ForgetReport
from phi.memory.store.row_forget import RowForgetReport

__all__ = ["erase", "erase_row"]


async def erase(
    conn: Conn, namespace: str, author: str | None, state: Sequence[tuple[str, str]]
) -> ForgetReport:
    """`Store.forget` inside the caller's write transaction."""
    erased_state = 0
    for scope, key in state:
        erased_state += await delete_state(conn, scope, key)
    seeds = await _seed_ids(conn, namespace, author)
    ids = seeds | await _derived_closure(conn, seeds)
    if not ids:
        if erased_state == 0:
            raise NamespaceNotFound(namespace)
        return ForgetReport(namespace=namespace, rows=0, edges=0, kinds={}, state=erased_state)
    report = await _erase_ids(conn, namespace, sorted(ids))
    return dataclasses.replace(report, state=erased_state)


async def _seed_ids(conn: Conn, namespace: str, author: str | None) -> set[int]:
    """The namespace's rows and, with `author`, the person's rows anywhere."""
    if author is None:
        cur = await conn.execute("SELECT id FROM rows WHERE namespace = %s", (namespace,))
        return {int(i) for (i,) in await cur.fetchall()}
    prefix = f"at://{author}/"
    cur = await conn.execute(
        "SELECT id FROM rows WHERE namespace = %(ns)s OR author = %(author)s"
        # Rows made from the person's own records, e.g. their post archived elsewhere.
        " OR EXISTS (SELECT 1 FROM unnest(source_uris) u"
        " WHERE left(u, %(n)s) = %(prefix)s)",
        {"ns": namespace, "author": author, "n": len(prefix), "prefix": prefix},
    )
    return {int(i) for (i,) in await cur.fetchall()}


async def _derived_closure(conn: Conn, seeds: set[int]) -> set[int]:
    """Every row derived, directly or through other rows, from `seeds` (not the seeds)."""
    # The whole derivation graph, read once: a small share of a store, and forget is rare. A
    # value that is not a list (damaged data) names nothing rather than failing the erase.
    cur = await conn.execute(
        "SELECT s.id, r.id FROM rows r"
        " CROSS JOIN LATERAL jsonb_array_elements_text(CASE WHEN"
        " jsonb_typeof(r.meta -> %(key)s) = 'array' THEN r.meta -> %(key)s"
        " ELSE '[]'::jsonb END) AS j(source)"
        " JOIN rows s ON s.row_id = j.source WHERE r.meta ? %(key)s"
        " UNION SELECT src, dst FROM edges WHERE type = 'causal'",
        {"key": DERIVED_FROM},
    )
    made_from: dict[int, set[int]] = {}
    for source, derived in await cur.fetchall():
        made_from.setdefault(int(source), set()).add(int(derived))
    return derived_closure(seeds, made_from)


async def _erase_ids(conn: Conn, namespace: str, ids: list[int]) -> ForgetReport:
    """Delete these rows with everything hanging off them, keeping the BM25 statistics."""
    cur = await conn.execute(
        "SELECT namespace, kind, count(*), sum(doc_len) FROM rows WHERE id = ANY(%s) GROUP BY 1, 2",
        (ids,),
    )
    kinds: dict[str, int] = {}
    derived: dict[str, int] = {}
    length = 0
    for ns, kind, n, doc_len in await cur.fetchall():
        kinds[kind] = kinds.get(kind, 0) + int(n)
        length += int(doc_len)
        if ns != namespace:
            derived[ns] = derived.get(ns, 0) + int(n)
    cur = await conn.execute(
        "SELECT DISTINCT u FROM rows r CROSS JOIN LATERAL jsonb_array_elements_text(CASE WHEN"
        " jsonb_typeof(r.meta -> %(key)s) = 'array' THEN r.meta -> %(key)s"
        " ELSE '[]'::jsonb END) AS j(u) WHERE r.id = ANY(%(ids)s)",
        {"key": PUBLISHED_URIS, "ids": ids},
    )
    published = tuple(sorted(str(u) for (u,) in await cur.fetchall()))
    cur = await conn.execute(
        "SELECT count(*) FROM edges WHERE src = ANY(%(ids)s) OR dst = ANY(%(ids)s)",
        {"ids": ids},
    )
    (edges,) = await cur.fetchone() or (0,)
    await conn.execute(
        "UPDATE term_df d SET df = d.df - x.n FROM (SELECT term, count(*) AS n"
        " FROM row_terms WHERE id = ANY(%s) GROUP BY term) x WHERE d.term = x.term",
        (ids,),
    )
    await conn.execute("DELETE FROM term_df WHERE df <= 0")
    await conn.execute(
        "UPDATE text_stats SET n_rows = n_rows - %s, total_len = total_len - %s",
        (len(ids), length),
    )
    # Vectors, postings, references, edges and learning marks go by cascade.
    await conn.execute("DELETE FROM rows WHERE id = ANY(%s)", (ids,))
    return ForgetReport(
        namespace=namespace,
        rows=len(ids),
        edges=int(edges),
        kinds=kinds,
        derived=dict(sorted(derived.items())),
        published=published,
    )


# -- one row -----------------------------------------------------------------------------

_NODE_SQL = (
    "SELECT id, row_id, namespace, source_uris, meta -> %(derived)s, meta ? %(learned)s,"
    " supersedes FROM rows"
)
_KEYS = {"derived": DERIVED_FROM, "learned": LEARNED_BY}


async def erase_row(
    conn: Conn, row_id: str, confine: Callable[[str], bool] | None
) -> RowForgetReport:
    """`Store.forget_row` inside the caller's write transaction."""
    found = await _nodes(conn, "row_id = %(row_id)s", {"row_id": row_id})
    if not found or (confine is not None and not confine(found[0].namespace)):
        raise RowNotFound(row_id)
    walk = RowWalk(start=found[0], confine=confine)
    while keys := walk.pending():
        made = await _nodes(conn, "id = ANY(%(ids)s)", {"ids": await _naming(conn, keys)})
        providers = await _providing(conn, walk.sources_of(made))
        walk.step(made, await _nodes(conn, "id = ANY(%(ids)s)", {"ids": providers}))
    erased = walk.ordered()
    report = await _erase_ids(conn, found[0].namespace, sorted(n.key for n in erased))
    return RowForgetReport(
        row_id=row_id,
        erased=tuple(n.row_id for n in erased),
        edges=report.edges,
        kinds=report.kinds,
        reinstated=await _reinstate(conn, erased),
        published=report.published,
    )


async def _nodes(conn: Conn, where: str, args: dict[str, object]) -> list[Node]:
    cur = await conn.execute(f"{_NODE_SQL} WHERE {where}", {**_KEYS, **args})
    return [
        node(
            key=int(key),
            row_id=rid,
            namespace=ns,
            source_uris=uris,
            derived_from=named,
            learned=bool(learned),
            supersedes=supersedes,
        )
        for key, rid, ns, uris, named, learned, supersedes in await cur.fetchall()
    ]


async def _naming(conn: Conn, keys: Iterable[str]) -> list[int]:
    """Rows whose sources may name one of `keys` (the walk checks exactly)."""
    ids, uris = split_keys(keys)
    cur = await conn.execute(
        "SELECT id FROM rows WHERE (jsonb_typeof(meta -> %(derived)s) = 'array'"
        " AND (meta -> %(derived)s) ?| %(ids)s::text[]) OR source_uris && %(uris)s::text[]",
        {"derived": DERIVED_FROM, "ids": ids, "uris": [f"{MEMORY_URI}{i}" for i in ids] + uris},
    )
    return [int(i) for (i,) in await cur.fetchall()]


async def _providing(conn: Conn, keys: Iterable[str]) -> list[int]:
    """Rows that may provide one of `keys` (the walk checks exactly)."""
    ids, uris = split_keys(keys)
    cur = await conn.execute(
        "SELECT id FROM rows WHERE row_id = ANY(%(ids)s::text[])"
        " OR source_uris && %(uris)s::text[]",
        {"ids": ids, "uris": uris},
    )
    return [int(i) for (i,) in await cur.fetchall()]


async def _reinstate(conn: Conn, erased: Sequence[Node]) -> tuple[str, ...]:
    """Make current again the rows erased rows had superseded, unless another supersedes them."""
    gone = {n.row_id for n in erased}
    older = sorted({n.supersedes for n in erased if n.supersedes} - gone)
    if not older:
        return ()
    cur = await conn.execute(
        "SELECT o.row_id FROM rows o WHERE o.row_id = ANY(%s::text[])"
        " AND o.status = 'superseded'"
        " AND NOT EXISTS (SELECT 1 FROM rows n WHERE n.supersedes = o.row_id)"
        " AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.dst = o.id AND e.type = 'supersedes')",
        (older,),
    )
    back = sorted(str(rid) for (rid,) in await cur.fetchall())
    if back:
        await set_status(conn, back, "active", datetime.now(UTC))
    return tuple(back)
