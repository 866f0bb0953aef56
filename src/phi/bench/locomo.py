"""LoCoMo retrieval benchmark: does recall find the past exchange that answers a question?

For each conversation: a fresh store; every turn written through the public write path as
an `interaction` ("speaker: text", created at its session's date, `dia_id` in meta); every
question of categories 1-4 asked through `Memory.search`, the same recall path phi uses.
recall@k is the share of a question's evidence turns found in the top k.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import anyio

from phi.errors import InvalidInput
from phi.memory import Memory, MiniLMEmbedder, NewRow, Turn
from phi.memory.embed import Embedder
from phi.memory.recall import DEFAULT_RECIPE, RecallRecipe
from phi.memory.scratch import scratch_location
from phi.private import private_file, private_mkdirs

__all__ = [
    "CATEGORIES",
    "DEV_SPLIT",
    "KS",
    "LocomoResult",
    "QuestionResult",
    "load_conversations",
    "run_locomo",
]

CATEGORIES: Final = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS: Final = (1, 5, 10, 20)
DEV_SPLIT: Final = Path(__file__).resolve().parents[3] / "data" / "locomo" / "locomo-dev.json"
"""The development split in the repository (`data/locomo/`, CC BY-NC 4.0, attribution in its
README): the only LoCoMo conversations phi is tuned on. Present in a checkout (phi installs
editable from it), not in a wheel."""


@dataclass(frozen=True, kw_only=True)
class QuestionResult:
    sample_id: str
    question: str
    category: int
    evidence: tuple[str, ...]
    ranked: tuple[str, ...]
    latency_ms: float

    def recall_at(self, k: int) -> float:
        top = set(self.ranked[:k])
        return sum(1 for e in self.evidence if e in top) / len(self.evidence)

    def to_json(self) -> dict[str, Any]:
        return {
            "sample_id": self.sample_id,
            "question": self.question,
            "category": self.category,
            "evidence": list(self.evidence),
            "ranked": list(self.ranked),
            "latency_ms": round(self.latency_ms, 3),
        }


@dataclass(kw_only=True)
class LocomoResult:
    questions: list[QuestionResult] = field(default_factory=list)
    turns: int = 0
    ingest_seconds: float = 0.0

    def recall(self, k: int, category: int | None = None) -> float:
        chosen = [q for q in self.questions if category is None or q.category == category]
        return statistics.fmean(q.recall_at(k) for q in chosen) if chosen else float("nan")

    def latency_ms(self, quantile: float) -> float:
        values = sorted(q.latency_ms for q in self.questions)
        return values[min(len(values) - 1, int(quantile * len(values)))] if values else float("nan")


def parse_session_date(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an aware UTC datetime."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise InvalidInput(f"unreadable LoCoMo session date {text!r}") from exc


def load_conversations(path: Path, samples: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The conversations of a LoCoMo file, optionally only the named sample ids."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"cannot read LoCoMo data {str(path)!r}: {exc}") from exc
    if not isinstance(data, list):
        raise InvalidInput(f"{str(path)!r} is not a LoCoMo file (expected a list of conversations)")
    if samples:
        known = {c["sample_id"] for c in data}
        missing = [s for s in samples if s not in known]
        if missing:
            raise InvalidInput(
                f"no conversation {missing[0]!r} in {str(path)!r}; have {sorted(known)}"
            )
        data = [c for c in data if c["sample_id"] in samples]
    return data


def _sessions(conversation: dict[str, Any]) -> Iterator[tuple[int, datetime, list[dict[str, Any]]]]:
    numbers = sorted(
        int(key.split("_")[1])
        for key in conversation
        if key.startswith("session_")
        and key.count("_") == 1
        and isinstance(conversation[key], list)
    )
    for n in numbers:
        yield (
            n,
            parse_session_date(conversation[f"session_{n}_date_time"]),
            conversation[f"session_{n}"],
        )


def interaction_rows(sample: dict[str, Any], namespace: str) -> list[NewRow]:
    """Every turn of a conversation as an interaction row, in order."""
    sample_id = sample["sample_id"]
    rows = []
    for number, when, turns in _sessions(sample["conversation"]):
        for turn in turns:
            rows.append(
                NewRow.interaction(
                    [Turn(speaker=turn["speaker"], text=turn["text"])],
                    namespace=namespace,
                    created_at=when,
                    thread=f"{sample_id}/session_{number}",
                    source_uris=[f"locomo://{sample_id}/{turn['dia_id']}"],
                    meta={"dia_id": turn["dia_id"]},
                )
            )
    return rows


async def ingest_conversation(memory: Memory, sample: dict[str, Any], result: LocomoResult) -> None:
    """Write every turn of `sample` unless its store already holds them (a kept store)."""
    rows = interaction_rows(sample, f"locomo-{sample['sample_id']}")
    namespace = rows[0].namespace
    known = {info.namespace: info.rows for info in await memory.namespaces(prefix=namespace)}
    if known.get(namespace, 0) >= len(rows):
        return
    started = time.perf_counter()
    for start in range(0, len(rows), 64):
        await memory.remember_many(rows[start : start + 64])
    result.ingest_seconds += time.perf_counter() - started
    result.turns += len(rows)


async def ask_questions(
    memory: Memory,
    sample: dict[str, Any],
    *,
    k: int,
    recipe: RecallRecipe,
    result: LocomoResult,
) -> None:
    """Ask every question of categories 1-4 that has evidence among the turns."""
    sample_id = sample["sample_id"]
    namespace = f"locomo-{sample_id}"
    dia_ids = {r.meta["dia_id"] for r in interaction_rows(sample, namespace)}
    for qa in sample["qa"]:
        category = int(qa["category"])
        evidence = tuple(e for e in qa.get("evidence", []) if e in dia_ids)
        if category not in CATEGORIES or not evidence:
            continue
        started = time.perf_counter()
        found = await memory.search(
            qa["question"], namespace=namespace, limit=max(k, 20), recipe=recipe
        )
        latency = (time.perf_counter() - started) * 1000
        result.questions.append(
            QuestionResult(
                sample_id=sample_id,
                question=qa["question"],
                category=category,
                evidence=evidence,
                ranked=tuple(str(f.row.meta["dia_id"]) for f in found),
                latency_ms=latency,
            )
        )


async def run_locomo(
    path: Path,
    *,
    samples: Sequence[str] = (),
    k: int = 20,
    out: Path | None = None,
    embedder: Embedder | None = None,
    recipe: RecallRecipe = DEFAULT_RECIPE,
    store_dir: Path | None = None,
    db: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> LocomoResult:
    """Run the benchmark; write one JSON line per question to `out` if given, and report
    each conversation as it finishes to `progress` (a run takes minutes).

    Each conversation gets its own store: a fresh SQLite file in a temporary folder, a fresh
    schema of the PostgreSQL database `db`, or a SQLite file in `store_dir` that is kept and
    reused by the next run (ingest once, then compare recipes quickly).
    """
    if store_dir is not None and db is not None:
        raise InvalidInput("give either a folder to keep stores in or a database, not both")
    conversations = load_conversations(path, samples)
    embedder = embedder or MiniLMEmbedder()
    result = LocomoResult()
    started = time.perf_counter()
    if store_dir is not None:
        await anyio.to_thread.run_sync(private_mkdirs, store_dir)
    with tempfile.TemporaryDirectory(prefix="phi-locomo-") as tmp:
        for number, sample in enumerate(conversations, start=1):
            name = sample["sample_id"]
            async with AsyncExitStack() as stack:
                if store_dir is not None:
                    location = str(store_dir / f"{name}.db")
                else:
                    location = await stack.enter_async_context(scratch_location(db or tmp, name))
                async with Memory.open(location, embedder=embedder) as memory:
                    await ingest_conversation(memory, sample, result)
                    await ask_questions(memory, sample, k=k, recipe=recipe, result=result)
            if progress is not None:
                progress(
                    f"conversation {name} ({number} of {len(conversations)}) "
                    f"done: {result.turns} turns, {len(result.questions)} questions so far, "
                    f"{time.perf_counter() - started:.0f} s"
                )
    if out is not None:
        private_file(out)  # 0600, as everything phi writes
        with out.open("w") as fh:
            for q in result.questions:
                fh.write(json.dumps(q.to_json(), ensure_ascii=False) + "\n")
    return result
