"""`Store.forget` and `forget_row` for the SQLite store: hard deletes, in the caller's transaction.

Which rows go is the provenance rule of `Store.forget`: the namespace, the person's rows in
any namespace (by `author` and by their own record URIs in `source_uris`), then every row
derived from an erased row (`meta["derived_from"]` or a `causal` edge), to a fixed point.

`Store.forget_row` (`erase_row`) runs `_derivation.RowWalk` over this backend's reads: the
row, then the rows whose only sources are erased rows.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

import apsw

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
from phi.memory.store._sqlite_learning import delete_state
from phi.memory.store._sqlite_sql import chunks, marks, set_status
from phi.memory.store.base import DERIVED_FROM, PUBLISHED_URIS, ForgetReport
from phi.memory.store.row_forget import RowForgetReport

__all__ = ["erase", "erase_row"]


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
    return _erase_ids(conn, namespace, sorted(ids))


def _erase_ids(conn: apsw.Connection, namespace: str, ordered: list[int]) -> ForgetReport:
    """Delete these rows with everything hanging off them; `derived` counts the rows
    outside `namespace`."""
    kinds: dict[str, int] = {}
    derived: dict[str, int] = {}
    published: list[str] = []
    edges = 0
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
        rows=len(ordered),
        edges=edges,
        kinds=kinds,
        derived=dict(sorted(derived.items())),
        published=tuple(sorted(set(published))),
    )


def _derived_closure(conn: apsw.Connection, seeds: set[int]) -> set[int]:
    """Every row derived, directly or through other rows, from `seeds` (not the seeds)."""
    # The whole derivation graph, read once: a small share of a store, and forget is rare.
    sql = (
        f"SELECT s.id, r.id FROM rows r, json_each(r.meta, '$.{DERIVED_FROM}') j"
        " JOIN rows s ON s.row_id = j.value"
        " UNION SELECT src, dst FROM edges WHERE type = 'causal'"
    )
    made_from: dict[int, set[int]] = {}
    for source, derived in conn.execute(sql):
        made_from.setdefault(source, set()).add(derived)
    return derived_closure(seeds, made_from)


# -- one row -----------------------------------------------------------------------------

_NODE_SQL = (
    "SELECT r.id, r.row_id, r.namespace, r.source_uris,"
    f" r.meta -> '$.{DERIVED_FROM}', r.meta -> '$.{LEARNED_BY}' IS NOT NULL, r.supersedes"
    " FROM rows r"
)


def erase_row(
    conn: apsw.Connection, row_id: str, confine: Callable[[str], bool] | None
) -> RowForgetReport:
    """`Store.forget_row` inside the caller's write transaction."""
    found = _nodes(conn, f"{_NODE_SQL} WHERE r.row_id = ?", [row_id])
    if not found or (confine is not None and not confine(found[0].namespace)):
        raise RowNotFound(row_id)
    walk = RowWalk(start=found[0], confine=confine)
    while keys := walk.pending():
        made = _nodes_by_ids(conn, _naming(conn, keys))
        walk.step(made, _nodes_by_ids(conn, _providing(conn, walk.sources_of(made))))
    erased = walk.ordered()
    report = _erase_ids(conn, found[0].namespace, sorted(n.key for n in erased))
    return RowForgetReport(
        row_id=row_id,
        erased=tuple(n.row_id for n in erased),
        edges=report.edges,
        kinds=report.kinds,
        reinstated=_reinstate(conn, erased),
        published=report.published,
    )


def _nodes(conn: apsw.Connection, sql: str, args: Sequence[object]) -> list[Node]:
    return [
        node(
            key=key,
            row_id=rid,
            namespace=ns,
            source_uris=json.loads(uris or "[]"),
            derived_from=json.loads(named) if named is not None else None,
            learned=bool(learned),
            supersedes=supersedes,
        )
        for key, rid, ns, uris, named, learned, supersedes in conn.execute(sql, args)
    ]


def _nodes_by_ids(conn: apsw.Connection, ids: set[int]) -> list[Node]:
    found: list[Node] = []
    for chunk in chunks(sorted(ids)):
        found += _nodes(conn, f"{_NODE_SQL} WHERE r.id IN ({marks(chunk)})", chunk)
    return found


def _naming(conn: apsw.Connection, keys: Iterable[str]) -> set[int]:
    """Rows whose sources may name one of `keys` (the walk checks exactly)."""
    ids, uris = split_keys(keys)
    found: set[int] = set()
    for chunk in chunks(ids):
        found |= _ids(
            conn,
            f"SELECT r.id FROM rows r, json_each(r.meta, '$.{DERIVED_FROM}') j"
            f" WHERE j.value IN ({marks(chunk)})",
            chunk,
        )
    for chunk in chunks([f"{MEMORY_URI}{i}" for i in ids] + uris):
        found |= _ids(
            conn,
            "SELECT r.id FROM rows r, json_each(r.source_uris) u"
            f" WHERE u.value IN ({marks(chunk)})",
            chunk,
        )
    return found


def _providing(conn: apsw.Connection, keys: Iterable[str]) -> set[int]:
    """Rows that may provide one of `keys` (the walk checks exactly)."""
    ids, uris = split_keys(keys)
    found: set[int] = set()
    for chunk in chunks(ids):
        found |= _ids(conn, f"SELECT id FROM rows WHERE row_id IN ({marks(chunk)})", chunk)
    for chunk in chunks(uris):
        found |= _ids(
            conn,
            "SELECT r.id FROM rows r, json_each(r.source_uris) u"
            f" WHERE u.value IN ({marks(chunk)})",
            chunk,
        )
    return found


def _ids(conn: apsw.Connection, sql: str, args: Sequence[object]) -> set[int]:
    return {int(i) for (i,) in conn.execute(sql, args)}


def _reinstate(conn: apsw.Connection, erased: Sequence[Node]) -> tuple[str, ...]:
    """Make current again the rows erased rows had superseded, unless another supersedes them."""
    gone = {n.row_id for n in erased}
    older = sorted({n.supersedes for n in erased if n.supersedes} - gone)
    back: list[str] = []
    for chunk in chunks(older):
        back += [
            rid
            for (rid,) in conn.execute(
                f"SELECT o.row_id FROM rows o WHERE o.row_id IN ({marks(chunk)})"
                " AND o.status = 'superseded'"
                " AND NOT EXISTS (SELECT 1 FROM rows n WHERE n.supersedes = o.row_id)"
                " AND NOT EXISTS (SELECT 1 FROM edges e"
                " WHERE e.dst = o.id AND e.type = 'supersedes')",
                chunk,
            )
        ]
    if back:
        set_status(conn, back, "active", datetime.now(UTC))
    return tuple(sorted(back))
