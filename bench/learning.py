"""The learning pipeline over LoCoMo conversations, with a scripted model.

    uv run python bench/learning.py [data/locomo/locomo-dev.json] [--sample conv-26]
        [--sessions 5] [--batch 20]

Each conversation gets a fresh store. Each of its two speakers is a person with their own
namespace; every turn is stored in its speaker's namespace as an interaction, together with
the other speaker's previous turn playing phi's part (`by_phi`, so extraction ignores it).
After each session, as a daily reflection would, the pipeline runs: extraction and
reconciliation over the unprocessed interactions, then each person's relationship summary
(refreshed at 5 new exchanges).

The model is scripted (pydantic-ai `FunctionModel`), so the numbers measure the engine, not
a provider: extraction proposes each first-person statement of the person ("I ...",
"My ...") as an observation; reconciliation answers NOOP, UPDATE or ADD from the word
overlap with the closest candidate. Reported: rows written by kind, model calls per pass
and per 100 turns, and the learning passes' time per turn with the scripted model's own
time subtracted (embedding, SQLite, edges and pydantic-ai's overhead stay in); the time
to write the interactions themselves (the engine's write path) is reported apart.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phi.bench.locomo import DEV_SPLIT, load_conversations, parse_session_date
from phi.memory import Memory, MiniLMEmbedder, NewRow, Turn, user_namespace
from phi.memory.learning import SmallModel, extract, refresh_summary

_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_FIRST_PERSON = re.compile(r"^(I|I'm|I've|I am|My|I'll|I was)\b")
_WORD = re.compile(r"[a-z0-9']+")


def _prompt(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                content = getattr(part, "content", None)
                if part.part_kind == "user-prompt" and isinstance(content, str):
                    return content
    return ""


_EXCHANGE = re.compile(r"^\[(\d+)\]")


def _extract(prompt: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = []
    number = 0
    for line in prompt.splitlines():
        # An exchange header is "[n] ..."; a turn may itself start with "[" (an image caption).
        if (header := _EXCHANGE.match(line)) is not None:
            number = int(header.group(1))
            continue
        if not line.startswith("  ") or ": " not in line:
            continue
        text = line.split(": ", 1)[1]
        statements = [s.strip() for s in _SENTENCE.findall(text) if _FIRST_PERSON.match(s.strip())]
        for statement in statements[:2]:
            found.append({"text": statement[:200], "tags": [], "exchanges": [number]})
    return {"observations": found}


def _overlap(a: str, b: str) -> float:
    x, y = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(x & y) / max(1, len(x | y))


def _reconcile(prompt: str) -> dict[str, Any]:
    lines = prompt.splitlines()
    new = lines[0].removeprefix("NEW: ")
    best = next((line for line in lines if line.startswith("[1] ")), "")
    score = _overlap(new, best[4:].rsplit(" (noted", 1)[0])
    if score >= 0.6:
        return {"action": "NOOP", "candidate": 1}
    if score >= 0.35:
        return {"action": "UPDATE", "candidate": 1, "text": new}
    return {"action": "ADD"}


@dataclass
class ScriptedModel:
    """The scripted small model, timing itself so its time can be subtracted."""

    seconds: float = 0.0
    requests: Counter[str] = field(default_factory=Counter)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        started = time.perf_counter()
        tool = info.output_tools[0]
        fields = tool.parameters_json_schema.get("properties", {})
        prompt = _prompt(messages)
        if "observations" in fields:
            purpose, args = "extract", _extract(prompt)
        elif "action" in fields:
            purpose, args = "reconcile", _reconcile(prompt)
        else:
            purpose, args = "summarize", {"summary": f"{prompt.count('[20')} recent exchanges."}
        self.requests[purpose] += 1
        response = ModelResponse(parts=[ToolCallPart(tool_name=tool.name, args=args)])
        self.seconds += time.perf_counter() - started
        return response


def _people(sample: dict[str, Any]) -> dict[str, str]:
    conversation = sample["conversation"]
    return {
        conversation[key]: user_namespace(f"did:plc:{sample['sample_id']}-{key[-1]}")
        for key in ("speaker_a", "speaker_b")
    }


def _session_rows(sample: dict[str, Any], number: int, people: dict[str, str]) -> list[NewRow]:
    conversation = sample["conversation"]
    when = parse_session_date(conversation[f"session_{number}_date_time"])
    rows, previous = [], None
    for turn in conversation[f"session_{number}"]:
        namespace = people[turn["speaker"]]
        turns = [Turn(speaker=turn["speaker"], text=turn["text"])]
        if previous is not None:
            turns.insert(0, Turn(speaker=previous["speaker"], text=previous["text"], by_phi=True))
        rows.append(
            NewRow.interaction(
                turns,
                namespace=namespace,
                author=namespace.removeprefix("phi-users-"),
                created_at=when,
                thread=f"{sample['sample_id']}/session_{number}",
                source_uris=[f"locomo://{sample['sample_id']}/{turn['dia_id']}"],
            )
        )
        previous = turn
    return rows


@dataclass
class Totals:
    turns: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    superseded: Counter[str] = field(default_factory=Counter)
    decided_by: Counter[str] = field(default_factory=Counter)
    """How reconciliation decided: cheap guards (no call) or the model."""
    ingest_seconds: float = 0.0
    """Writing the interactions (the engine's write path, no model)."""
    seconds: float = 0.0
    """Extraction, reconciliation and summaries, the scripted model's time included."""
    model_seconds: float = 0.0
    calls: Counter[str] = field(default_factory=Counter)
    requests: Counter[str] = field(default_factory=Counter)


async def run_conversation(
    sample: dict[str, Any], *, embedder: MiniLMEmbedder, workdir: Path, sessions: int, batch: int
) -> Totals:
    script = ScriptedModel()
    totals = Totals()
    people = _people(sample)
    numbers = sorted(
        int(k.split("_")[1])
        for k, v in sample["conversation"].items()
        if k.startswith("session_") and k.count("_") == 1 and isinstance(v, list)
    )[: sessions or None]
    async with Memory.open(workdir / f"{sample['sample_id']}.db", embedder=embedder) as memory:
        model = SmallModel(model=FunctionModel(script), memory=memory)
        for number in numbers:
            rows = _session_rows(sample, number, people)
            totals.turns += len(rows)
            started = time.perf_counter()
            await memory.remember_many(rows)
            learning = time.perf_counter()
            report = await extract(memory, model, batch_size=batch, limit=1000)
            totals.decided_by.update(d.decided_by for d in report.decisions)
            for namespace in people.values():
                await refresh_summary(memory, model, namespace, min_new=5)
            totals.ingest_seconds += learning - started
            totals.seconds += time.perf_counter() - learning
        async for row in memory.export():
            totals.rows[row.kind] += 1
            if row.status == "superseded":
                totals.superseded[row.kind] += 1
        totals.calls.update(model.calls)
    totals.model_seconds = script.seconds
    totals.requests.update(script.requests)
    return totals


def _report(name: str, t: Totals) -> str:
    per_100 = 100 * sum(t.calls.values()) / max(1, t.turns)
    ms_turn = 1000 * (t.seconds - t.model_seconds) / max(1, t.turns)
    rows = ", ".join(f"{k} {v}" for k, v in sorted(t.rows.items()))
    old = ", ".join(f"{k} {v}" for k, v in sorted(t.superseded.items())) or "none"
    decided = ", ".join(f"{k} {v}" for k, v in sorted(t.decided_by.items()))
    calls = ", ".join(f"{k} {v}" for k, v in sorted(t.calls.items()))
    ingest = 1000 * t.ingest_seconds / max(1, t.turns)
    return (
        f"{name}: {t.turns} turns; rows written {sum(t.rows.values())} ({rows}; "
        f"superseded: {old}); reconciliation decided by {decided}; "
        f"model calls {sum(t.calls.values())} ({calls}) = "
        f"{per_100:.1f} per 100 turns; learning {ms_turn:.1f} ms per turn excluding model "
        f"latency (scripted model {1000 * t.model_seconds / max(1, t.turns):.2f} ms/turn); "
        f"ingest {ingest:.1f} ms per turn"
    )


async def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, nargs="?", default=DEV_SPLIT, help="a LoCoMo file")
    parser.add_argument("--sample", action="append", default=[], help="conversation id")
    parser.add_argument("--sessions", type=int, default=0, help="first N sessions only")
    parser.add_argument("--batch", type=int, default=20, help="interactions per extraction")
    args = parser.parse_args(argv)
    embedder = MiniLMEmbedder()
    grand = Totals()
    with tempfile.TemporaryDirectory() as workdir:
        for sample in load_conversations(args.data, args.sample):
            t = await run_conversation(
                sample,
                embedder=embedder,
                workdir=Path(workdir),
                sessions=args.sessions,
                batch=args.batch,
            )
            print(_report(sample["sample_id"], t), flush=True)
            grand.turns += t.turns
            grand.rows += t.rows
            grand.superseded += t.superseded
            grand.decided_by += t.decided_by
            grand.seconds += t.seconds
            grand.ingest_seconds += t.ingest_seconds
            grand.model_seconds += t.model_seconds
            grand.calls += t.calls
    print(_report("all", grand))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
