"""Latency and scale of the memory engine: 10k, 100k and 1M rows over ~1000 namespaces.

    uv run python bench/scale.py [--sizes 10000,100000,1000000] [--db STORE ...]
        [--keep DIR] [--plot FILE] [--dim 1536]

`--db` names a store: `sqlite` (a temporary file, the default), a folder (a SQLite file in
it), or a `postgresql://` URL (a fresh schema in that database, dropped afterwards).
Repeat it to measure several stores on the same data; the last table then gives each
store's figures as a ratio to the first's. Each size is measured on a store of its own.
`--keep DIR` keeps them and reuses them on the next run, topped up to the size if they
hold fewer rows: SQLite's as `DIR/scale-<rows>.db`, PostgreSQL's as the schema
`phi_scale_<rows>` of the URL's database (a million rows took 3.4 minutes to fill on
SQLite, 10.5 on PostgreSQL, on the 2-core machine of `bench/scale.md`); a rerun measures
again without filling (a PostgreSQL store's fresh vectors settled first, as `phi memory
settle` would), and writes texts no run wrote before. `--plot FILE` draws scoped latency
against rows (log scale).

`--dim D` (default 384, MiniLM's) fills and measures with synthetic D-d vectors, as an
OpenAI-sized embedder (1,536-d) would store them. No model of that size runs here: new rows
get a synthetic vector per text (a seeded random direction: the ingest figures are the
store's cost without an embedder's), and the "MiniLM query" column is not measured (`-`).
Kept stores of another dimension are kept apart (`scale-<rows>-d<D>.db`,
`phi_scale_<rows>_d<D>`).

The store is filled through the store API, as a bulk load (`RowStore.bulk_load`: the
PostgreSQL store builds its HNSW index once, after the rows; the fill rate includes that
build), with realistic synthetic rows: low-rank plus
noise vectors clustered per namespace (uniformly random vectors would defeat any index)
and Zipf-distributed words (without the head of the curve, which real queries drop as
stopwords), each row linked to the previous one of its namespace. At each size it
measures, through `Memory`:
- ingest rate of new rows through `remember_many`, real MiniLM embedding and edges
  included, on real conversational text (LoCoMo turns when the data is beside the checkout,
  else template sentences);
- the same with `defer_embedding` and a background embedder: rows acknowledged per
  second (text-searchable at once), and how long after the last write the queue was empty
  (from then on every row is meaning-searchable too);
- namespace-scoped top-10 recall latency, without the query embedding (a cached vector)
  and with it (MiniLM), p50 and p95, each query's namespace searched once before
  (`paired_latencies`);
- that first search of each namespace on its own (cached vector): the cold figure;
- unscoped top-10 recall latency;
- scoped latency (cached query vector) while another process ingests chat turns;
- the file size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from urllib.parse import quote

import anyio
import numpy as np
import psycopg

from phi.bench.locomo import DEV_SPLIT
from phi.memory import Memory, MiniLMEmbedder, NewRow, upkeep
from phi.memory.embed import Vectors
from phi.memory.model import Edge, Row, content_hash, new_row_id
from phi.memory.scratch import scratch_location
from phi.memory.store import RowWrite

NAMESPACES = 1000
RANK = 48
VOCABULARY = 20_000
STOPWORD_RANKS = 100
"""The most frequent words are stopwords: real text keeps them, real queries drop them."""
LOCOMO = DEV_SPLIT
T0 = datetime(2025, 1, 1, tzinfo=UTC)
DIM = 384
"""The vectors' dimension (`--dim`): 384 is MiniLM's, any other is synthetic."""


@dataclass
class SyntheticEmbedder:
    """A stand-in for an embedder of another size: each text gets a fixed random direction
    (seeded by the text), at no model cost."""

    dimension: int

    @property
    def name(self) -> str:
        return f"synthetic-{self.dimension}"

    async def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            v = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(self.dimension)
            out[i] = v / np.linalg.norm(v)
        return out


def embedder_for(dim: int) -> MiniLMEmbedder | SyntheticEmbedder:
    return MiniLMEmbedder() if dim == 384 else SyntheticEmbedder(dim)


@dataclass
class CachedEmbedder:
    """Serves precomputed query vectors: measures recall without the embedding cost."""

    vectors: dict[str, np.ndarray]
    name: str = "all-MiniLM-L6-v2"
    dimension: int = 384

    async def embed(self, texts: Sequence[str]) -> Vectors:
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)


class Generator:
    """Rows whose vectors and words look like a real memory's, made fast."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)
        basis, _ = np.linalg.qr(self.rng.standard_normal((DIM, RANK)))
        self.basis = basis.astype(np.float32)
        self.centres = self.rng.standard_normal((NAMESPACES, RANK)).astype(np.float32)
        ranks = np.arange(STOPWORD_RANKS + 1, STOPWORD_RANKS + VOCABULARY + 1)
        self.word_p = (1 / ranks) / (1 / ranks).sum()
        self.words = np.array([f"w{i}" for i in range(VOCABULARY)])

    def vectors(self, namespaces: np.ndarray) -> np.ndarray:
        latent = self.centres[namespaces] + 0.8 * self.rng.standard_normal((len(namespaces), RANK))
        v = latent @ self.basis.T + 0.15 * self.rng.standard_normal((len(namespaces), DIM))
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    def texts(self, n: int) -> list[str]:
        picks = self.rng.choice(VOCABULARY, size=(n, 24), p=self.word_p)
        return [" ".join(self.words[row]) for row in picks]


async def fill(memory: Memory, gen: Generator, start: int, stop: int, last: dict[int, str]) -> None:
    batch = 2000
    for offset in range(start, stop, batch):
        n = min(batch, stop - offset)
        namespaces = gen.rng.integers(0, NAMESPACES, size=n)
        vectors, texts = gen.vectors(namespaces), gen.texts(n)
        writes, edges = [], []
        for i in range(n):
            ns = int(namespaces[i])
            moment = T0 + timedelta(seconds=offset + i)
            row = Row(
                row_id=new_row_id(),
                namespace=f"bench-{ns:04d}",
                kind="interaction",
                content=texts[i],
                status="active",
                supersedes=None,
                trust="high",
                tags=(),
                source_uris=(f"bench://{offset + i}",),
                author=None,
                created_at=moment,
                updated_at=moment,
                meta={},
                content_hash=content_hash("interaction", texts[i], ()),
            )
            writes.append(RowWrite(row=row, vector=vectors[i]))
            if ns in last:
                edges.append(Edge(src=last[ns], dst=row.row_id, edge_type="temporal"))
            last[ns] = row.row_id
        await memory.store.write(writes, edges)


def conversational_texts(n: int, offset: int) -> list[str]:
    """Real chat turns ("speaker: text"), so embedding cost is that of real messages."""
    if LOCOMO.exists():
        turns = [
            f"{turn['speaker']}: {turn['text']}"
            for sample in json.loads(LOCOMO.read_text())
            for key, session in sample["conversation"].items()
            if key.startswith("session_") and isinstance(session, list)
            for turn in session
        ]
    else:
        turns = [
            f"alice: I went to the {p} with my {w} and we talked about {t} for hours"
            for p in ("park", "lake", "market", "museum")
            for w in ("sister", "friend", "dog", "team")
            for t in ("birds", "rust", "music", "work")
        ]
    # A counter keeps every text new: a repeated text would be deduplicated, not embedded.
    return [f"{turns[(offset + i) % len(turns)]} ({offset + i})" for i in range(n)]


def short_facts(n: int, offset: int) -> list[str]:
    """Observation-sized rows ("likes rust"): what extraction writes, about ten tokens each."""
    verbs = ("likes", "is learning", "works on", "visited", "wants to try", "stopped using")
    things = ("rust", "the cello", "sourdough", "Lisbon", "bouldering", "a garden", "chess")
    return [
        f"{verbs[i % len(verbs)]} {things[(i // len(verbs)) % len(things)]} (#{offset + i})"
        for i in range(n)
    ]


async def ingest_rate(memory: Memory, gen: Generator, texts: list[str]) -> float:
    n = len(texts)
    namespaces = gen.rng.integers(0, NAMESPACES, size=n)
    rows = [
        NewRow(content=text, namespace=f"bench-{int(ns):04d}", kind="interaction")
        for text, ns in zip(texts, namespaces, strict=True)
    ]
    started = time.perf_counter()
    for offset in range(0, n, 256):
        await memory.remember_many(rows[offset : offset + 256])
    return n / (time.perf_counter() - started)


async def deferred_rate(
    memory: Memory, gen: Generator, texts: list[str]
) -> tuple[float, float, float]:
    """Chat turns written in batches of 32 with `defer_embedding` while a background task
    embeds the queue: acknowledged rows/s (each row text-searchable when acknowledged),
    the embedder's rows/s, and the seconds from the last acknowledgement until the queue
    was empty (every row meaning-searchable)."""
    rows = [
        NewRow(content=text, namespace=f"bench-{int(ns):04d}", kind="interaction")
        for text, ns in zip(texts, gen.rng.integers(0, NAMESPACES, size=len(texts)), strict=True)
    ]
    written = anyio.Event()
    embedded = 0

    async def embedder() -> None:
        nonlocal embedded
        while True:
            done = await memory.embed_pending(batch=64)
            embedded += done
            if not done:
                if written.is_set():
                    return
                await anyio.sleep(0.02)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(embedder)
        for offset in range(0, len(rows), 32):
            await memory.remember_many(rows[offset : offset + 32], defer_embedding=True)
        acknowledged = time.perf_counter()
        written.set()
    finished = time.perf_counter()
    return (
        len(rows) / (acknowledged - started),
        embedded / (finished - started),
        finished - acknowledged,
    )


def quantiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


async def latencies(
    memory: Memory, queries: list[str], namespaces: list[str | None]
) -> list[float]:
    out = []
    for query, namespace in zip(queries, namespaces, strict=True):
        started = time.perf_counter()
        await memory.search(query, namespace=namespace, limit=10)
        out.append((time.perf_counter() - started) * 1000)
    return out


async def paired_latencies(
    embedding: Memory | None, cached: Memory, queries: list[str], namespaces: list[str | None]
) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float]]:
    """Scoped latency with the query embedded (on `embedding`: MiniLM) and with its vector
    cached, each query timed both ways one after the other: the two columns then differ by
    what the embedding costs the search, not by what the machine or the server was doing
    meanwhile; which way goes first alternates from query to query. And, third, the first
    search of each query's namespace (cached vector).

    That first pass comes before the paired ones, so they measure a store whose working set
    is in memory, as an agent's store is while it talks with the people it remembers: the
    first search of a namespace reads its pages from wherever they are. On PostgreSQL after
    a million-row fill that is often the disk: the fill's ~10 GB of WAL pushes the
    tables out of the OS page cache (measured with `fincore`: 0-30% of the hot relations
    resident, the SQLite file 100%), and a first search took 16-18 ms where a second took
    7.4. Timing a mix of first and second searches made the columns measure that
    mix. Without a real model (`--dim`) the embedded column is `nan`."""
    first = quantiles(await latencies(cached, queries, namespaces))
    memories = [m for m in (embedding, cached) if m is not None]
    if embedding is not None:
        await latencies(embedding, queries[:20], namespaces[:20])  # the model's first calls
    timed: list[list[float]] = [[] for _ in memories]
    for i, (query, namespace) in enumerate(zip(queries, namespaces, strict=True)):
        pairs = list(zip(memories, timed, strict=True))
        for memory, out in pairs if i % 2 == 0 else reversed(pairs):
            out.extend(await latencies(memory, [query], [namespace]))
    without = quantiles(timed[-1])
    embedded = quantiles(timed[0]) if embedding is not None else (float("nan"),) * 2
    return embedded, without, first


@dataclass
class Figures:
    """One size's measurements (latencies in ms as (p50, p95))."""

    size: int
    fill_rate: float
    """Rows/s filling the store through the store API, index builds included."""
    index_build: float
    """Seconds of the fill spent building the vector index after a bulk load (0 when the
    backend keeps its indexes up row by row)."""
    ingest_rate: float
    short_rate: float
    deferred: tuple[float, float, float]
    """Acknowledged rows/s with embedding deferred, the embedder's rows/s, and seconds
    from the last write until every row was embedded."""
    scoped: tuple[float, float]
    scoped_embedded: tuple[float, float]
    first: tuple[float, float]
    """Scoped latency (cached vector) of the first search of each query's namespace."""
    unscoped: tuple[float, float]
    concurrent: tuple[float, float]
    writer_rate: float
    """The other process's rows/s during the concurrent measurement."""
    size_mb: float


async def ingest_for(path: str, seconds: float) -> None:
    """The other process of the concurrent measurement: chat turns through `remember_many`
    (MiniLM included) in batches of 32, printing its progress, for at most `seconds`."""
    gen = Generator(seed=os.getpid())
    written, started = 0, time.perf_counter()
    async with Memory.open(path, embedder=embedder_for(DIM)) as memory:
        print("ready", flush=True)
        while time.perf_counter() - started < seconds:
            texts = conversational_texts(32, 10_000_000 + os.getpid() * 100_000 + written)
            namespaces = gen.rng.integers(0, NAMESPACES, size=len(texts))
            await memory.remember_many(
                [
                    NewRow(content=t, namespace=f"bench-{int(ns):04d}", kind="interaction")
                    for t, ns in zip(texts, namespaces, strict=True)
                ]
            )
            written += len(texts)
            print(f"{written} {time.perf_counter() - started:.3f}", flush=True)


async def under_writes(
    path: str, memory: Memory, queries: list[str], scoped: list[str | None]
) -> tuple[tuple[float, float], float]:
    """Scoped latency while a second process ingests, and that process's rows/s."""
    writer = await anyio.open_process(
        [sys.executable, __file__, "--ingest-into", path, "--seconds", "900", "--dim", str(DIM)],
        stdout=subprocess.PIPE,
    )
    assert writer.stdout is not None
    out = b""
    try:
        while b"ready" not in out:  # the writer has its store open
            out += await writer.stdout.receive()
        await anyio.sleep(3.0)  # past its first batch: MiniLM loaded, writing steadily
        found = quantiles(await latencies(memory, queries, scoped))
    finally:
        writer.terminate()
        async for chunk in writer.stdout:
            out += chunk
        await writer.wait()
    progress = out.decode().split()
    rate = float(progress[-2]) / float(progress[-1]) if len(progress) >= 3 else 0.0
    return found, rate


def is_postgres(store: str) -> bool:
    return store.startswith(("postgresql://", "postgres://"))


def kept_rows(path: str) -> int:
    """Rows already in a kept SQLite store (0 when it does not exist yet)."""
    if not Path(path).exists():
        return 0
    import apsw  # only for a kept SQLite store: read its count without opening Memory

    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(next(conn.execute("SELECT count(*) FROM rows"))[0])
    finally:
        conn.close()


async def kept_schema(url: str, size: int) -> tuple[str, int]:
    """The kept PostgreSQL store of a size: its URL (schema `phi_scale_<size>`, created
    if missing) and the rows it holds."""
    schema = f"phi_scale_{size}" + (f"_d{DIM}" if DIM != 384 else "")
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.rows",))
        exists = (await cur.fetchone() or (False,))[0]
        rows = 0
        if exists:
            cur = await conn.execute(f"SELECT count(*) FROM {schema}.rows")
            rows = int((await cur.fetchone() or (0,))[0])
    option = quote(f"-c search_path={schema},public")
    return f"{url}{'&' if '?' in url else '?'}options={option}", rows


@asynccontextmanager
async def sized_store(
    store: str, size: int, index: int, *, keep: Path | None, tmp: str
) -> AsyncIterator[tuple[str, int]]:
    """The store to measure a size on, and the rows it already holds: a kept one, or a
    fresh one removed afterwards."""
    if keep is not None and is_postgres(store):
        yield await kept_schema(store, size)
    elif keep is not None:
        path = str(keep / (f"scale-{size}" + (f"-d{DIM}" if DIM != 384 else "") + ".db"))
        yield path, kept_rows(path)
    else:
        base = tmp if store == "sqlite" else store
        async with scratch_location(base, f"scale{index}-{size}") as location:
            yield location, 0


async def measure(
    store: str,
    index: int,
    sizes: list[int],
    queries: int,
    ingest: int,
    *,
    keep: Path | None,
    tmp: str,
) -> list[Figures]:
    gen = Generator()
    minilm = embedder_for(DIM)
    query_texts = [" ".join(t.split()[:6]) for t in gen.texts(queries)]
    query_vectors = dict(zip(query_texts, await minilm.embed(query_texts), strict=True))
    picks = gen.rng.integers(0, 1 << 30, size=queries)
    columns = [
        "rows",
        "fill rows/s (no embedding; of it, index build s)",
        "ingest rows/s, chat turns (MiniLM + edges)",
        "ingest rows/s, short facts",
        "ingest rows/s, chat turns, embedding deferred (embedder rows/s; queue empty after s)",
        "scoped p50/p95 ms, cached query vector",
        "scoped p50/p95 ms, MiniLM query",
        "scoped p50/p95 ms, first search of its namespace (cached vector)",
        "unscoped p50/p95 ms, cached",
        "scoped p50/p95 ms while another process ingests (its rows/s)",
        "file MB",
    ]
    print(f"\nstore: {store.split('?')[0]} ({DIM}-d vectors)")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    figures: list[Figures] = []
    for size in sizes:
        async with sized_store(store, size, index, keep=keep, tmp=tmp) as (path, filled):
            found = await measure_size(
                path, size, filled, ingest, gen, minilm, query_vectors, picks
            )
        print(
            f"| {size:,} | "
            + (f"{found.fill_rate:,.0f}" if found.fill_rate else "kept")
            + (f" ({found.index_build:.0f} s)" if found.index_build else "")
            + f" | {found.ingest_rate:,.0f} | {found.short_rate:,.0f} | "
            f"{found.deferred[0]:,.0f} ({found.deferred[1]:,.0f}; {found.deferred[2]:.1f} s) | "
            f"{found.scoped[0]:.1f} / {found.scoped[1]:.1f} | "
            + (
                f"{found.scoped_embedded[0]:.1f} / {found.scoped_embedded[1]:.1f} | "
                if found.scoped_embedded[0] == found.scoped_embedded[0]  # nan: not measured
                else "- | "
            )
            + f"{found.first[0]:.1f} / {found.first[1]:.1f} | "
            + f"{found.unscoped[0]:.0f} / {found.unscoped[1]:.0f} | "
            f"{found.concurrent[0]:.1f} / {found.concurrent[1]:.1f}"
            f" ({found.writer_rate:.0f} rows/s) | {found.size_mb:,.0f} |",
            flush=True,
        )
        figures.append(found)
    return figures


async def measure_size(
    path: str,
    size: int,
    filled: int,
    ingest: int,
    gen: Generator,
    minilm: MiniLMEmbedder | SyntheticEmbedder,
    query_vectors: dict[str, np.ndarray],
    picks: np.ndarray,
) -> Figures:
    """Fill the store at `path` (holding `filled` rows) to `size` and measure it."""
    query_texts = list(query_vectors)
    async with Memory.open(path, embedder=minilm) as memory:
        started = time.perf_counter()
        async with memory.store.bulk_load() as bulk:
            await fill(memory, gen, filled, size - ingest, {})
            loaded = time.perf_counter()
        finished = time.perf_counter()
        fill_rate = max(size - ingest - filled, 0) / max(finished - started, 1e-9)
        await settle_first(path)
        # Past every text an earlier run wrote into a kept store: a text written again
        # would be deduplicated, not embedded, and the rate meaningless.
        fresh = size + filled
        rate = await ingest_rate(memory, gen, conversational_texts(ingest // 2, fresh))
        short_rate = await ingest_rate(memory, gen, short_facts(ingest // 2, fresh))
        deferred = await deferred_rate(
            memory, gen, conversational_texts(ingest // 2, fresh + 50_000_000)
        )
        names = [n.namespace for n in await memory.namespaces(prefix="bench-")]
        scoped: list[str | None] = [names[int(p) % len(names)] for p in picks]
        cached = CachedEmbedder(query_vectors, name=minilm.name, dimension=minilm.dimension)
        async with Memory.open(path, embedder=cached) as quick:
            embedding = memory if isinstance(minilm, MiniLMEmbedder) else None
            with_embedding, without, first = await paired_latencies(
                embedding, quick, query_texts, scoped
            )
    async with Memory.open(path, embedder=cached) as memory:
        await latencies(memory, query_texts[:20], scoped[:20])  # warm the page cache
        unscoped = quantiles(await latencies(memory, query_texts[:20], [None] * 20))
        concurrent, writer_rate = await under_writes(path, memory, query_texts, scoped)
        size_mb = ((await memory.stats()).size_bytes or 0) / 1e6
    return Figures(
        size=size,
        fill_rate=fill_rate,
        index_build=finished - loaded if bulk else 0.0,
        ingest_rate=rate,
        short_rate=short_rate,
        deferred=deferred,
        scoped=without,
        scoped_embedded=with_embedding,
        first=first,
        unscoped=unscoped,
        concurrent=concurrent,
        writer_rate=writer_rate,
        size_mb=size_mb,
    )


async def settle_first(path: str) -> None:
    """Put the fresh vectors an earlier run left into the HNSW graph (`phi memory settle`),
    so every run starts where a store with its upkeep scheduled is: past `FRESH_MAX` fresh
    vectors each write settles as many as it adds, and the ingest figures would measure
    the backlog (at 1M rows a batch of 256 chat turns wrote in 488-971 ms with ~5,000
    fresh vectors waiting, in ~95 ms once settled). The time it took goes to stderr."""
    if not is_postgres(path):
        return
    report = await upkeep.settle(path)
    if report.settled:
        print(
            f"(settled {report.settled:,} fresh vectors first: {report.seconds:.1f} s,"
            f" {report.settled / max(report.seconds, 1e-9):,.0f}/s)",
            file=sys.stderr,
            flush=True,
        )


def plot_latency(names: list[str], runs: list[list[Figures]], path: Path) -> None:
    """Scoped p50 against rows, log-log, one line per store and query kind."""
    import matplotlib  # a development dependency: imported only when a chart is asked for

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for store, run in zip(names, runs, strict=True):
        name = "PostgreSQL" if is_postgres(store) else "SQLite"  # a URL makes a long label
        sizes = [f.size for f in run]
        ax.plot(sizes, [f.scoped[0] for f in run], marker="o", label=f"{name}: cached vector")
        ax.plot(
            sizes, [f.scoped_embedded[0] for f in run], marker="s", label=f"{name}: MiniLM query"
        )
        ax.plot(sizes, [f.concurrent[0] for f in run], marker="^", label=f"{name}: under writes")
    ax.axhline(5.0, color="grey", linestyle=":", linewidth=1, label="goal, cached (5 ms)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows in the store (~1000 namespaces)")
    ax.set_ylabel("scoped top-10 recall, p50 ms")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def ratio(value: float, base: float) -> str:
    """`value / base` as `1.23x`; `-` where either was not measured (a kept store that
    needed no fill has no fill rate)."""
    return f"{value / base:.2f}x" if value and base else "-"


def print_ratios(names: list[str], runs: list[list[Figures]]) -> None:
    """Each store's figures divided by the first store's (above 1: more rows/s, or slower)."""
    columns = [
        "store / " + names[0],
        "rows",
        "fill rows/s",
        "ingest rows/s, chat turns",
        "ingest rows/s, short facts",
        "scoped p50 / p95 (cached vector)",
        "scoped p50 / p95 (MiniLM)",
        "first search of a namespace p50 / p95",
        "unscoped p50 / p95",
    ]
    print("\n| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for name, run in zip(names[1:], runs[1:], strict=True):
        for base, other in zip(runs[0], run, strict=True):
            print(
                f"| {name} | {other.size:,} | {ratio(other.fill_rate, base.fill_rate)} | "
                f"{other.ingest_rate / base.ingest_rate:.2f}x | "
                f"{other.short_rate / base.short_rate:.2f}x | "
                f"{other.scoped[0] / base.scoped[0]:.2f}x / "
                f"{other.scoped[1] / base.scoped[1]:.2f}x | "
                f"{other.scoped_embedded[0] / base.scoped_embedded[0]:.2f}x / "
                f"{other.scoped_embedded[1] / base.scoped_embedded[1]:.2f}x | "
                f"{other.first[0] / base.first[0]:.2f}x / "
                f"{other.first[1] / base.first[1]:.2f}x | "
                f"{other.unscoped[0] / base.unscoped[0]:.2f}x / "
                f"{other.unscoped[1] / base.unscoped[1]:.2f}x |"
            )


async def run_all(
    stores: list[str],
    sizes: list[int],
    queries: int,
    ingest: int,
    *,
    keep: Path | None,
    plot: Path | None,
) -> None:
    runs: list[list[Figures]] = []
    with tempfile.TemporaryDirectory(prefix="phi-scale-") as tmp:
        for i, store in enumerate(stores):
            runs.append(await measure(store, i, sizes, queries, ingest, keep=keep, tmp=tmp))
    names = [s.split("?")[0] for s in stores]
    if len(runs) > 1:
        print_ratios(names, runs)
    if plot is not None:
        plot_latency(names, runs, plot)
        print(f"\nchart: {plot}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--ingest", type=int, default=2000, help="rows written through remember_many at each size"
    )
    parser.add_argument(
        "--db",
        action="append",
        default=None,
        help="`sqlite`, a folder, or a postgresql:// URL (repeatable; default: sqlite)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="keep and reuse the stores: SQLite's in this folder, PostgreSQL's as schemas",
    )
    parser.add_argument("--plot", type=Path, default=None, help="write a latency chart here")
    parser.add_argument(
        "--dim", type=int, default=384, help="vector dimension (not 384: synthetic vectors)"
    )
    parser.add_argument("--ingest-into", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=60.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global DIM
    DIM = args.dim
    if args.ingest_into is not None:  # the writer process of the concurrent measurement
        anyio.run(ingest_for, args.ingest_into, args.seconds)
        return
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    anyio.run(
        partial(
            run_all,
            args.db or ["sqlite"],
            sizes,
            args.queries,
            args.ingest,
            keep=args.keep,
            plot=args.plot,
        )
    )


if __name__ == "__main__":
    main()
