"""BM25 on PostgreSQL, scored as SQLite's FTS5 scores it.

PostgreSQL's `ts_rank` is not BM25, and its text parser and Snowball stemmer split and
stem words differently from FTS5. So the PostgreSQL store tokenises with FTS5's own
`porter unicode61` tokenizer (through apsw, already a dependency, on an in-memory
database: no file, no I/O), keeps postings with term frequencies, and scores with FTS5's
formula: k1 = 1.2, b = 0.75, IDF = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6, over
the whole store's statistics. Document lengths count one token more than the content,
as the SQLite store's hidden namespace column does, so the two stores agree to rounding.

One difference: FTS5 treats a query term that splits into several tokens as a phrase;
here each token is a term of its own (phi's query terms are single words).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final

import apsw

__all__ = ["BM25_SCORE", "Tokenizer", "query_tokens"]

K1: Final = 1.2
B: Final = 0.75

BM25_SCORE: Final = (
    f"sum(w.idf * t.tf * {K1 + 1} / (t.tf + {K1} * ({1 - B} + {B} * (r.doc_len + 1) / s.avgdl)))"
)
"""The score of one row: `w` are the query terms with their IDF, `t` the postings, `r`
the rows and `s` the corpus statistics (see `weights_cte`)."""


def weights_cte() -> str:
    """CTEs `s` (corpus statistics) and `w` (each query term, duplicates kept as FTS5
    keeps repeated phrases, with its IDF) for the parameter `%(terms)s`."""
    idf = "ln((s.n - coalesce(d.df, 0) + 0.5) / (coalesce(d.df, 0) + 0.5))"
    return (
        "s AS (SELECT n_rows::float8 AS n,"
        " (total_len + n_rows)::float8 / greatest(n_rows, 1) AS avgdl FROM text_stats),"
        f" w AS (SELECT q.term, CASE WHEN {idf} <= 0 THEN 1e-6 ELSE {idf} END AS idf"
        " FROM unnest(%(terms)s::text[]) AS q(term) CROSS JOIN s"
        " LEFT JOIN term_df d ON d.term = q.term)"
    )


class Tokenizer:
    """FTS5's `porter unicode61` tokenizer, as the SQLite store's text index uses it."""

    def __init__(self) -> None:
        self._conn = apsw.Connection(":memory:")
        self._tokenize = self._conn.fts5_tokenizer("porter", ["unicode61"])

    def tokens(self, text: str, *, query: bool = False) -> list[str]:
        reason = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
        found = self._tokenize(text.encode(), reason, None)
        # Each item is (start, end, token, *colocated tokens); porter adds no colocated ones.
        return [str(item[2]) for item in found if not isinstance(item, str) and len(item) > 2]

    def postings(self, text: str) -> tuple[Counter[str], int]:
        """Term frequencies of a document, and its length in tokens."""
        tokens = self.tokens(text)
        return Counter(tokens), len(tokens)

    def close(self) -> None:
        self._conn.close()


def query_tokens(tokenizer: Tokenizer, terms: Sequence[str]) -> list[str]:
    """The tokens of every query term, in order, repeats kept."""
    return [token for term in terms for token in tokenizer.tokens(term, query=True)]
