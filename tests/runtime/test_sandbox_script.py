"""How `phi sandbox run` waits for phi to handle each of alice's posts (`_until_handled`),
with a scripted runtime (the real network run is `tests/test_sandbox_demo.py`).

Finding W7 of the second newcomer walkthrough: when phi's run failed (the model timed out on
a busy machine), the demo said "phi chose not to reply to alice this time" and went on,
though her post was waiting in the pending queue for another run. A failed run is now said
as such, and the demo keeps ticking until the retry handles her post (or sets it aside).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import anyio
import pytest

from phi.agent import PhiPost
from phi.atproto import Notification
from phi.runtime.main import stop_on_signals
from phi.runtime.report import TickReport
from phi.runtime.sandbox_run import _until_handled

URI = "at://did:plc:alice/app.bsky.feed.post/1"
ALICE = Notification(
    uri=URI,
    cid="cid1",
    reason="mention",
    author_did="did:plc:alice",
    author_handle="alice.test",
    text="@phi.test hi phi!",
    reason_subject=None,
    is_read=False,
    indexed_at=datetime(2026, 11, 25, 12, 0, tzinfo=UTC),
)
REPLY = PhiPost(
    uri="at://did:plc:phi/app.bsky.feed.post/9", text="hi!", thread_root=URI, in_reply_to=URI
)


@dataclass
class _Runtime:
    """The two things `_until_handled` asks of a `PhiRuntime`, scripted tick by tick."""

    reports: Iterator[TickReport]
    poll_seconds: float = 0.0
    ticks: int = field(default=0)

    async def tick(self) -> TickReport:
        self.ticks += 1
        return next(self.reports)


def _run(reports: list[TickReport]) -> tuple[bool, list[str], int]:
    runtime = _Runtime(reports=iter(reports))
    lines: list[str] = []

    async def go() -> bool:
        return await _until_handled(runtime, URI, anyio.Event(), lines.append)  # type: ignore[arg-type]

    return anyio.run(go), lines, runtime.ticks


def test_a_failed_run_is_said_and_the_retry_is_waited_for() -> None:
    failed = TickReport(admitted=[ALICE], pending=[ALICE], seconds=120.0, model_seconds=120.0)
    nothing = TickReport()
    retried = TickReport(admitted=[ALICE], replies=[REPLY], seconds=5.0)
    handled, lines, ticks = _run([failed, nothing, retried])
    assert handled and ticks == 3
    assert not [line for line in lines if "chose not to reply" in line], lines
    assert "phi's run failed: alice's post waits for another run" in lines


def test_a_post_set_aside_ends_the_wait() -> None:
    set_aside = TickReport(admitted=[ALICE], set_aside=[ALICE], seconds=1.0)
    handled, lines, ticks = _run([set_aside])
    assert handled and ticks == 1
    assert "phi's run failed again: alice's post is set aside (phi runs pending)" in lines


def test_a_run_that_posted_nothing_is_phis_choice() -> None:
    handled, lines, ticks = _run([TickReport(admitted=[ALICE], seconds=1.0)])
    assert handled and ticks == 1
    assert "phi chose not to reply to alice this time" in lines


def test_ctrl_c_says_phi_finishes_the_tick_first() -> None:
    """Finding W8: Ctrl-C in the demo printed nothing while the tick in progress (a model
    request of up to `PHI_MODEL_TIMEOUT`) finished."""
    said: list[str] = []

    async def go() -> None:
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_on_signals, stop, said.append)
            await anyio.sleep(0.1)  # the receiver is installed
            os.kill(os.getpid(), signal.SIGINT)
            with anyio.fail_after(5):
                await stop.wait()

    anyio.run(go)
    assert said == ["received SIGINT: finishing the current tick, then stopping"]


@pytest.fixture(autouse=True)
def _no_stray_sigint() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, previous)
