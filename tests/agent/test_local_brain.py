"""The air-gapped brain on the local network: a mention gets a reply from the real SmolLM2,
run in-process by llama.cpp or served over HTTP by llama.cpp's own OpenAI-compatible
server, through the same poller and tools as any model. The reply must exist and pass the
degenerate-text guard, or the guard must have refused what the model wrote as its reply
(SmolLM2-135M often echoes the post: that reply is never posted, and says why). "phi chose
not to reply" fails these tests: while a mention waits, the tiny brain is offered nothing
but `reply_to`, so every run here ends in one of those two outcomes."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from dirty_equals import IsInt
from pydantic_ai import models

from phi.agent import CORE_TOOLS
from phi.agent.guard import degenerate
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox
from phi.llm import GrammarToolModel, resolve_model
from phi.llm.local import serve
from phi.memory import user_namespace

from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]


async def test_a_mention_gets_a_reply_from_the_local_model(
    runtime: RuntimeFactory, alice: PhiClient, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)  # local, in-process: no network
    asked = "@phi.test hello phi! what is your favourite bird?"
    (question,) = await alice.post(asked)
    await sandbox.wait_for_indexing()
    async with runtime(
        resolve_model(None), tools=sorted(CORE_TOOLS), profile="compact"
    ) as phi_runtime:
        report = await phi_runtime.tick()
        await sandbox.wait_for_indexing()
        replies = [r for r in report.replies if r.in_reply_to == question.uri]
        assert replies or _refused(report.actions), f"phi did {report.actions}"
        assert report.model_seconds > 0  # the local model's time is measured apart
        stored = await phi_runtime.memory.recent(namespace=user_namespace(alice.me.did))
        # Beside her background (written when a stranger first appears): the exchange.
        exchanges = [row for row in stored if row.kind == "interaction"]
        if not replies:
            assert exchanges == []  # nothing was said, so no exchange is remembered
            return
        thread = await alice.get_thread(question.uri)
        answer = next(p for p in thread.posts if p.uri == replies[0].uri)
        assert answer.author_handle == "phi.test" and answer.text.strip()
        assert degenerate(answer.text, answering=asked) is None, answer.text
        assert len(exchanges) == 1 and asked in exchanges[0].content


def _refused(actions: list[str]) -> list[str]:
    """The guard's lines: a reply the model wrote that was not posted, with the reason."""
    return [a for a in actions if a.startswith("reply_to not posted (")]


@pytest.fixture(scope="module")
def served_smollm2() -> Iterator[str]:
    """SmolLM2 behind llama.cpp's own server on a free loopback port: the `PHI_MODEL` value.
    The server binds port 0 and says where it listens (a port picked here could be taken
    before it bound it)."""
    key = secrets.token_urlsafe(16)
    server = serve(port=0, api_key=key, n_ctx=4096)
    address = urlsplit(server.listening_address)
    assert (address.hostname, address.port) == ("127.0.0.1", IsInt(gt=0)), address
    yield f"grammar:http://:{key}@127.0.0.1:{address.port}/v1#smollm2"
    del server


async def test_a_mention_gets_a_reply_through_an_openai_compatible_server(
    runtime: RuntimeFactory,
    alice: PhiClient,
    sandbox: Sandbox,
    served_smollm2: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)  # 127.0.0.1 only
    model = resolve_model(served_smollm2)
    assert isinstance(model, GrammarToolModel) and model.system == "openai-compatible"
    question = "@phi.test hi phi! what do you like to talk about?"
    (opening,) = await alice.post(question)
    await sandbox.wait_for_indexing()
    async with runtime(model, tools=sorted(CORE_TOOLS), profile="compact") as phi_runtime:
        report = await phi_runtime.tick()
    await sandbox.wait_for_indexing()
    replies = [r for r in report.replies if r.in_reply_to == opening.uri]
    assert replies or _refused(report.actions), f"phi did {report.actions}"
    if not replies:
        return
    thread = await alice.get_thread(opening.uri)
    answer = next(p for p in thread.posts if p.uri == replies[0].uri)
    assert answer.author_handle == "phi.test"
    assert degenerate(answer.text, answering=question) is None, answer.text
    assert report.model_seconds > 0
