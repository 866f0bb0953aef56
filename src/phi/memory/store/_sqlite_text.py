"""Namespace-owned terms for the SQLite store's scoped BM25 (`row_terms`).

FTS5 keeps one posting list per term for the whole table. To give each namespace its own
terms without one table per namespace (a store may hold a namespace per person), each
token is indexed as `<namespace key><stemmed token>`: the text is stemmed here with the
same `porter unicode61` tokenizer `row_text` uses, and `row_terms` (plain `unicode61`)
keeps each prefixed token whole. A scoped query asks for the prefixed tokens of its own
namespaces, so it reads their postings only.

Every document also carries the bare namespace key as one token. `row_text` holds that key
in its `nskey` column, so documents keep the same length and BM25 scores in a store of one
namespace are exactly those of `row_text`. In a store of many, a namespace's scores are
those it would have alone (its own row count and document frequencies; only the average
document length is the store's): another person's words never change them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import apsw

__all__ = ["index_terms", "indexed_rows", "namespace_key", "scoped_bm25", "stemmer"]


def namespace_key(namespace: str) -> str:
    """One token per namespace: `n` and 20 hex digits (the same key as `row_text`'s)."""
    return "n" + hashlib.sha1(namespace.encode()).hexdigest()[:20]


def stemmer(conn: apsw.Connection) -> apsw.FTS5Tokenizer:
    """SQLite's own `porter unicode61` tokenizer, callable from Python."""
    return conn.fts5_tokenizer("porter", ["unicode61"])


def _tokens(stem: apsw.FTS5Tokenizer, text: str, reason: int) -> list[str]:
    found = stem(text.encode(), reason, None, include_offsets=False, include_colocated=False)
    return [t for t in found if isinstance(t, str)]


def index_terms(stem: apsw.FTS5Tokenizer, namespace: str, content: str) -> str:
    """The `row_terms` document of a row: its namespace key, then each prefixed token."""
    key = namespace_key(namespace)
    tokens = _tokens(stem, content, apsw.FTS5_TOKENIZE_DOCUMENT)
    return " ".join([key, *(key + t for t in tokens)])


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint (as FTS5 writes it): the value and the offset after it."""
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9


def indexed_rows(conn: apsw.Connection) -> int:
    """The row count FTS5 puts in `row_terms`' BM25: its "averages" record (id 1)."""
    for (block,) in conn.execute("SELECT block FROM row_terms_data WHERE id = 1"):
        return _varint(bytes(block), 0)[0] if block else 0
    return 0


def _idf(rows: int, hits: int) -> float:
    # FTS5's own formula, floor included (fts5_aux.c, fts5Bm25Function).
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def scoped_bm25(
    conn: apsw.Connection,
    terms: Sequence[str],
    namespace: str,
    condition: str,
    params: Sequence[object],
) -> dict[int, float]:
    """BM25 of the rows of `namespace` passing `condition` (SQL on `rows r`) that match
    any of `terms`: as if the namespace were a store of its own (its own row count and
    document frequencies; the document lengths' average is the store's).

    FTS5's `bm25()` takes its row count from the whole table, which would inflate every
    idf of a small namespace in a large store. So each term is one query, and its score is
    rescaled from FTS5's idf to the namespace's; a row's score is the sum over terms, as
    FTS5 sums over the phrases of one query.
    """
    stem = stemmer(conn)
    key = namespace_key(namespace)
    total = indexed_rows(conn)
    (own,) = next(conn.execute("SELECT count(*) FROM rows WHERE namespace = ?", (namespace,)))
    sql = (
        f"SELECT row_terms.rowid, bm25(row_terms), {condition} FROM row_terms"
        " JOIN rows r ON r.id = row_terms.rowid WHERE row_terms MATCH ?"
    )
    scores: dict[int, float] = {}
    for term in terms:
        tokens = _tokens(stem, term, apsw.FTS5_TOKENIZE_QUERY)
        if not tokens:
            continue
        phrase = '"' + " ".join(key + t for t in tokens) + '"'
        found = list(conn.execute(sql, [*params, phrase]))
        if not found:
            continue
        # bm25() is negative (better is smaller) and carries FTS5's idf: swap that idf
        # for the namespace's.
        scale = -_idf(own, len(found)) / _idf(total, len(found))
        for rid, score, passes in found:
            if passes:
                scores[rid] = scores.get(rid, 0.0) + scale * score
    return scores
