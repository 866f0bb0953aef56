"""`phi run --web` as a real process on the local network: the loop, the control API and
the memory and activity pages in one process over one memory, all closed on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import anyio
import httpx

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxInfo

from .test_run_process import PHI, _free_port


def _wait_up(url: str, process: subprocess.Popen[bytes], log: Path) -> httpx.Response:
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, log.read_text()
        try:
            return httpx.get(url)
        except httpx.ConnectError:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)


def test_phi_run_web_serves_everything_in_one_process(
    cast: SandboxInfo, sandbox: Sandbox, tmp_path: Path
) -> None:
    async def no_unread() -> None:
        await sandbox.wait_for_indexing()
        async with PhiClient(cast.client_config("phi")) as phi:
            await phi.update_seen()

    anyio.run(no_unread)
    control_port, web_port = _free_port(), _free_port()
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
        "PHI_CONTROL_PORT": str(control_port),
        "PHI_CONTROL_TOKEN": "secret",
        "PHI_WEB_PORT": str(web_port),
        "PHI_POLL_SECONDS": "1",
    }
    log = tmp_path / "run.log"
    web = f"http://127.0.0.1:{web_port}"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [PHI, "run", "--web", "--log-format", "json"], stdout=out, stderr=out, env=env
        )
        try:
            assert (
                _wait_up(f"http://127.0.0.1:{control_port}/health", process, log).json()["status"]
                == "ok"
            )
            health = _wait_up(f"{web}/health", process, log)
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
