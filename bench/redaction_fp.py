"""How often `phi.redact` changes text that holds no secret: its false-positive rate.

    uv run --frozen python bench/redaction_fp.py [LOCOMO_JSON] [--repo DIR] [--examples N]

Two real corpora of ordinary text: the LoCoMo dev split (every conversation turn, image
caption, QA question and answer, observation and session summary; by default the copy in
`data/locomo/`) and the commit messages of a git repository (by default this one: commit
messages are full of SHAs, file paths and ids, what an entropy-based scanner mangles).
Neither holds a real secret, so every text redaction changes is a false positive; each is
printed with its markers so it can be judged.

Prints, per corpus and overall: texts scanned, texts changed, the rate, and the time taken.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from phi.redact import find_secrets, redact

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LOCOMO = ROOT / "data" / "locomo" / "locomo-dev.json"


def locomo_texts(path: Path) -> Iterator[str]:
    """Every piece of text in the LoCoMo file: turns, captions, QA, observations, summaries."""
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation: dict[str, Any] = sample["conversation"]
        for key, session in conversation.items():
            if key.startswith("session_") and isinstance(session, list):
                for turn in session:
                    yield str(turn["text"])
                    if turn.get("blip_caption"):
                        yield str(turn["blip_caption"])
        for qa in sample.get("qa", []):
            yield str(qa["question"])
            if "answer" in qa:
                yield str(qa["answer"])
        yield from _strings(sample.get("observation"))
        yield from _strings(sample.get("session_summary"))
        yield from _strings(sample.get("event_summary"))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def commit_messages(repo: Path) -> list[str]:
    """Every commit message of `repo`, whole (subject and body)."""
    done = subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%B%x00"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [m.strip() for m in done.stdout.split("\x00") if m.strip()]


def measure(name: str, texts: list[str], examples: int) -> tuple[int, int]:
    started = time.perf_counter()
    changed = [(text, redact(text)) for text in texts]
    seconds = time.perf_counter() - started
    changed = [(before, after) for before, after in changed if before != after]
    rate = len(changed) / len(texts) if texts else 0.0
    size = sum(len(t) for t in texts)
    print(
        f"{name}: {len(texts)} texts ({size / 1e6:.2f} MB) scanned, {len(changed)} changed, "
        f"rate {rate:.4%}, {seconds:.2f} s ({seconds / max(1, len(texts)) * 1e6:.0f} µs a text)"
    )
    for before, after in changed[:examples]:
        kinds = sorted({s.kind for s in find_secrets(before)})
        print(f"  - {', '.join(kinds)}: {_clip(after)}")
    return len(texts), len(changed)


def _clip(text: str, width: int = 160) -> str:
    one_line = " ".join(text.split())
    at = one_line.find("[REDACTED:")
    start = max(0, at - width // 3)
    return ("…" if start else "") + one_line[start : start + width]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo", nargs="?", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--repo", type=Path, default=ROOT, help="whose git log to scan")
    parser.add_argument("--examples", type=int, default=10, help="changed texts to print")
    args = parser.parse_args()
    if not args.locomo.is_file():
        parser.error(f"no LoCoMo file at {str(args.locomo)!r}; give its path")
    scanned = changed = 0
    for name, texts in (
        ("LoCoMo dev", list(locomo_texts(args.locomo))),
        (f"git log of {args.repo.name}", commit_messages(args.repo)),
    ):
        n, c = measure(name, texts, args.examples)
        scanned, changed = scanned + n, changed + c
    print(f"overall: {scanned} texts scanned, {changed} changed, rate {changed / scanned:.4%}")


if __name__ == "__main__":
    main()
