"""phi's state on its profile (issue 28): `phi run` keeps a note at the end of its bio, set at
start, cleared (or set offline) at a clean stop, corrected at the next start after a kill,
and the rest of the bio left as the owner wrote it. On the local network, as real processes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.runtime.presence import ProfileNote, with_note, without_note

PHI = str(Path(sys.executable).parent / "phi")
BIO = "i am phi, a small memory-first bot.\n\nask my owner anything."
ONLINE = re.compile(r"🟢 online since \d{4}-\d\d-\d\d \d\d:\d\d UTC")


def test_only_phis_own_last_paragraph_is_taken_away() -> None:
    note = ProfileNote(online="🟢 up since {since}", offline="🔴 offline")
    patterns = note.patterns()
    assert (
        without_note(f"{BIO}\n\n🟢 up since 2026-11-28 10:00 UTC", exact=[], patterns=patterns)
        == BIO
    )
    assert without_note(f"{BIO}\n\n🔴 offline", exact=[], patterns=patterns) == BIO
    assert without_note("🔴 offline", exact=[], patterns=patterns) == ""
    # The owner's own last paragraph, or a note in the middle, stays.
    assert without_note(BIO, exact=[], patterns=patterns) == BIO
    middle = "🔴 offline\n\nask my owner anything."
    assert without_note(middle, exact=[], patterns=patterns) == middle
    # What phi wrote last is recognised exactly, even after the setting changed.
    assert without_note(f"{BIO}\n\nold note", exact=["old note"], patterns=patterns) == BIO
    assert with_note(BIO, "") == BIO
    assert with_note("", "🔴 offline") == "🔴 offline"
    assert ProfileNote(online="off").online == "off"  # `from_settings` reads `off` as none


def _bio(cast: SandboxInfo, sandbox: Sandbox) -> str:
    async def read() -> str:
        await sandbox.wait_for_indexing()
        async with PhiClient(cast.client_config("phi")) as phi:
            return (await phi.get_profile(phi.me.did)).description or ""

    return anyio.run(read)


def _bio_when(cast: SandboxInfo, sandbox: Sandbox, ready: re.Pattern[str]) -> str:
    """The bio once it matches `ready` (the note is written just after the control API
    starts answering)."""
    deadline = time.monotonic() + 30
    while not ready.fullmatch(bio := _bio(cast, sandbox)):
        assert time.monotonic() < deadline, bio
        time.sleep(0.3)
    return bio


def _set_bio(cast: SandboxInfo, text: str) -> None:
    async def write() -> None:
        async with PhiClient(cast.client_config("phi")) as phi:
            await phi.update_seen()  # nothing unread: the runs below have nothing to answer

            def edit(record: dict[str, Any] | None) -> dict[str, Any]:
                return {**(record or {"$type": "app.bsky.actor.profile"}), "description": text}

            await phi.edit_own_profile(edit)

    anyio.run(write)


def said_in(log: Path, text: str) -> bool:
    deadline = time.monotonic() + 30
    while text not in log.read_text():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@contextmanager
def phi_run(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`phi run` until its control API answers; the caller stops (or kills) it. The control
    API binds port 0 and the test reads the port it got from this run's part of the log (a
    port picked here and handed over could be taken in between)."""
    start = log.stat().st_size if log.exists() else 0
    with log.open("ab") as out:
        process = subprocess.Popen(
            [PHI, "run"], stdout=out, stderr=out, env={**env, "PHI_CONTROL_PORT": "0"}
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, log.read_text()
            said = log.read_bytes()[start:].decode(errors="replace")
            if (found := re.search(r"control API on (http://127\.0\.0\.1:\d+)", said)) is not None:
                try:
                    httpx.get(f"{found.group(1)}/health")
                    break
                except httpx.ConnectError:
                    pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)


def test_phi_run_keeps_its_state_in_the_bio(
    cast: SandboxInfo, sandbox: Sandbox, tmp_path: Path
) -> None:
    _set_bio(cast, BIO)
    phi = cast.account("phi")
    env = {
        **os.environ,
        "PHI_HANDLE": phi.handle,
        "PHI_APP_PASSWORD": phi.app_password,
        "PHI_PDS_URL": cast.pds_url,
        "PHI_MODEL": "test",
        "PHI_MEMORY_URL": str(tmp_path / "memory.db"),
        "PHI_MUSING_HOURS": "",
        "PHI_REFLECTION_HOUR": "",
        "PHI_EXTRACTION_HOURS": "",
        "PHI_CONTROL_TOKEN": "secret",
        "PHI_POLL_SECONDS": "1",
        "PHI_PROFILE_OFFLINE_NOTE": "🔴 offline",
    }
    log = tmp_path / "run.log"

    # Start: the note is set after the owner's bio, which stays as it was.
    with phi_run(env, log) as process:
        online = _bio_when(cast, sandbox, re.compile(r"(?s).*🟢 online since .*"))
        head, _, note = online.rpartition("\n\n")
        assert head == BIO and ONLINE.fullmatch(note), online
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, log.read_text()
    # A clean stop: the offline note in its place.
    assert _bio(cast, sandbox) == f"{BIO}\n\n🔴 offline"

    # Killed: nothing runs to clear the note, so the bio still says online...
    with phi_run(env, log) as process:
        killed_note = _bio_when(cast, sandbox, re.compile(r"(?s).*🟢 online since .*"))
        killed_note = killed_note.rpartition("\n\n")[2]
        assert ONLINE.fullmatch(killed_note)
        process.kill()
        process.wait(timeout=60)
    assert _bio(cast, sandbox) == f"{BIO}\n\n{killed_note}"

    # ...until the next start, which says so and puts one fresh note in its place.
    cleared = {**env, "PHI_PROFILE_OFFLINE_NOTE": ""}
    with phi_run(cleared, log) as process:
        after = _bio_when(cast, sandbox, re.compile(r"(?s).*🟢 online since .*"))
        assert said_in(log, "did not stop; corrected")
        assert after.count("online since") == 1 and after.startswith(f"{BIO}\n\n🟢 online")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, log.read_text()
    said = log.read_text()
    assert said.count("the note still said online from a run that did not stop") == 1
    # Stopped with no offline note: the bio is the owner's again, exactly.
    assert _bio(cast, sandbox) == BIO

    # Off: phi leaves the profile alone.
    _set_bio(cast, f"{BIO}\n\nmy owner's own last line")
    with phi_run({**env, "PHI_PROFILE_NOTE": "off"}, log) as process:
        assert _bio(cast, sandbox) == f"{BIO}\n\nmy owner's own last line"
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    assert _bio(cast, sandbox) == f"{BIO}\n\nmy owner's own last line"
