"""[OPERATOR] and [OPERATIONAL HISTORY]: who runs phi, and the last restart, pause and resume
as the control API logged them (a real control API on loopback)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from phi.agent.control_log import ControlLog
from phi.agent.deps import AgentConfig
from phi.agent.prompt.operator import operational_history_block, operator_block
from phi.atproto import Profile
from phi.runtime.control import create_control_app, serve_control

from ._quiet import QuietClient
from .test_gate_logic import OWNER, WHEN, deps, notification

pytestmark = pytest.mark.anyio


class Controller:
    """Just enough of the poller for the control API."""

    paused = False

    async def pause(self) -> None:
        self.paused = True

    async def resume(self) -> None:
        self.paused = False

    async def post_now(self) -> str:
        raise AssertionError("not called")

    async def review_now(self) -> str:
        raise AssertionError("not called")

    async def health(self) -> dict[str, Any]:
        return {}


async def test_the_control_api_logs_start_pause_and_resume(tmp_path: Path) -> None:
    log = ControlLog(path=tmp_path / "home" / "control.log")
    app = create_control_app(Controller(), "secret", log=log)
    bearer = {"Authorization": "Bearer secret"}
    async with serve_control(app, port=0) as url, httpx.AsyncClient(headers=bearer) as http:
        assert (await http.post(f"{url}/pause")).json() == {"status": "paused"}
        assert (await http.post(f"{url}/resume")).json() == {"status": "ok"}
        refused = await http.post(f"{url}/pause", headers={"Authorization": "Bearer no"})
        assert refused.status_code == 401
    assert [e.kind for e in await log.events()] == ["started", "paused", "resumed"]


async def test_the_history_block_shows_the_last_of_each(tmp_path: Path) -> None:
    log = ControlLog(path=tmp_path / "control.log")
    await log.record("started", at=WHEN - timedelta(days=3))
    await log.record("paused", at=WHEN - timedelta(days=2))
    await log.record("resumed", at=WHEN - timedelta(days=2))
    await log.record("started", at=WHEN - timedelta(hours=5))
    with (tmp_path / "control.log").open("a") as file:
        file.write('{"kind": "started", "at": "2026-1')  # a crash mid-write is skipped
    d = deps(notification("alice.test"))
    d.config = AgentConfig(control_log=tmp_path / "control.log")
    assert await operational_history_block(d) == (
        "[OPERATIONAL HISTORY — from the control API's log]\n"
        "last restart: 5h ago (2026-11-23 07:00 UTC)\n"
        "last pause: 2d ago (2026-11-21 12:00 UTC)\n"
        "last resume: 2d ago (2026-11-21 12:00 UTC)"
    )
    d.config = AgentConfig(control_log=tmp_path / "never-written.log")
    assert await operational_history_block(d) == ""


async def test_the_operator_block_names_the_owner() -> None:
    d = deps(notification("alice.test"))
    owner = Profile(
        did="did:plc:phioperator",
        handle=OWNER,
        display_name="Nate",
        description="runs phi.\nlikes birds",
    )
    d.client = cast(Any, QuietClient(profiles={OWNER: owner}))
    assert await operator_block(d) == (
        "[OPERATOR — approves gated actions by liking your requests]\n"
        f"handle: @{OWNER}\ndid: did:plc:phioperator\nprofile: Nate — runs phi. likes birds"
    )
    d.config = AgentConfig(owner_handle=None)
    assert await operator_block(d) == ""
