"""`Store.forget` for the PostgreSQL store: the one hard delete, in the caller's write
transaction (after `lock_writes`, so the text statistics stay exact).

Which rows go is the provenance rule of `Store.forget`, as in `_sqlite_forget`: the
namespace, the person's rows in any namespace (by `author` and by their own record URIs in
`source_uris`), then every row derived from an erased row (`meta["derived_from"]` or a
`causal` edge), to a fixed point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

from phi.errors import NamespaceNotFound
from phi.memory.store._pg_learning import delete_state
from phi.memory.store._pg_schema import Conn
from phi.memory.store.base import DERIVED_FROM, PUBLISHED_URIS, ForgetReport

__all__ = ["erase"]

_MAX_DERIVATION_DEPTH: Final = 50
"""A guard against a cycle of derivations in damaged data."""


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
    # Derivations named in meta, read once: few rows carry them, and forget is rare. A
    # value that is not a list (damaged data) names nothing rather than failing the erase.
    cur = await conn.execute(
        "SELECT r.id, s.id FROM rows r"
        " CROSS JOIN LATERAL jsonb_array_elements_text(CASE WHEN"
        " jsonb_typeof(r.meta -> %(key)s) = 'array' THEN r.meta -> %(key)s"
        " ELSE '[]'::jsonb END) AS j(source)"
        " JOIN rows s ON s.row_id = j.source WHERE r.meta ? %(key)s",
        {"key": DERIVED_FROM},
    )
    made_from: dict[int, set[int]] = {}
    for derived, source in await cur.fetchall():
        made_from.setdefault(int(source), set()).add(int(derived))
    found: set[int] = set()
    frontier = set(seeds)
    for _ in range(_MAX_DERIVATION_DEPTH):
        if not frontier:
            break
        reached: set[int] = set()
        for source in frontier:
            reached |= made_from.get(source, set())
        cur = await conn.execute(
            "SELECT dst FROM edges WHERE type = 'causal' AND src = ANY(%s)", (sorted(frontier),)
        )
        reached |= {int(dst) for (dst,) in await cur.fetchall()}
        frontier = reached - seeds - found
        found |= frontier
    return found


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
