"""Many agents at once: `phi mcp --http` server processes on one PostgreSQL, under many MCP
clients, for a fixed time per cell.

    uv run --frozen python bench/load.py --db URL [--servers 1,2,4] [--clients 8,32,64]
        [--duration 20] [--seed-rows 20] [--pool-max N] [--keep] [--json FILE]

`--db` is a PostgreSQL URL (`scripts/test-postgres | tail -1`, or `phi postgres up`'s); the
bench makes a fresh schema in its database, creates the store there once (seeding every
client's namespace with `--seed-rows` notes through `Memory`), and drops it at the end.
For each server count it starts that many `phi mcp --http --token-file` processes, each
its own PostgreSQL pool (sessions named `phi-load-sN` through PGAPPNAME); for each client
count, that many clients of the official MCP SDK, client i on server i mod N with a bearer
token of its own confined to its own prefix (`rw:load-i-`), call `remember` (one in five)
or `recall` (the rest) in a loop until the cell's time is up, each call after the last
one answered. Afterwards every acknowledged write's unique marker is counted in the
database: it must be there exactly once (`lost`, `doubled`).

What each cell reports, besides throughput and p50/p95/p99 per tool: the CPU the server
processes spent (their event loop apart from their worker threads, where MiniLM runs),
the CPU of their PostgreSQL backends and the CPU of this process (the clients), per
answered call and in total (cores busy: CPU seconds per second; 2 on this machine is the
ceiling), and the pools' use, sampled from `pg_stat_activity` every 0.2 s: sessions open
per server and how many of them were checked out (`busy`: running a statement, or inside
a transaction between two), and how many of those waited on a lock. A pool is the
bottleneck when its sessions are all busy; the database is when busy sessions wait on
locks or its backends' CPU fills a core.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import psycopg
from anyio.abc import TaskStatus
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from phi.memory import Memory, MiniLMEmbedder, NewRow
from phi.private import private_dir, write_private

PHI = str(Path(sys.executable).parent / "phi")
WRITE_EVERY = 5
"""Every fifth call of a client is a write, the rest recalls (one write to four recalls: an
agent recalls before it answers, and keeps less); clients start at different points."""
CALL_TIMEOUT_S = 60.0
SAMPLE_EVERY_S = 0.2
BUSY = ("active", "idle in transaction")
"""Session states of a connection the pool has handed out."""
MARKER = re.compile(r"\[(lm-[0-9a-f]{8}(?:-\d+)+)\]")
TICK = os.sysconf("SC_CLK_TCK")

LIBS = ["httpx", "pydantic", "psycopg", "numpy", "uvicorn", "anyio", "typer", "onnxruntime"]
TOPICS = ["retries", "timeouts", "the cache", "logging", "the schema", "auth", "batching"]
WHY = ["a flaky test", "the release", "a customer report", "the benchmark", "a review comment"]


def note_text(rng: random.Random, marker: str) -> str:
    """A note as an agent writes one, carrying `marker` (unique per write)."""
    lib, topic, why = rng.choice(LIBS), rng.choice(TOPICS), rng.choice(WHY)
    return f"We pinned {lib} and changed {topic} after {why}. [{marker}]"


def question(rng: random.Random) -> str:
    return f"what did we decide about {rng.choice(TOPICS)} in {rng.choice(LIBS)}?"


# -- accounting (pure) -------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank `q` quantile of `values`; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass(frozen=True)
class Call:
    tool: str
    ms: float
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Audit:
    """Acknowledged writes against what the database holds, by marker."""

    acked: int
    lost: int
    """Acknowledged, and not in the database."""
    doubled: int
    """In the database more than once (acknowledged or not)."""
    unacked_present: int
    """Failed or timed out for the client, stored all the same (not an error of the store)."""
    strangers: int
    """In the database under this cell's tag, but never sent (must be 0)."""


def audit(acked: set[str], failed: set[str], stored: Counter[str]) -> Audit:
    return Audit(
        acked=len(acked),
        lost=sum(1 for m in acked if stored[m] == 0),
        doubled=sum(1 for n in stored.values() if n > 1),
        unacked_present=sum(1 for m in failed if stored[m] > 0),
        strangers=sum(1 for m in stored if m not in acked and m not in failed),
    )


def latencies(calls: Sequence[Call], tool: str) -> dict[str, float | int | None]:
    ok = [c.ms for c in calls if c.tool == tool and c.error is None]
    return {
        "n": len(ok),
        "p50": percentile(ok, 0.50),
        "p95": percentile(ok, 0.95),
        "p99": percentile(ok, 0.99),
    }


# -- CPU from /proc ------------------------------------------------------------------------


def cpu_of(stat_path: Path) -> float:
    """User + system CPU seconds in a /proc `stat` file; 0 when it is gone."""
    try:
        text = stat_path.read_text()
    except OSError:
        return 0.0
    fields = text[text.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def server_cpu(pid: int) -> tuple[float, float]:
    """A server process's CPU seconds: its main thread (the event loop), its other threads
    (anyio's workers, where MiniLM and onnxruntime's intra-op pool run)."""
    main = cpu_of(Path(f"/proc/{pid}/task/{pid}/stat"))
    return main, cpu_of(Path(f"/proc/{pid}/stat")) - main


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system


# -- the database --------------------------------------------------------------------------


@asynccontextmanager
async def fresh_store(url: str, *, keep: bool) -> AsyncIterator[str]:
    """A URL whose store lives in a new schema of `url`'s database (dropped afterwards)."""
    schema = f"phi_load_{uuid.uuid4().hex[:10]}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
        try:
            option = quote(f"-c search_path={schema},public")
            yield f"{url}{'&' if '?' in url else '?'}options={option}"
        finally:
            if keep:
                print(f"kept schema {schema}", file=sys.stderr)
            else:
                await conn.execute(f"DROP SCHEMA {schema} CASCADE")


async def seed(url: str, namespaces: Sequence[str], rows: int) -> float:
    """Create the store and give each namespace `rows` notes; the seconds it took."""
    rng = random.Random(1)
    started = time.monotonic()
    async with Memory.open(url, embedder=MiniLMEmbedder()) as memory:
        for ns in namespaces:
            notes = [
                NewRow(content=note_text(rng, f"seed-{ns}-{i}"), namespace=ns) for i in range(rows)
            ]
            await memory.remember_many(notes)
    return time.monotonic() - started


async def stored_markers(url: str, tag: str) -> Counter[str]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("SELECT content FROM rows WHERE content LIKE %s", (f"%[{tag}-%",))
        return Counter(m for (content,) in await cur.fetchall() for m in MARKER.findall(content))


@dataclass
class Sessions:
    """`pg_stat_activity` of the servers' pools, sampled while a cell runs."""

    samples: int = 0
    open: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    busy: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    lock_waits: int = 0
    base_cpu: dict[int, float] = field(default_factory=dict)
    last_cpu: dict[int, float] = field(default_factory=dict)

    def backend_cpu(self) -> float:
        return sum(cpu - self.base_cpu.get(pid, 0.0) for pid, cpu in self.last_cpu.items())

    def summary(self) -> dict[str, float]:
        per_server = list(self.open)
        if not per_server or not self.samples:
            return {
                "open_mean": 0,
                "open_max": 0,
                "busy_mean": 0,
                "busy_max": 0,
                "lock_waits_mean": 0,
            }
        return {
            "open_mean": sum(sum(v) for v in self.open.values()) / self.samples / len(per_server),
            "open_max": max(max(v) for v in self.open.values()),
            "busy_mean": sum(sum(v) for v in self.busy.values()) / self.samples / len(per_server),
            "busy_max": max(max(v) for v in self.busy.values()),
            "lock_waits_mean": self.lock_waits / self.samples,
        }


async def watch_sessions(
    url: str, into: Sessions, stop: anyio.Event, *, task_status: TaskStatus[None]
) -> None:
    """Sample the servers' sessions until `stop`; started once the first sample is in."""
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, application_name="phi-load-probe"
    ) as conn:
        first = True
        while not stop.is_set():
            cur = await conn.execute(
                "SELECT application_name, pid, state, wait_event_type FROM pg_stat_activity"
                " WHERE application_name LIKE 'phi-load-s%%'"
            )
            seen = await cur.fetchall()
            open_now: Counter[str] = Counter(app for app, *_ in seen)
            busy_now: Counter[str] = Counter(app for app, _, st, _ in seen if st in BUSY)
            into.samples += 1
            for app in {app for app, *_ in seen} | set(into.open):
                into.open[app].append(open_now[app])
                into.busy[app].append(busy_now[app])
            into.lock_waits += sum(1 for *_, wait in seen if wait == "Lock")
            for _, pid, _, _ in seen:
                cpu = cpu_of(Path(f"/proc/{pid}/stat"))
                if first:
                    into.base_cpu[pid] = cpu
                into.last_cpu[pid] = cpu
            if first:
                task_status.started()
            first = False
            await anyio.sleep(SAMPLE_EVERY_S)


# -- servers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    process: subprocess.Popen[bytes]
    url: str
    log: Path


def start_servers(
    n: int, db: str, tokens: Path, home: Path, pool_max: int | None = None
) -> list[Server]:
    """`n` `phi mcp --http` processes on free loopback ports, once each says it serves."""
    servers = []
    for i in range(n):
        log = home / f"server-{i}.log"
        env = {**os.environ, "PHI_HOME": str(home / "phi"), "PGAPPNAME": f"phi-load-s{i}"}
        if pool_max is not None:
            env["PHI_POSTGRES_POOL_MAX"] = str(pool_max)
        with log.open("wb") as out:
            process = subprocess.Popen(
                [PHI, "mcp", "--db", db, "--http", "--port", "0", "--token-file", str(tokens)],
                stdout=out,
                stderr=out,
                env=env,
            )
        servers.append(Server(process, "", log))
    ready = []
    deadline = time.monotonic() + 120
    for server in servers:
        while (
            found := re.search(r"(http://127\.0\.0\.1:\d+/mcp)", server.log.read_text())
        ) is None:
            if server.process.poll() is not None or time.monotonic() > deadline:
                stop_servers(servers)
                raise SystemExit(f"error: a server did not start:\n{server.log.read_text()}")
            time.sleep(0.1)
        ready.append(Server(server.process, found.group(1), server.log))
    return ready


def stop_servers(servers: Sequence[Server]) -> None:
    for server in servers:
        server.process.terminate()
    for server in servers:
        try:
            server.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


# -- clients -------------------------------------------------------------------------------


@dataclass
class Cell:
    """What the clients of one cell did (filled while it runs)."""

    tag: str
    clients: int
    calls: list[Call] = field(default_factory=list)
    acked: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    errors: Counter[str] = field(default_factory=Counter)
    connected: int = 0
    all_in: anyio.Event = field(default_factory=anyio.Event)
    """Every client has connected and warmed up."""
    go: anyio.Event = field(default_factory=anyio.Event)
    end: float = 0.0
    """When clients stop starting calls (`time.monotonic`), set with `go`."""


async def call(mcp: Client, tool: str, arguments: dict[str, Any]) -> str | None:
    """One tool call; the error it ended with, or None."""
    try:
        with anyio.fail_after(CALL_TIMEOUT_S):
            done = await mcp.call_tool(tool, arguments)
    except Exception as exc:  # a dropped connection, a timeout: counted, never fatal
        return f"{type(exc).__name__}: {str(exc)[:100]}"
    if done.is_error:
        first = done.content[0] if done.content else None
        return f"tool error: {getattr(first, 'text', '')[:100]}"
    return None


async def agent(i: int, url: str, token: str, cell: Cell) -> None:
    """One client: connect, warm up, then call until the cell's end."""
    rng = random.Random(f"{cell.tag}-{i}")
    ns = f"load-{i}-notes"
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as mcp,
    ):
        if error := await call(mcp, "recall", {"query": question(rng), "namespaces": [ns]}):
            raise RuntimeError(f"client {i} at {url}: its first recall failed: {error}")
        cell.connected += 1
        if cell.connected == cell.clients:
            cell.all_in.set()
        await cell.go.wait()
        n = 0
        while time.monotonic() < cell.end:
            n += 1
            args: dict[str, Any]
            if (n + i) % WRITE_EVERY == 1:
                marker = f"{cell.tag}-{i}-{n}"
                tool, args = "remember", {"content": note_text(rng, marker), "namespace": ns}
            else:
                marker, tool = "", "recall"
                args = {"query": question(rng), "namespaces": [ns], "limit": 10}
            started = time.perf_counter()
            error = await call(mcp, tool, args)
            cell.calls.append(Call(tool, (time.perf_counter() - started) * 1000, error))
            if error is not None:
                cell.errors[f"{tool}: {error}"] += 1
            if marker:
                (cell.failed if error else cell.acked).add(marker)


async def run_cell(
    servers: Sequence[Server],
    tokens: Sequence[str],
    clients: int,
    duration: float,
    db: str,
    run: str,
) -> dict[str, Any]:
    """`clients` agents on `servers` for `duration` seconds; what they got, and what it cost."""
    cell = Cell(tag=f"lm-{run}-{len(servers)}-{clients}", clients=clients)
    stop, sessions = anyio.Event(), Sessions()
    load_before = os.getloadavg()[0]
    async with anyio.create_task_group() as outer:
        async with anyio.create_task_group() as agents:
            for i in range(clients):
                url = servers[i % len(servers)].url
                agents.start_soon(agent, i, url, tokens[i], cell)
            await cell.all_in.wait()
            await outer.start(watch_sessions, db, sessions, stop)
            cpu0 = [server_cpu(s.process.pid) for s in servers]
            mine0, t0 = own_cpu(), time.monotonic()
            cell.end = t0 + duration
            cell.go.set()
        # Every agent has had its last call answered.
        wall = time.monotonic() - t0
        cpu1 = [server_cpu(s.process.pid) for s in servers]
        mine = own_cpu() - mine0
        stop.set()
    audited = audit(cell.acked, cell.failed, await stored_markers(db, cell.tag))
    ok = [c for c in cell.calls if c.error is None]
    loop = sum(b[0] - a[0] for a, b in zip(cpu0, cpu1, strict=True))
    workers = sum(b[1] - a[1] for a, b in zip(cpu0, cpu1, strict=True))
    return {
        "servers": len(servers),
        "clients": clients,
        "seconds": round(wall, 2),
        "calls_per_s": len(ok) / wall,
        "recall_per_s": sum(1 for c in ok if c.tool == "recall") / wall,
        "remember_per_s": sum(1 for c in ok if c.tool == "remember") / wall,
        "recall_ms": latencies(cell.calls, "recall"),
        "remember_ms": latencies(cell.calls, "remember"),
        "errors": sum(cell.errors.values()),
        "error_kinds": dict(cell.errors.most_common(5)),
        "audit": asdict(audited),
        "cores": {
            "server_loop": loop / wall,
            "server_workers": workers / wall,
            "postgres": sessions.backend_cpu() / wall,
            "clients": mine / wall,
        },
        "sessions": sessions.summary(),
        "load": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


# -- the report ----------------------------------------------------------------------------


def _ms(stats: dict[str, Any]) -> str:
    if stats["n"] == 0:
        return "-"
    return " / ".join(f"{stats[q]:.0f}" for q in ("p50", "p95", "p99"))


def per_call(cell: dict[str, Any]) -> dict[str, float]:
    """CPU milliseconds each answered call cost, by where it was spent."""
    calls = cell["calls_per_s"] * cell["seconds"]
    return {
        k: v * cell["seconds"] * 1000 / calls if calls else 0.0 for k, v in cell["cores"].items()
    }


def markdown(cells: Sequence[dict[str, Any]]) -> str:
    head = (
        "| servers | clients | calls/s (recall + remember) | recall p50 / p95 / p99 ms"
        " | remember p50 / p95 / p99 ms | errors | acked writes (lost / doubled)"
        " | CPU ms per call: server loop / embedder threads / PostgreSQL / clients"
        " | cores busy | DB sessions per server: open / busy (busiest) |"
    )
    lines = [head, "|" + "---|" * (head.count(" | ") + 1)]
    for c in cells:
        a, s, ms = c["audit"], c["sessions"], per_call(c)
        lines.append(
            f"| {c['servers']} | {c['clients']} | {c['calls_per_s']:.1f}"
            f" ({c['recall_per_s']:.1f} + {c['remember_per_s']:.1f})"
            f" | {_ms(c['recall_ms'])} | {_ms(c['remember_ms'])}"
            f" | {c['errors']} | {a['acked']:,} ({a['lost']} / {a['doubled']})"
            f" | {ms['server_loop']:.1f} / {ms['server_workers']:.1f}"
            f" / {ms['postgres']:.1f} / {ms['clients']:.1f}"
            f" | {sum(c['cores'].values()):.2f}"
            f" | {s['open_mean']:.1f} / {s['busy_mean']:.2f} ({s['busy_max']}) |"
        )
    return "\n".join(lines)


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of counts"
        ) from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: every count must be at least 1")
    return counts


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="load.py", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "--db",
        default=os.environ.get("PHI_TEST_POSTGRES_URL"),
        help="PostgreSQL URL (default: $PHI_TEST_POSTGRES_URL)",
    )
    parser.add_argument("--servers", type=_counts, default=[1, 2, 4])
    parser.add_argument("--clients", type=_counts, default=[8, 32, 64])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per cell")
    parser.add_argument("--seed-rows", type=int, default=20, help="notes per namespace first")
    parser.add_argument(
        "--pool-max", type=int, help="PHI_POSTGRES_POOL_MAX of the servers (default: theirs)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the schema afterwards")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON to this file")
    args = parser.parse_args(argv)
    if not args.db or not args.db.startswith(("postgresql://", "postgres://")):
        parser.error("give --db postgresql://... (e.g. `scripts/test-postgres | tail -1`)")
    too_small = args.pool_max is not None and args.pool_max < 1
    if args.duration <= 0 or args.seed_rows < 0 or too_small:
        parser.error("--duration must be above 0, --seed-rows at least 0, --pool-max at least 1")
    return args


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    run = uuid.uuid4().hex[:8]
    most = max(args.clients)
    tokens = [secrets.token_hex(16) for _ in range(most)]
    cells: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="phi-load-") as tmp:
        home = private_dir(Path(tmp))
        grants = "".join(f"agent-{i} {t} rw:load-{i}-\n" for i, t in enumerate(tokens))
        token_file = write_private(home / "tokens", grants)
        async with fresh_store(args.db, keep=args.keep) as db:
            namespaces = [f"load-{i}-notes" for i in range(most)]
            took = await seed(db, namespaces, args.seed_rows)
            print(
                f"seeded {len(namespaces)} x {args.seed_rows} notes in {took:.1f} s",
                file=sys.stderr,
            )
            for n in args.servers:
                servers = await anyio.to_thread.run_sync(
                    start_servers, n, db, token_file, home, args.pool_max
                )
                try:
                    for clients in args.clients:
                        cell = await run_cell(servers, tokens, clients, args.duration, db, run)
                        print(markdown([cell]).splitlines()[-1], file=sys.stderr)
                        cells.append(cell)
                finally:
                    stop_servers(servers)
    return {
        "run": run,
        "duration_s": args.duration,
        "seed_rows": args.seed_rows,
        "write_every": WRITE_EVERY,
        "cpu_count": os.cpu_count(),
        "cells": cells,
    }


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    load = os.getloadavg()
    result = anyio.run(bench, args)
    result["load_before"], result["load_after"] = list(load), list(os.getloadavg())
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result["cells"]))
    print(
        f"\n{args.duration:g} s per cell; load average before {load[0]:.2f}, after"
        f" {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)"
    )


if __name__ == "__main__":
    main()
