"""The real SmolLM2 (in-process llama.cpp): phi answers a mention with a reply."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import ModelContextWindowExceededError, ModelHTTPError

from phi.llm import ChatRequest, LocalLlama, resolve_model

pytestmark = pytest.mark.anyio

URI = "at://did:plc:alice/app.bsky.feed.post/3k2a"
SYSTEM = "You are phi, a friendly bot on Bluesky. Answer people who mention you."
# Values the model must copy are quoted: a tiny model copies a quoted string exactly, while
# it drops the `at://` of a bare one.
MENTION = (
    "New notification: mention from @alice.test\n"
    f'uri: "{URI}"\n'
    'text: "@phi what is the capital of France?"'
)


@dataclass
class Deps:
    calls: list[tuple[str, ...]] = field(default_factory=list)


async def reply_to(ctx: RunContext[Deps], uri: str, text: str) -> str:
    """Reply to the post at `uri` with `text`."""
    ctx.deps.calls.append(("reply_to", uri, text))
    return "Reply posted."


async def like_post(ctx: RunContext[Deps], uri: str) -> str:
    """Like the post at `uri` without replying."""
    ctx.deps.calls.append(("like_post", uri))
    return "Liked."


async def test_phi_replies_to_a_mention(smollm2: LocalLlama) -> None:
    agent = Agent(
        resolve_model(None), deps_type=Deps, tools=[reply_to, like_post], system_prompt=SYSTEM
    )
    deps = Deps()
    result = await agent.run(MENTION, deps=deps)
    assert [call[:2] for call in deps.calls] == [("reply_to", URI)]
    assert deps.calls[0][2].strip()
    assert isinstance(result.output, str)
    assert smollm2.loaded


def _request(text: str) -> ChatRequest:
    return {
        "messages": [{"role": "user", "content": text}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "answer",
                "schema": {
                    "type": "object",
                    "properties": {"answer": {"type": "string", "maxLength": 40}},
                    "required": ["answer"],
                },
                "strict": True,
            },
        },
        "max_tokens": 64,
        "temperature": 0.0,
        "seed": 0,
    }


async def test_answers_are_reproducible(smollm2: LocalLlama) -> None:
    first = await smollm2.complete(_request("Name a colour."))
    second = await smollm2.complete(_request("Name a colour."))
    assert first["choices"][0]["message"] == second["choices"][0]["message"]


async def test_a_prompt_over_the_context_is_refused_not_crashed(smollm2: LocalLlama) -> None:
    with pytest.raises(ModelContextWindowExceededError) as raised:
        await smollm2.complete(_request("hello world " * 9000))
    assert isinstance(raised.value, ModelHTTPError)
    assert raised.value.status_code == 400
    assert (await smollm2.complete(_request("Name a colour.")))["choices"]
