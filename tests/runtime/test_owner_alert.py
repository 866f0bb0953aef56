"""The owner-tagging rule of seed 001's service check ("tag owner if *.waow.tech dips or
fleet-wide degradation"), decided in code: the owner's own services going down, or the
whole fleet becoming degraded, tag the owner once; anything else tags nobody."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.runtime._day import OWNER, running, urls

from phi.agent import AgentConfig
from phi.memory import Memory
from phi.runtime.schedules import ScheduleConfig
from phi.services import (
    OwnerAlert,
    ServiceStatus,
    fleet_degraded,
    last_check,
    owner_alert,
)

pytestmark = pytest.mark.anyio

MINE = "https://relay.mine.example/xrpc/_health"
ALSO_MINE = "https://MINE.example/health"
THEIRS = "https://pds.elsewhere.example/xrpc/_health"
OTHER = "https://feed.elsewhere.example/health"
OWNED = ("*.mine.example", "mine.example")


def status(url: str, ok: bool) -> ServiceStatus:
    return ServiceStatus(url=url, ok=ok, status_code=200 if ok else 503, error=None, latency_ms=1.0)


def test_fleet_degraded_is_more_than_half_of_two_or_more() -> None:
    assert not fleet_degraded([False])  # one service is no fleet
    assert not fleet_degraded([True, False])
    assert fleet_degraded([False, False])
    assert not fleet_degraded([True, True, False, False])
    assert fleet_degraded([True, False, False])
    assert not fleet_degraded([])


def test_the_owners_own_service_going_down_tags_them_once() -> None:
    up = {MINE: True, THEIRS: True, OTHER: True}
    now = [status(MINE, False), status(THEIRS, True), status(OTHER, True)]
    alert = owner_alert(up, now, owner_services=OWNED)
    assert alert == OwnerAlert(own_down=("relay.mine.example",))
    assert alert.reason() == "their own service(s) went down: relay.mine.example"
    # Still down at the next check: old news, no second tag.
    assert owner_alert({**up, MINE: False}, now, owner_services=OWNED) is None
    # A service first seen down counts as going down.
    assert owner_alert({}, [status(ALSO_MINE, False)], owner_services=OWNED) == OwnerAlert(
        own_down=("mine.example",)
    )


def test_someone_elses_service_dipping_alone_tags_nobody() -> None:
    up = {MINE: True, THEIRS: True, OTHER: True}
    now = [status(MINE, True), status(THEIRS, False), status(OTHER, True)]
    assert owner_alert(up, now, owner_services=OWNED) is None
    # Without owner patterns, no service is the owner's.
    mine_down = [status(MINE, False), status(THEIRS, True), status(OTHER, True)]
    assert owner_alert(up, mine_down, owner_services=()) is None
    # Recovering tags nobody either.
    assert owner_alert({MINE: False}, [status(MINE, True)], owner_services=OWNED) is None


def test_the_fleet_degrading_tags_the_owner_once() -> None:
    up = {MINE: True, THEIRS: True, OTHER: True}
    now = [status(MINE, True), status(THEIRS, False), status(OTHER, False)]
    alert = owner_alert(up, now, owner_services=OWNED)
    assert alert == OwnerAlert(fleet=(2, 3))
    assert alert.reason() == "the whole fleet is degraded: 2 of 3 services down"
    was = {MINE: True, THEIRS: False, OTHER: False}
    assert owner_alert(was, now, owner_services=OWNED) is None
    everything = [status(MINE, False), status(THEIRS, False), status(OTHER, False)]
    assert owner_alert(up, everything, owner_services=OWNED) == OwnerAlert(
        own_down=("relay.mine.example",), fleet=(3, 3)
    )


async def test_the_check_run_is_told_to_tag_the_owner_for_their_own_service(
    memory: Memory, health: dict[str, int]
) -> None:
    watched = urls(health)
    config = AgentConfig(owner_handle=OWNER, services=watched)
    checks = ScheduleConfig(
        musing_hours=frozenset(),
        reflection_hour=None,
        health_urls=watched,
        service_check_every=timedelta(hours=1),
        owner_services=("127.0.0.1",),  # the loopback services here are all the owner's
    )
    async with running(memory, checks, config) as (runtime, brain, clock):
        clock.advance(3600)
        await runtime.tick()  # all up: the baseline, no run
        health["/feed"] = 503
        clock.advance(3600)
        await runtime.tick()
    (prompt,) = brain.prompts
    host = f"127.0.0.1:{health['port']}"
    assert prompt[prompt.index("[SERVICE CHECK]") :].splitlines()[1:3] == [
        f"http://{host}/feed went down (503)",
        f"tag your owner @{OWNER} in one post now: their own service(s) went down: "
        f"{host}/feed. group the changes, facts only.",
    ]
    last = await last_check(memory)
    assert last is not None and last.up[f"{host}/feed"] is False


async def test_a_dip_that_is_not_the_owners_tags_nobody_until_the_fleet_degrades(
    memory: Memory, health: dict[str, int]
) -> None:
    watched = urls(health)
    config = AgentConfig(owner_handle=OWNER, services=watched)
    checks = ScheduleConfig(
        musing_hours=frozenset(),
        reflection_hour=None,
        health_urls=watched,
        service_check_every=timedelta(hours=1),
        owner_services=("*.mine.example",),
    )
    async with running(memory, checks, config) as (runtime, brain, clock):
        health["/feed"] = 503
        clock.advance(3600)
        await runtime.tick()  # first check: the dip is news (never seen up before)
        clock.advance(3600)
        await runtime.tick()  # still down: no news, no run
        health["/relay"] = 503
        clock.advance(3600)
        await runtime.tick()  # 2 of 3 down: the fleet degraded
    host = f"127.0.0.1:{health['port']}"
    dip, fleet = (p[p.index("[SERVICE CHECK]") :].split("\n\n")[0] for p in brain.prompts)
    assert dip.splitlines()[1:] == [
        f"http://{host}/feed went down (503)",
        "do not tag your owner for this: none of their own services failed and the fleet is "
        "not degraded. keep it to an observation unless it is worth a post, and mention nobody.",
    ]
    assert fleet.splitlines()[1:] == [
        f"http://{host}/relay went down (503)",
        f"tag your owner @{OWNER} in one post now: the whole fleet is degraded: 2 of 3 "
        "services down. group the changes, facts only.",
    ]
