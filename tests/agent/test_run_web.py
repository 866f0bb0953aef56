"""`phi run --web` as a real process on the local network: the loop, the control API and
the memory and activity pages in one process over one memory, all closed on SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import anyio
import httpx

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxInfo
from tests._child import URL, start_phi


def test_phi_run_web_serves_everything_in_one_process(
    cast: SandboxInfo, sandbox: Sandbox, tmp_path: Path
) -> None:
    async def no_unread() -> None:
        await sandbox.wait_for_indexing()
        async with PhiClient(cast.client_config("phi")) as phi:
            await phi.update_seen()

    anyio.run(no_unread)
    phi = cast.account("phi")
    home = tmp_path / "home"
    env = {
        **os.environ,
        "PHI_HOME": str(home),
        "PHI_HANDLE": phi.handle,
        "PHI_APP_PASSWORD": phi.app_password,
        "PHI_PDS_URL": cast.pds_url,
        "PHI_MODEL": "test",
        "PHI_MUSING_HOURS": "",
        "PHI_REFLECTION_HOUR": "",
        # Both servers bind free ports themselves and name them in the log.
        "PHI_CONTROL_PORT": "0",
        "PHI_CONTROL_TOKEN": "secret",
        "PHI_WEB_PORT": "0",
        "PHI_POLL_SECONDS": "1",
    }
    log = tmp_path / "run.log"
    args = ["run", "--web", "--log-format", "json"]
    # The web app starts after the control API: once it is named, both are.
    process, web = start_phi(args, log, says=f"memory page on {URL}/memory", env=env, timeout=120)
    try:
        found = re.search(f"control API on {URL}", log.read_text())
        assert found is not None, log.read_text()
        control = found.group(1)
        assert control != web and not web.endswith(":0")
        assert httpx.get(f"{control}/health").json()["status"] == "ok"
        health = httpx.get(f"{web}/health")
        assert health.status_code == 200 and health.json()["writable"] is False
        assert httpx.get(f"{web}/api/runs").json() == []
        assert "activity.js" in httpx.get(f"{web}/activity").text
        assert "memory.js" in httpx.get(f"{web}/memory").text
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    messages = [
        json.loads(line)["message"] for line in log.read_text().splitlines() if line.startswith("{")
    ]
    assert code == 0, log.read_text()
    assert f"memory page on {web}/memory, run journal on {web}/activity" in messages
    assert messages[-1] == "stopped"
    assert (home / "memory.db").exists()  # the one store, under PHI_HOME
    try:
        httpx.get(f"{web}/health")
        raise AssertionError("the web app still answers after SIGTERM")
    except httpx.ConnectError:
        pass
