"""`Store.forget` for the SQLite store: the one hard delete, in the caller's transaction.

Which rows go is the provenance rule of `Store.forget`: the namespace, the person's rows in
any namespace (by `author` and by their own record URIs in `source_uris`), then every row
derived from an erased row (`meta["derived_from"]` or a `causal` edge), to a fixed point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

import apsw

from phi.errors import NamespaceNotFound
from phi.memory.store._sqlite_learning import delete_state
from phi.memory.store._sqlite_sql import chunks, marks
from phi.memory.store.base import DERIVED_FROM, PUBLISHED_URIS, ForgetReport

__all__ = ["erase"]

_MAX_DERIVATION_DEPTH: Final = 50
"""A guard against a cycle of derivations in damaged data."""


def erase(
    conn: apsw.Connection,
    namespace: str,
    author: str | None,
    state: Sequence[tuple[str, str]],
) -> ForgetReport:
    """`Store.forget` inside the caller's write transaction."""
    erased_state = sum(delete_state(conn, scope, key) for scope, key in state)
    report = _erase_rows(conn, namespace, author)
    if report.rows == 0 and erased_state == 0:
        raise NamespaceNotFound(namespace)
    return dataclasses.replace(report, state=erased_state)


def _erase_rows(conn: apsw.Connection, namespace: str, author: str | None) -> ForgetReport:
    """The namespace's rows, the author's rows anywhere, and every row derived from them."""
    ids = {i for (i,) in conn.execute("SELECT id FROM rows WHERE namespace = ?", (namespace,))}
    if author is not None:
        ids |= {i for (i,) in conn.execute("SELECT id FROM rows WHERE author = ?", (author,))}
        # Rows made from the person's own records, e.g. their post archived elsewhere.
        prefix = f"at://{author}/"
        ids |= {
            i
            for (i,) in conn.execute(
                "SELECT DISTINCT r.id FROM rows r, json_each(r.source_uris) u"
                " WHERE substr(u.value, 1, ?) = ?",
                (len(prefix), prefix),
            )
        }
    ids |= _derived_closure(conn, ids)
    if not ids:
        return ForgetReport(namespace=namespace, rows=0, edges=0, kinds={})
    kinds: dict[str, int] = {}
    derived: dict[str, int] = {}
    published: list[str] = []
    edges = 0
    ordered = sorted(ids)
    for chunk in chunks(ordered):
        m = marks(chunk)
        for ns, kind, n in conn.execute(
            f"SELECT namespace, kind, count(*) FROM rows WHERE id IN ({m}) GROUP BY 1, 2", chunk
        ):
            kinds[kind] = kinds.get(kind, 0) + n
            if ns != namespace:
                derived[ns] = derived.get(ns, 0) + n
        published += [
            uri
            for (uri,) in conn.execute(
                f"SELECT j.value FROM rows r, json_each(r.meta, '$.{PUBLISHED_URIS}') j"
                f" WHERE r.id IN ({m})",
                chunk,
            )
            if isinstance(uri, str)
        ]
        touching = f"src IN ({m}) OR dst IN ({m})"
        edges += next(
            conn.execute(f"SELECT count(*) FROM edges WHERE {touching}", [*chunk, *chunk])
        )[0]
        conn.execute(f"DELETE FROM edges WHERE {touching}", [*chunk, *chunk])
        conn.execute(f"DELETE FROM row_refs WHERE id IN ({m})", chunk)
        conn.execute(f"DELETE FROM row_vectors WHERE id IN ({m})", chunk)
        conn.execute(f"DELETE FROM row_text WHERE rowid IN ({m})", chunk)
        conn.execute(f"DELETE FROM row_terms WHERE rowid IN ({m})", chunk)
        conn.execute(f"DELETE FROM rows WHERE id IN ({m})", chunk)
    return ForgetReport(
        namespace=namespace,
        rows=len(ids),
        edges=edges,
        kinds=kinds,
        derived=dict(sorted(derived.items())),
        published=tuple(sorted(set(published))),
    )


def _derived_closure(conn: apsw.Connection, seeds: set[int]) -> set[int]:
    """Every row derived, directly or through other rows, from `seeds` (not the seeds)."""
    # Derivations named in meta, read once: few rows carry them, and forget is rare.
    sql = (
        f"SELECT r.id, s.id FROM rows r, json_each(r.meta, '$.{DERIVED_FROM}') j"
        " JOIN rows s ON s.row_id = j.value"
    )
    made_from: dict[int, set[int]] = {}
    for derived, source in conn.execute(sql):
        made_from.setdefault(source, set()).add(derived)
    found: set[int] = set()
    frontier = set(seeds)
    for _ in range(_MAX_DERIVATION_DEPTH):
        if not frontier:
            break
        reached: set[int] = set()
        for source in frontier:
            reached |= made_from.get(source, set())
        for chunk in chunks(sorted(frontier)):
            reached |= {
                dst
                for (dst,) in conn.execute(
                    f"SELECT dst FROM edges WHERE type = 'causal' AND src IN ({marks(chunk)})",
                    chunk,
                )
            }
        frontier = reached - seeds - found
        found |= frontier
    return found
