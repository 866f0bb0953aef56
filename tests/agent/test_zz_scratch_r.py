"""SCRATCH (helper R, deleted after use): capture the local brain's requests for one tick."""
from __future__ import annotations
import json, os
from datetime import UTC, datetime
from pathlib import Path
import pytest
from pydantic_ai import models
from phi.agent import CORE_TOOLS
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox
from phi.llm import resolve_model
from phi.llm.local import LocalLlama
from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]
OUT = Path("/tmp/rwork/capture.jsonl")

async def test_capture(runtime: RuntimeFactory, alice: PhiClient, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)
    real = LocalLlama.complete
    async def recording(self, request):
        body = await real(self, request)
        with OUT.open("a") as f:
            f.write(json.dumps({"request": request, "response": body}, default=str) + "\n")
        return body
    monkeypatch.setattr(LocalLlama, "complete", recording)
    (post,) = await alice.post(os.environ.get("R_GREETING", "@phi.test hi phi! how are you today?"))
    await sandbox.wait_for_indexing()
    clock = lambda: datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    async with runtime(resolve_model(None), tools=sorted(CORE_TOOLS), profile="compact", clock=clock) as rt:
        report = await rt.tick()
    print(report.actions, [r.uri for r in report.replies])
