"""The write path: validate, redact, deduplicate, embed, link, store — all or nothing.

Deduplication is looked up first (so a repeated write costs no embedding) and decided
again by the store inside its write transaction (`RowStore.write` is an idempotent upsert),
so two processes writing the same text at once still make one row.

Edges are made here, not by the store, so every backend gets the same graph:
- temporal: to the previous row of the same thread and of the same namespace;
- reference: to recent rows that mention the same handle, DID, URL or AT-URI;
- semantic: to the nearest rows of the same namespace above a similarity threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Final

import numpy as np
import numpy.typing as npt

from phi.errors import InvalidInput, RowNotFound
from phi.memory.embed import Embedder, Vectors
from phi.memory.model import (
    KINDS,
    MAX_CONTENT_CHARS,
    MAX_TAGS,
    TRUSTS,
    Edge,
    NewRow,
    Row,
    content_hash,
    ensure_utc,
    new_row_id,
    utc_now,
    validate_namespace,
    validate_row_text,
)
from phi.memory.store.base import RowFilter, RowStore, RowWrite, Store
from phi.redact import redact, redact_data

__all__ = ["IngestPolicy", "embed_pending", "extract_refs", "write_rows"]

_REF_PATTERNS: Final = (
    re.compile(r"at://[^\s<>\"'()\[\]]+"),
    re.compile(r"https?://[^\s<>\"'()\[\]]+"),
    re.compile(r"\bdid:(?:plc|web):[A-Za-z0-9._:%-]+"),
    re.compile(
        r"(?<![\w@/])@((?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]*)"
    ),
)
_TRAILING: Final = ".,;:!?"


@dataclass(frozen=True, kw_only=True)
class IngestPolicy:
    """How the write path links new rows into the graph."""

    semantic_neighbours: int = 3
    semantic_threshold: float = 0.6
    """Cosine similarity above which two rows of a namespace are linked."""
    reference_links: int = 5
    """Newest rows to link per shared reference."""
    reference_max_rows: int = 200
    """A reference mentioned by more rows than this is too common to mean anything."""
    ignore_refs: frozenset[str] = field(default_factory=frozenset)
    """References never linked on, e.g. phi's own handle and DID (they are everywhere)."""


def extract_refs(text: str) -> list[str]:
    """Handles (`@alice.bsky.social` -> `alice.bsky.social`), DIDs, URLs and AT-URIs."""
    refs: list[str] = []
    for pattern in _REF_PATTERNS:
        for match in pattern.finditer(text):
            value = (match.group(1) if pattern.groups else match.group(0)).rstrip(_TRAILING)
            refs.append(value.lower() if pattern.groups else value)
    return list(dict.fromkeys(refs))


def _validate(item: NewRow) -> None:
    validate_namespace(item.namespace)
    validate_row_text(item)
    if item.kind not in KINDS:
        raise InvalidInput(f"unknown kind {item.kind!r}; expected one of {', '.join(KINDS)}")
    if item.trust is not None and item.trust not in TRUSTS:
        raise InvalidInput(f"unknown trust {item.trust!r}; expected one of {', '.join(TRUSTS)}")
    if not item.content.strip():
        raise InvalidInput(f"empty content for namespace {item.namespace!r}; nothing to remember")
    if len(item.content) > MAX_CONTENT_CHARS:
        raise InvalidInput(
            f"content of {len(item.content)} characters is over the limit of {MAX_CONTENT_CHARS};"
            " split it into several rows"
        )
    if len(item.tags) > MAX_TAGS:
        raise InvalidInput(f"{len(item.tags)} tags given; a row takes at most {MAX_TAGS}")
    if any(not t.strip() for t in item.tags):
        raise InvalidInput("a tag is empty")
    if item.created_at is not None:
        ensure_utc(item.created_at)


def _redacted(item: NewRow) -> NewRow:
    """`item` with each secret in its text replaced by a marker (`phi.redact`). Every write
    passes here, so a token in a tool's output or a captured event is never stored, and
    never comes back from recall or an export. Done before the identity is hashed: the same
    text twice still makes one row."""
    content = redact(item.content)
    sources = tuple(redact(uri) for uri in item.source_uris)
    tags = tuple(redact(tag) for tag in item.tags)
    meta = redact_data(item.meta)
    if (content, sources, tags, meta) == (item.content, item.source_uris, item.tags, item.meta):
        return item
    return replace(item, content=content, source_uris=sources, tags=tags, meta=meta)


def _build_row(item: NewRow, now: datetime) -> Row:
    return Row(
        row_id=new_row_id(),
        namespace=item.namespace,
        kind=item.kind,
        content=item.content,
        status=item.status,
        supersedes=item.supersedes,
        trust=item.resolved_trust,
        tags=tuple(item.tags),
        source_uris=tuple(dict.fromkeys(item.source_uris)),
        author=item.author,
        created_at=ensure_utc(item.created_at) if item.created_at else now,
        updated_at=now,
        meta=item.resolved_meta,
        content_hash=content_hash(item.kind, item.content, item.source_uris),
        written_by=item.written_by,
    )


async def write_rows(
    store: RowStore,
    embedder: Embedder,
    items: Sequence[NewRow],
    *,
    policy: IngestPolicy,
    defer_embedding: bool = False,
) -> list[Row]:
    """Write `items`, returning one row per item (an existing row for a repeated write).

    With `defer_embedding` the rows are stored without vectors (text-searchable at once,
    with their temporal and reference edges) and queued in the store; `embed_pending`
    embeds them and adds their semantic edges later.
    """
    for item in items:
        _validate(item)
    items = [_redacted(item) for item in items]
    now = utc_now()
    rows: list[Row] = []
    fresh: dict[tuple[str, str], Row] = {}
    keys = [(i.namespace, content_hash(i.kind, i.content, i.source_uris)) for i in items]
    existing = await store.find_by_hash(keys)
    for item, key in zip(items, keys, strict=True):
        found = existing.get(key) or fresh.get(key)
        if found is None:
            found = fresh[key] = _build_row(item, now)
        rows.append(found)
    new_rows = list(fresh.values())
    replaced = await _superseded(store, items, rows)
    if not new_rows and not replaced:
        return rows
    vectors: Sequence[npt.NDArray[np.float32] | None]
    if defer_embedding:
        vectors = [None] * len(new_rows)
        edges = await _link(store, new_rows, None, policy) if new_rows else []
    else:
        embedded = await embedder.embed([r.content for r in new_rows])
        vectors = list(embedded)
        edges = await _link(store, new_rows, embedded, policy) if new_rows else []
    edges += [Edge(src=new, dst=old, edge_type="supersedes") for new, old in replaced]
    refs = [_row_refs(r, policy) for r in new_rows]
    stored = await store.write(
        [
            RowWrite(row=r, vector=v, refs=tuple(f))
            for r, v, f in zip(new_rows, vectors, refs, strict=True)
        ],
        edges,
        superseded=[old for _, old in replaced],
        at=now,
    )
    # The lookup above ran outside the write transaction: another process may have stored
    # the same identity since. The store kept its row; every caller gets that one back.
    winner = {new.row_id: kept for new, kept in zip(new_rows, stored, strict=True)}
    return [winner.get(r.row_id, r) for r in rows]


async def _superseded(
    store: RowStore, items: Sequence[NewRow], rows: Sequence[Row]
) -> list[tuple[str, str]]:
    """`(new, old)` pairs for items that supersede a row, after checking the old rows."""
    pairs = [
        (row.row_id, item.supersedes)
        for item, row in zip(items, rows, strict=True)
        if item.supersedes
    ]
    if not pairs:
        return []
    olds = {r.row_id: r for r in await store.get_rows([old for _, old in pairs])}
    for (new, old), item in zip(pairs, [i for i in items if i.supersedes], strict=True):
        row = olds.get(old)
        if row is None:
            raise RowNotFound(old)
        if row.namespace != item.namespace:
            raise InvalidInput(
                f"row {old!r} is in namespace {row.namespace!r}, not {item.namespace!r};"
                " a row can only supersede a row of its own namespace"
            )
        if row.status != "active" and new != old:
            raise InvalidInput(
                f"row {old!r} is already superseded; supersede the newest row of its history"
            )
    return [(new, old) for new, old in pairs if new != old]


def _row_refs(row: Row, policy: IngestPolicy) -> list[str]:
    found = extract_refs(row.content)
    for uri in row.source_uris:
        found += extract_refs(uri) or [uri]
    if row.author:
        found.append(row.author)
    return [r for r in dict.fromkeys(found) if r not in policy.ignore_refs]


async def embed_pending(
    store: Store, embedder: Embedder, *, policy: IngestPolicy, batch: int = 64
) -> int:
    """Embed up to `batch` queued rows (oldest first) and link them semantically; return
    how many were embedded (0: the queue is empty)."""
    rows = await store.unembedded(limit=batch)
    if not rows:
        return 0
    vectors = await embedder.embed([r.content for r in rows])
    edges = await _semantic_edges(store, rows, vectors, policy)
    await store.add_vectors({r.row_id: v for r, v in zip(rows, vectors, strict=True)}, edges)
    return len(rows)


async def _link(
    store: RowStore, rows: Sequence[Row], vectors: Vectors | None, policy: IngestPolicy
) -> list[Edge]:
    """Edges of new rows; semantic ones only when their vectors are known already."""
    edges: list[Edge] = []
    edges += await _temporal_edges(store, rows)
    if vectors is not None:
        edges += await _semantic_edges(store, rows, vectors, policy)
    edges += await _reference_edges(store, rows, policy)
    return list({(e.src, e.dst, e.edge_type): e for e in edges}.values())


def _temporal_scopes(row: Row) -> list[tuple[str, str | None]]:
    thread = row.thread
    return [(row.namespace, thread), (row.namespace, None)] if thread else [(row.namespace, None)]


async def _temporal_edges(store: RowStore, rows: Sequence[Row]) -> list[Edge]:
    """Link each row to the previous row of its thread and of its namespace."""
    # The stored predecessor of each scope's first row in the batch, in one query.
    first: dict[tuple[str, str | None], Row] = {}
    for row in rows:
        for scope in _temporal_scopes(row):
            first.setdefault(scope, row)
    scopes = list(first)
    stored = await store.latest_many(
        [
            RowFilter(
                namespaces=(namespace,),
                thread=thread,
                statuses=None,
                until=first[namespace, thread].created_at + timedelta(microseconds=1),
            )
            for namespace, thread in scopes
        ],
        limit=1,
    )
    previous = {
        scope: found[0].row_id if found else None
        for scope, found in zip(scopes, stored, strict=True)
    }
    edges = []
    for row in rows:
        linked: set[str] = set()
        for scope in _temporal_scopes(row):
            prev_id = previous[scope]
            if prev_id is not None and prev_id not in linked:
                edges.append(Edge(src=prev_id, dst=row.row_id, edge_type="temporal", weight=1.0))
                linked.add(prev_id)
            previous[scope] = row.row_id
    return edges


async def _semantic_edges(
    store: RowStore, rows: Sequence[Row], vectors: Vectors, policy: IngestPolicy
) -> list[Edge]:
    if policy.semantic_neighbours <= 0:
        return []
    edges = []
    within = vectors @ vectors.T
    stored = await store.vector_search_many(
        [(vectors[i], RowFilter(namespaces=(row.namespace,))) for i, row in enumerate(rows)],
        limit=policy.semantic_neighbours,
    )
    for i, row in enumerate(rows):
        candidates = [(h.score, h.row_id) for h in stored[i]]
        candidates += [
            (float(within[i, j]), rows[j].row_id)
            for j in range(i)
            if rows[j].namespace == row.namespace and rows[j].status == "active"
        ]
        candidates.sort(reverse=True)
        for score, other in candidates[: policy.semantic_neighbours]:
            if score >= policy.semantic_threshold:
                edges.append(
                    Edge(src=other, dst=row.row_id, edge_type="semantic", weight=round(score, 4))
                )
    return edges


async def _reference_edges(
    store: RowStore, rows: Sequence[Row], policy: IngestPolicy
) -> list[Edge]:
    if policy.reference_links <= 0:
        return []
    refs_by_row = {r.row_id: _row_refs(r, policy) for r in rows}
    all_refs = sorted({ref for refs in refs_by_row.values() for ref in refs})
    counts = await store.ref_counts(all_refs)
    edges = []
    seen: dict[str, list[str]] = {}
    for row in rows:
        for ref in refs_by_row[row.row_id]:
            if counts.get(ref, 0) + len(seen.get(ref, ())) >= policy.reference_max_rows:
                continue
            others = seen.get(ref, [])[-policy.reference_links :]
            if len(others) < policy.reference_links and counts.get(ref, 0) > 0:
                stored = await store.rows_with_ref(
                    ref, RowFilter(statuses=None), limit=policy.reference_links - len(others)
                )
                others = stored + others
            edges += [
                Edge(src=other, dst=row.row_id, edge_type="reference", weight=1.0)
                for other in others
                if other != row.row_id
            ]
            seen.setdefault(ref, []).append(row.row_id)
    return edges
