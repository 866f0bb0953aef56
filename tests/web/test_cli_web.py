"""`phi web` as a real process: settings from the environment, the app on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

PHI = str(Path(sys.executable).parent / "phi")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_phi_web_serves_the_api_with_the_configured_token(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PHI_WEB_TOKEN": "tok", "PHI_WEB_PORT": str(port)}
    log = tmp_path / "web.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [PHI, "web", "--db", str(tmp_path / "m.db")], stdout=out, stderr=out, env=env
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, log.read_text()
                try:
                    health = httpx.get(f"{base}/health")
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline, log.read_text()
                    time.sleep(0.1)
            assert health.json() == {"status": "ok", "rows": 0, "namespaces": 0, "writable": True}
            body = {"content": "hello", "namespace": "notes"}
            headers = {"Authorization": "Bearer tok"}
            assert httpx.post(f"{base}/api/memory/rows", json=body).status_code == 401
            created = httpx.post(f"{base}/api/memory/rows", json=body, headers=headers)
            assert created.status_code == 201
            assert httpx.get(f"{base}/api/memory/rows/{created.json()['row_id']}").is_success
        finally:
            process.terminate()
            process.wait(timeout=10)
