"""`phi run` as a real process on the local network: it logs in, says which brain it uses,
serves the control API, pauses on request, and stops gracefully on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import httpx

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxInfo
from tests._child import URL, start_phi


def test_phi_run_serves_control_api_and_stops_on_sigterm(
    cast: SandboxInfo, sandbox: Sandbox, tmp_path: Path
) -> None:
    async def no_unread() -> None:
        await sandbox.wait_for_indexing()
        async with PhiClient(cast.client_config("phi")) as phi:
            await phi.update_seen()

    anyio.run(no_unread)
    phi = cast.account("phi")
    env = {
        **os.environ,
        "PHI_HANDLE": phi.handle,
        "PHI_APP_PASSWORD": phi.app_password,
        "PHI_PDS_URL": cast.pds_url,
        "PHI_OWNER_HANDLE": cast.account("operator").handle,
        "PHI_MODEL": "test",
        "PHI_MEMORY_URL": str(tmp_path / "memory.db"),
        "PHI_MUSING_HOURS": "",
        "PHI_REFLECTION_HOUR": "",
        "PHI_CONTROL_PORT": "0",  # a free port, bound by phi and named in its log
        "PHI_CONTROL_TOKEN": "secret",
        "PHI_POLL_SECONDS": "1",
    }
    log = tmp_path / "run.log"
    args = ["run", "--log-format", "json"]
    process, base = start_phi(args, log, says=f"control API on {URL}", env=env, timeout=120)
    try:
        assert not base.endswith(":0")
        health = httpx.get(f"{base}/health")
        assert health.json()["status"] == "ok"
        assert health.json()["handle"] == "phi.test"
        assert httpx.post(f"{base}/pause").status_code == 401
        auth = {"Authorization": "Bearer secret"}
        assert httpx.post(f"{base}/pause", headers=auth).json() == {"status": "paused"}
        assert httpx.get(f"{base}/health").json()["status"] == "paused"
        assert httpx.post(f"{base}/resume", headers=auth).json() == {"status": "ok"}
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    messages = [line["message"] for line in lines]
    assert code == 0, log.read_text()
    assert messages[0].startswith("brain: test")
    assert any(m.startswith("logged in as @phi.test") for m in messages)
    assert messages[-1] == "stopped"
