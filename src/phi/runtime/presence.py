"""phi's state on its profile: a note at the end of its bio saying it runs (as the original
phi kept "🟢 ..." / "🔴 offline" there).

`phi run` sets the online note when it starts and takes it away (or leaves the offline
note) when it stops, however it stops short of being killed. After a kill the bio says
online while nothing runs; the next start finds that note, says so, and replaces it. Only
phi's own note is edited: the last paragraph of the bio when it is the exact text phi wrote
last (kept in memory) or matches the configured notes; the rest of the bio, and every other
field of the profile, stays as it is.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import anyio

from phi.atproto import PhiClient
from phi.atproto._graphemes import grapheme_count
from phi.atproto.errors import AtprotoError
from phi.config import Settings
from phi.memory import Memory
from phi.memory.model import utc_now

__all__ = ["ProfileNote", "profile_note", "with_note", "without_note"]

logger = logging.getLogger("phi.runtime")

SCOPE: Final = "profile-note"
"""Memory state scope of the note phi wrote last (key `last`)."""
MAX_BIO_GRAPHEMES: Final = 256
"""`app.bsky.actor.profile#description`'s limit."""
STOP_SECONDS: Final = 15.0
"""How long a stop waits to clear the note before it gives up (and the next start fixes it)."""
_SEPARATOR: Final = "\n\n"


@dataclass(frozen=True, kw_only=True)
class ProfileNote:
    """The notes `phi run` keeps in its bio."""

    online: str = "🟢 online since {since}"
    """The note while phi runs; `{since}` is its start (UTC); empty: no note at all."""
    offline: str = ""
    """The note after a clean stop; empty: the bio without a note."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ProfileNote:
        """`profile_note` (`off` is empty) and `profile_offline_note`."""
        online = settings.profile_note.strip()
        return cls(
            online="" if online.lower() == "off" else online,
            offline=settings.profile_offline_note.strip(),
        )

    def online_at(self, since: datetime) -> str:
        return self.online.replace("{since}", since.strftime("%Y-%m-%d %H:%M UTC"))

    def patterns(self) -> list[re.Pattern[str]]:
        """What a note phi wrote with these settings looks like, whatever its `{since}`."""
        return [_pattern(template) for template in (self.online, self.offline) if template]


def _pattern(template: str) -> re.Pattern[str]:
    return re.compile(".+?".join(re.escape(part) for part in template.split("{since}")))


def without_note(bio: str, *, exact: Iterable[str], patterns: Iterable[re.Pattern[str]]) -> str:
    """`bio` without phi's note: its last paragraph, when it is one of `exact` or matches
    one of `patterns` whole; anything else is the owner's and stays."""
    head, sep, last = bio.rpartition(_SEPARATOR)
    if not sep:
        head, last = "", bio
    if last in set(exact) or any(p.fullmatch(last) for p in patterns):
        return head
    return bio


def with_note(bio: str, note: str) -> str:
    """`bio` with `note` as its last paragraph."""
    if not note:
        return bio
    return f"{bio}{_SEPARATOR}{note}" if bio else note


@dataclass(frozen=True, kw_only=True)
class _Written:
    text: str
    online: bool


async def _last_written(memory: Memory) -> _Written | None:
    entry = await memory.state.read(SCOPE, "last")
    if entry is None:
        return None
    raw = json.loads(entry.value)
    return _Written(text=str(raw["text"]), online=bool(raw["online"]))


async def _write(
    client: PhiClient, memory: Memory, config: ProfileNote, note: str, *, online: bool
) -> bool:
    """Put `note` in place of phi's earlier note. Returns whether that earlier note said
    online (at a start: the run before did not stop)."""
    before = await _last_written(memory)
    exact = [before.text] if before is not None and before.text else []
    was_online = False

    def edit(record: dict[str, Any] | None) -> dict[str, Any]:
        nonlocal was_online
        record = record or {"$type": "app.bsky.actor.profile"}
        bio = str(record.get("description") or "")
        base = without_note(bio, exact=exact, patterns=config.patterns())
        removed = bio[len(base) :].removeprefix(_SEPARATOR)
        was_online = bool(removed) and (
            (before is not None and before.online and removed == before.text)
            or (bool(config.online) and _pattern(config.online).fullmatch(removed) is not None)
        )
        wanted = with_note(base, note)
        if grapheme_count(wanted) > MAX_BIO_GRAPHEMES:
            logger.warning(
                "profile note %r left out: the bio would be over %d graphemes",
                note,
                MAX_BIO_GRAPHEMES,
            )
            wanted = base
        if wanted:
            record["description"] = wanted
        else:
            record.pop("description", None)
        return record

    await client.edit_own_profile(edit)
    await memory.state.write(
        SCOPE, "last", json.dumps({"text": note, "online": online}), at=utc_now(), keep=2
    )
    return was_online


@asynccontextmanager
async def profile_note(
    client: PhiClient,
    memory: Memory,
    config: ProfileNote,
    *,
    emit: Callable[[str], None],
    clock: Callable[[], datetime] = utc_now,
) -> AsyncIterator[None]:
    """Keep the online note in phi's bio while the block runs, and the offline one after.

    A profile that cannot be written (the PDS refuses, the network fails) is said and
    skipped: phi runs all the same, and the next start sets the note right.
    """
    if not config.online:
        yield
        return
    note = config.online_at(clock())
    try:
        if await _write(client, memory, config, note, online=True):
            emit("profile: the note still said online from a run that did not stop; corrected")
        emit(f"profile: bio note set to {note!r}")
    except AtprotoError as exc:
        emit(f"profile: could not set the bio note: {exc}")
    try:
        yield
    finally:
        # Shielded: a stop that cancels the loop must still leave the bio true.
        with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_SECONDS):
            try:
                await _write(client, memory, config, config.offline, online=False)
                emit("profile: bio note " + ("cleared" if not config.offline else "set offline"))
            except AtprotoError as exc:
                emit(f"profile: could not clear the bio note: {exc}")
