"""The coding-memory benchmark's figures from a replay, and their Markdown table."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Final

from bench.coding_memory.metrics import Judgement, percentile

__all__ = ["LATENCY_TARGETS_MS", "markdown", "summarise"]

LATENCY_TARGETS_MS: Final = {
    "UserPromptSubmit": "p50 ≤ 300, p95 ≤ 800",
    "SessionStart": "p50 ≤ 1000",
    "PreToolUse": "p50 ≤ 100",
    "PostToolUse": "p50 ≤ 100",
    "PostToolUseFailure": "p50 ≤ 100",
    "Stop": "p50 ≤ 100",
    "SessionEnd": "p50 ≤ 100",
}
"""Issue 26's targets per hook."""


def _sizes(values: Sequence[int]) -> dict[str, Any]:
    shown = [v for v in values if v > 0]
    return {
        "contexts": len(values),
        "non_empty": len(shown),
        "median": statistics.median(shown) if shown else 0,
        "p95": percentile(shown, 0.95) if shown else 0,
        "max": max(shown, default=0),
    }


def summarise(
    judgements: Sequence[Judgement],
    latencies: Sequence[tuple[str, float, float]],
    *,
    failures: Sequence[tuple[str, int, str]] = (),
) -> dict[str, Any]:
    """The figures: `latencies` are (event, seconds, load1) per hook process; `failures`
    (event, exit code, first stderr line) per process that did not exit 0."""
    needs = [j for j in judgements if j.recalled is not None]
    quiet = [j for j in judgements if j.kind == "quiet"]
    leaked = [j for j in judgements if j.leaked]
    by_event: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for event, seconds, load1 in latencies:
        by_event[event].append((seconds, load1))
    return {
        "recall": {
            "needed": len(needs),
            "recalled": sum(bool(j.recalled) for j in needs),
            "share": sum(bool(j.recalled) for j in needs) / len(needs) if needs else None,
            "missed": [{"project": j.project, "needs": j.needs} for j in needs if not j.recalled],
        },
        "leaks": {
            "entries": sum(len(j.leaked) for j in judgements),
            "contexts": len(leaked),
            "examples": [{"project": j.project, "entry": j.leaked[0][:300]} for j in leaked[:5]],
        },
        "stale": {
            "entries": sum(len(j.stale) for j in judgements),
            "contexts": sum(bool(j.stale) for j in judgements),
            "examples": [
                {"project": j.project, "decision": key, "entry": entry[:300]}
                for j in judgements
                for key, entry in j.stale[:1]
            ][:5],
        },
        "quiet": {"prompts": len(quiet), "silent": sum(j.tokens == 0 for j in quiet)},
        "injected_tokens": {
            "prompt": _sizes([j.tokens for j in judgements if j.kind != "session_start"]),
            "session_start": _sizes([j.tokens for j in judgements if j.kind == "session_start"]),
        },
        "latency_ms": {
            event: {
                "n": len(rows),
                "p50": round(1000 * statistics.median(s for s, _ in rows)),
                "p95": round(1000 * percentile([s for s, _ in rows], 0.95)),
                "max": round(1000 * max(s for s, _ in rows)),
                "load1_median": round(statistics.median(load for _, load in rows), 2),
            }
            for event, rows in sorted(by_event.items())
        },
        "failures": {
            "nonzero_exit": len(failures),
            "exit_2": sum(code == 2 for _, code, _ in failures),
            "examples": [{"event": e, "exit": c, "stderr": s} for e, c, s in failures[:5]],
        },
    }


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "0/0"


def markdown(summary: dict[str, Any]) -> str:
    """The figures as two Markdown tables (quality, then latency)."""
    recall, leaks, stale = summary["recall"], summary["leaks"], summary["stale"]
    quiet, sizes = summary["quiet"], summary["injected_tokens"]
    rows = [
        "| measure | value | target |",
        "|---|---|---|",
        f"| decisions recalled | {_pct(recall['recalled'], recall['needed'])} | ≥ 90% |",
        f"| cross-project leaks (entries / contexts) | {leaks['entries']} / {leaks['contexts']}"
        " | 0 |",
        f"| stale decisions injected as current (entries / contexts) | {stale['entries']}"
        f" / {stale['contexts']} | 0 |",
        f"| prompts needing nothing that got nothing | {_pct(quiet['silent'], quiet['prompts'])}"
        " | all |",
    ]
    for name, label in (("prompt", "prompts"), ("session_start", "session starts")):
        size = sizes[name]
        rows.append(
            f"| injected tokens, {label} (median / p95 / max of {size['non_empty']} non-empty"
            f" of {size['contexts']}) | {size['median']:g} / {size['p95']:g} / {size['max']:g}"
            " | ≤ 1500 |"
        )
    rows += [
        "",
        "| hook | n | p50 ms | p95 ms | max ms | load (1 min, median) | target ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for event, lat in summary["latency_ms"].items():
        rows.append(
            f"| {event} | {lat['n']} | {lat['p50']} | {lat['p95']} | {lat['max']}"
            f" | {lat['load1_median']:.2f} | {LATENCY_TARGETS_MS.get(event, '')} |"
        )
    skipped = summary.get("not_registered") or {}
    if skipped:
        listed = ", ".join(f"{event} ×{n}" for event, n in sorted(skipped.items()))
        rows += ["", f"Not run (the settings register no hook for them): {listed}."]
    failures = summary["failures"]
    if failures["nonzero_exit"]:
        rows += [
            "",
            f"{failures['nonzero_exit']} hook process(es) exited non-zero"
            f" ({failures['exit_2']} with 2, which blocks the host); the first:"
            f" {failures['examples'][0]['event']} exit {failures['examples'][0]['exit']}:"
            f" {failures['examples'][0]['stderr']}",
        ]
    return "\n".join(rows)
