"""`phi web` as a real process: settings from the environment, the app on loopback."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from tests._child import URL, start_phi, stop


def test_phi_web_serves_the_api_with_the_configured_token(tmp_path: Path) -> None:
    # PHI_WEB_PORT=0: the server binds a free port itself and prints it.
    env = {**os.environ, "PHI_WEB_TOKEN": "tok", "PHI_WEB_PORT": "0"}
    process, base = start_phi(
        ["web", "--db", str(tmp_path / "m.db")],
        tmp_path / "web.log",
        says=f"at {URL}/memory, API docs at ",
        env=env,
    )
    try:
        health = httpx.get(f"{base}/health")
        assert health.json() == {"status": "ok", "rows": 0, "namespaces": 0, "writable": True}
        body = {"content": "hello", "namespace": "notes"}
        headers = {"Authorization": "Bearer tok"}
        assert httpx.post(f"{base}/api/memory/rows", json=body).status_code == 401
        created = httpx.post(f"{base}/api/memory/rows", json=body, headers=headers)
        assert created.status_code == 201
        assert httpx.get(f"{base}/api/memory/rows/{created.json()['row_id']}").is_success
    finally:
        stop(process)
