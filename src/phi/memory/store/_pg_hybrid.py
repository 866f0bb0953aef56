"""One hybrid recall on the PostgreSQL store: `gather_stepwise`'s answer in two round trips.

At a million rows a scoped search spent more time in this process and on the wire than in
the server: ten statements in five trips, the graph walked one hop a trip, every
candidate read whole (its metadata parsed) where recall reads only its content, and the
text step planned anew each time. So:
- the first trip (a pipeline) sends the exact nearest rows (guarded: a scope too wide for
  an exact search answers nothing, and only then is it counted), every row matching the
  query's words with its BM25 (up to `TEXT_ALL`) and whether any row waits for its
  vector; the hits come with their content, thread and key;
- the second trip is one statement (`_walk_sql`): the whole graph walk from the seeds,
  `hops` deep, in the server, and for every row it reached that no retriever proposed,
  its cosine, content and thread (and its BM25, when the first trip could not read every
  match).
Each part answers exactly what `gather_stepwise`'s step would (the conformance suite
checks the two against each other).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from phi.memory.store import _pg_queue as queue_sql
from phi.memory.store import _pg_sql as sql
from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_split import at_once
from phi.memory.store._pg_text import weights_cte
from phi.memory.store.base import Hit, HybridQuery, HybridSignals, RowFilter, merge_hits

__all__ = ["hybrid"]

_EDGE, _REACHED, _TEXT = 0, 1, 2
"""What a row of `_walk_sql`'s answer is: an edge, a reached row, or a reached row's BM25."""

TEXT_ALL: Final = 1_000
"""The text step reads up to this many matching rows (not just the candidates): when that
is all of them, the BM25 of every row the graph reaches is known without asking again."""


def _walk_sql(query: HybridQuery, text: bool) -> tuple[str, dict[str, Any]]:
    """The graph within `query.hops` of the seeds (`%(seeds)s`, row keys), walked as
    `gather_stepwise` walks it: each hop the edges of the frontier, then the rows those
    edges reached that no hop started from. Its rows, keys first: `(_EDGE, src, dst)`;
    `(_REACHED, key, -, row_id, cosine or NULL, content, thread)` for each reached row whose
    key is not in `%(known)s` (the caller knows those); and with `text`, `(_TEXT, key, -,
    row_id, bm25)` for those that match under the query's filter."""
    typed = " AND type = ANY(%(types)s)" if query.graph_types else ""
    ctes = ["f1 AS (SELECT unnest(%(seeds)s::bigint[]) AS id)"]
    for hop in range(1, query.hops + 1):
        ctes.append(
            f"e{hop} AS (SELECT src, dst FROM edges WHERE src IN (SELECT id FROM f{hop}){typed}"
            f" UNION SELECT src, dst FROM edges WHERE dst IN (SELECT id FROM f{hop}){typed})"
        )
        if hop < query.hops:
            ends = " UNION ".join(
                f"SELECT src AS id FROM e{i} UNION SELECT dst FROM e{i}" for i in range(1, hop + 1)
            )
            starts = " UNION ".join(f"SELECT id FROM f{i}" for i in range(1, hop + 1))
            ctes.append(f"f{hop + 1} AS ({ends} EXCEPT ({starts}))")
    edges = " UNION ".join(f"SELECT src, dst FROM e{hop}" for hop in range(1, query.hops + 1))
    ctes += [
        f"a AS ({edges})",
        "x AS (SELECT r.id, r.namespace, r.row_id, r.content, r.thread FROM rows r WHERE r.id IN"
        " (SELECT u.id FROM (SELECT src AS id FROM a UNION SELECT dst FROM a) u"
        " WHERE NOT u.id = ANY(%(known)s::bigint[])))",
    ]
    parts = [
        f"SELECT {_EDGE}, a.src, a.dst, NULL::text, NULL::float8, NULL::text, NULL::text FROM a",
        # A row of a namespace whose every cosine the first trip sent (`%(scored)s`) is
        # scored from those, its vector not read again (`_pg_sql.every_score_sql`).
        f"SELECT {_REACHED}, x.id, NULL, x.row_id, CASE WHEN x.namespace = ANY(%(scored)s::text[])"
        " THEN NULL ELSE (SELECT 1 - (v.embedding <=> %(q)s::vector) FROM row_vectors v"
        " WHERE v.id = x.id) END, x.content, x.thread FROM x",
    ]
    params: dict[str, Any] = {}
    if text:
        scored, params = sql.bm25_select(
            query.where, columns=", r.id", chosen=" AND t.id IN (SELECT id FROM x)"
        )
        ctes.append(weights_cte())
        parts.append(f"SELECT {_TEXT}, b.id, NULL, b.row_id, b.score, NULL, NULL FROM ({scored}) b")
    return "WITH " + ", ".join(ctes) + " " + " UNION ALL ".join(parts), params | {
        "types": list(query.graph_types)
    }


@dataclass(kw_only=True)
class _Candidates:
    """The first trip's answer: what the retrievers proposed, and what came with it."""

    dense: list[Hit]
    text: list[Hit]
    texts: dict[str, tuple[str, str | None]]
    """Content and thread of every row read so far."""
    keys: dict[str, int]
    """`rows.id` of the rows read so far (the walk starts from keys)."""
    every_match: dict[str, float] | None
    """The BM25 of every row matching the query under its filter, when the text step read
    them all; `None` when there were more."""
    waiting: bool
    scored: dict[int, float] | None = None
    """The cosine of every vector of the scope's namespaces, by `rows.id`, when the exact
    search sent them all (`_pg_sql.complete_scores`)."""


async def _candidates(
    conn: Conn,
    query: HybridQuery,
    vector: sql.VectorParam,
    tokens: Sequence[str],
    beside: Conn | None = None,
) -> _Candidates:
    """The first trip: exact nearest rows, text hits and the queue, in one pipeline; then
    the HNSW index, when the scope is wider than `sql.EXACT_MAX`. With a second
    connection (`beside`) the text step and the queue go there, at the same time as the
    exact search: two server processes, two cores (at a million rows the exact search
    took ~1.8 ms in the server and the text step ~0.8)."""
    where, limit = query.where, query.candidates
    wanted = max(limit, TEXT_ALL)
    dense_found: list[tuple[Any, ...]] = []
    text_found: list[tuple[Any, ...]] = []
    waiting = False
    scored: dict[int, float] | None = None
    complete = sql.complete_scores(where)

    async def ask_dense(on: Conn, *, alone: bool) -> None:
        nonlocal dense_found, scored
        async with on.pipeline():
            # A generic plan (`sql.GENERIC`) for a vectors-first exact step.
            generic = sql.nearest_first(where)
            if generic:
                await on.execute(sql.GENERIC)
            cur = await on.execute(
                *(
                    sql.every_score_sql(where, limit, vector)
                    if complete
                    else sql.exact_sql(where, limit, vector, guarded=True, texts=True)
                )
            )
            if generic:
                await on.execute(sql.CUSTOM)
            if alone:
                await ask_text(on)
            dense_found = await cur.fetchall()
        if complete:  # its last row holds every cosine of the scope
            *dense_found, (*_, packed) = dense_found
            dense_found = [row[:5] for row in dense_found]
            # None: a scope too wide for the exact search (the index answers) or without
            # vectors; the walk then reads the vectors itself.
            scored = sql.every_score(packed) if packed is not None else None

    async def ask_text(on: Conn) -> None:
        nonlocal text_found, waiting
        async with on.pipeline():
            text_cur = None
            if tokens:  # on a generic plan too
                await on.execute(sql.GENERIC)
                text_cur = await on.execute(*sql.bm25_sql(tokens, where, limit=wanted, texts=True))
                await on.execute(sql.CUSTOM)
            queue_cur = await on.execute("SELECT EXISTS (SELECT 1 FROM embed_queue)")
            text_found = await text_cur.fetchall() if text_cur is not None else []
            (found_waiting,) = await queue_cur.fetchone() or (False,)
            waiting = bool(found_waiting)

    if beside is None:
        await ask_dense(conn, alone=True)
    else:
        await at_once(partial(ask_dense, conn, alone=False), partial(ask_text, beside))
    found = [*dense_found, *text_found]
    dense = sql.hits_from([(i, s) for i, s, *_ in dense_found])
    if not dense and limit > 0 and await _scope(conn, query.where) > sql.EXACT_MAX:
        dense = await sql.knn_indexed(conn, vector, where, limit)
    return _Candidates(
        dense=dense,
        text=sql.hits_from([(i, s) for i, s, *_ in text_found[:limit]]),
        texts={i: (content, thread) for i, _, content, thread, _ in found},
        keys={i: key for i, *_, key in found},
        every_match=(
            {i: float(s) for i, s, *_ in text_found} if len(text_found) < wanted else None
        ),
        waiting=waiting,
        scored=scored,
    )


async def _scope(conn: Conn, where: RowFilter) -> int:
    """How many rows `where` admits, up to `sql.EXACT_MAX + 1`: asked only when the guarded
    exact search answered nothing (a scope too wide for it, or one without vectors)."""
    cur = await conn.execute(*sql.scope_sql(where))
    (scope,) = await cur.fetchone() or (0,)
    return int(scope)


async def _walk(
    conn: Conn,
    query: HybridQuery,
    vector: sql.VectorParam,
    tokens: Sequence[str],
    found: _Candidates,
    seeds: Sequence[str],
) -> tuple[dict[str, set[str]], dict[str, float], dict[str, float]]:
    """The second trip: the graph walk from `seeds` (`_walk_sql`). Its adjacency, and the
    cosines and BM25 of the rows it reached that no retriever proposed (their content and
    thread go into `found.texts`)."""
    proposed = {h.row_id for h in [*found.dense, *found.text]}
    missing = [i for i in {*seeds, *proposed} if i not in found.keys]  # from the HNSW index
    keys = found.keys | (await sql.internal_ids(conn, missing) if missing else {})
    statement, params = _walk_sql(query, bool(tokens) and found.every_match is None)
    params |= {
        "seeds": sql.KeyArray.of([keys[i] for i in seeds if i in keys]),
        "known": sql.KeyArray.of([keys[i] for i in proposed if i in keys]),
        "q": vector,
        "terms": list(tokens),
        "scored": list(query.where.namespaces or ()) if found.scored is not None else [],
    }
    # On the server's own choice of plan, not a forced generic one (`sql.GENERIC`): it
    # settles on a plan that costs no planning in a few runs, and the pipeline the two
    # settings need cost more than that (paired at 1M rows: 6.38 -> 6.18 ms a recall).
    cur = await conn.execute(statement, params)
    walked = await cur.fetchall()
    named = {key: i for i, key in keys.items()}
    edges: list[tuple[int, int]] = []
    cosines: dict[str, float] = {}
    matched: dict[str, float] = {}
    every_match = found.every_match or {}
    for kind, a, b, row_id, score, content, thread in walked:
        if kind == _EDGE:
            edges.append((a, b))
            continue
        named[a] = row_id
        if kind == _REACHED:
            found.texts[row_id] = (content, thread)
            if score is None and found.scored is not None:
                score = found.scored.get(a)
            if score is not None:
                cosines[row_id] = float(score)
            if row_id in every_match:
                matched[row_id] = every_match[row_id]
        else:
            matched[row_id] = float(score)
    adjacency: dict[str, set[str]] = {}
    for a, b in edges:
        if a in named and b in named:
            adjacency.setdefault(named[a], set()).add(named[b])
            adjacency.setdefault(named[b], set()).add(named[a])
    return adjacency, cosines, matched


async def hybrid(
    conn: Conn,
    query: HybridQuery,
    vector: sql.VectorParam,
    tokens: Sequence[str],
    beside: Conn | None = None,
) -> HybridSignals:
    """`Store.hybrid`: what `gather_stepwise` answers, read on `conn` in two round trips
    (three when the scope is wider than `sql.EXACT_MAX`, and one more when rows wait for
    their vectors); the first trip's text step on `beside` at the same time, when the
    caller has a second connection to spare."""
    found = await _candidates(conn, query, vector, tokens, beside)
    dense, text = found.dense, found.text
    seeds = list(query.seeds(dense, text)) if query.graph_types and query.hops > 0 else []
    adjacency: dict[str, set[str]] = {}
    if seeds:
        adjacency, cosines, matched = await _walk(conn, query, vector, tokens, found, seeds)
        # Reached rows in row id order (the order `gather_stepwise` asks for them in).
        dense = merge_hits(dense, dict(sorted(cosines.items())))
        text = merge_hits(text, dict(sorted(matched.items())))
    hits = list(dict.fromkeys(h.row_id for h in [*dense, *text]))
    texts = found.texts
    unread = [i for i in hits if i not in texts]  # dense hits of the HNSW index
    if unread:
        cur = await conn.execute(
            "SELECT row_id, content, thread FROM rows WHERE row_id = ANY(%s)", (unread,)
        )
        texts |= {i: (content, thread) for i, content, thread in await cur.fetchall()}
    return HybridSignals(
        dense=dense,
        text=text,
        from_dense=frozenset(h.row_id for h in found.dense),
        from_text=frozenset(h.row_id for h in found.text),
        adjacency={k: sorted(v) for k, v in adjacency.items()},
        contents={i: texts[i][0] for i in hits if i in texts},
        threads={i: t for i in hits if i in texts and (t := texts[i][1])},
        unembedded=(await queue_sql.count_unembedded(conn, query.where) if found.waiting else 0),
    )
