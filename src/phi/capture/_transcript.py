"""The assistant's words in a Claude Code transcript (JSON lines), each with its entry's id.

The host appends one entry per message part: the text the assistant writes between tool
calls (its reasoning, what it found, why it chose a fix) is in the transcript and nowhere
else, so every text entry is kept, not only the last one. An entry is named by its `uuid`
(Claude Code writes one on each line) or, without one, by a digest of its line and how
often that line came before, so reading the same file twice names each entry the same.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

__all__ = ["Said", "assistant_texts"]


@dataclass(frozen=True, kw_only=True)
class Said:
    """One transcript entry with something the assistant wrote."""

    entry: str
    """The entry's id: its `uuid`, or a digest of its line."""
    text: str
    """Its text parts, joined by line breaks."""
    at: datetime | None = None
    """Its `timestamp`, when it has a readable one."""


def assistant_texts(transcript: str | None) -> list[Said]:
    """Every assistant entry with text in the transcript at `transcript`, in file order
    (none when there is no such file). Lines that are not JSON are skipped: the host may be
    writing the last one."""
    if not transcript:
        return []
    path = Path(transcript).expanduser()
    if not path.is_file():
        return []
    seen: Counter[str] = Counter()
    found: list[Said] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        digest = hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        seen[digest] += 1
        text = _text(entry)
        if text is None:
            continue
        uuid = entry.get("uuid")
        name = uuid if isinstance(uuid, str) and uuid.strip() else f"{digest}-{seen[digest]}"
        found.append(Said(entry=name, text=text, at=_when(entry.get("timestamp"))))
    return found


def _text(entry: object) -> str | None:
    message = entry.get("message") if isinstance(entry, dict) else None
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    content = message.get("content")
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list):
        texts = [
            c["text"]
            for c in content
            if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
        ]
    else:
        return None
    kept = [t for t in texts if t.strip()]
    return "\n".join(kept) if kept else None


def _when(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None
