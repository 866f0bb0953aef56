"""The tiny model's anti-echo and anti-loop sampling: what the adapter sends, and when."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent, ModelRetry

from phi.llm import GrammarToolModel, SmallModelSampling, answering
from phi.llm.sampling import Answering, current_answering, echo_bias

from .test_grammar import Script, call

pytestmark = pytest.mark.anyio

POST = "@phi.test hi phi! i'm alice. what do you remember about me?"


def test_the_bias_covers_the_posts_words_but_not_the_peoples_names() -> None:
    pairs = echo_bias(Answering(texts=(POST,), names=frozenset({"alice"})), -5.0)
    forms = {form for form, _ in pairs}
    assert {"remember", " remember", "Remember", " Remember", "i'm", " phi", "@"} <= forms
    assert not {form for form in forms if "alice" in str(form).lower()}
    assert {bias for _, bias in pairs} == {-5.0}


def test_nothing_answered_is_no_bias() -> None:
    assert echo_bias(Answering(texts=("",)), -5.0) == []


def test_answering_is_scoped_to_its_block() -> None:
    assert current_answering() is None
    with answering([POST], names=["Alice"]):
        now = current_answering()
        assert now is not None and now.texts == (POST,) and now.names == {"alice"}
    assert current_answering() is None


async def test_the_adapter_sends_dry_always_and_the_bias_while_answering() -> None:
    done = '{"tool": "final_answer", "text": "done"}'
    script = Script([done, done])
    model = GrammarToolModel(
        script.complete, model_name="tiny", tool_first=False, sampling=SmallModelSampling()
    )
    agent = Agent(model, output_type=str)
    await agent.run("first")
    with answering([POST], names=["alice"]):
        await agent.run("second")
    first, second = script.requests
    assert first["dry_multiplier"] == 0.8 and "/" in first["dry_sequence_breakers"]
    assert "logit_bias" not in first
    assert ["remember", -5.0] in second["logit_bias"]


async def test_without_sampling_nothing_llama_specific_is_sent() -> None:
    script = Script([call("reply_to", text="hello"), '{"tool": "final_answer", "text": "ok"}'])
    agent = Agent(GrammarToolModel(script.complete, model_name="x", max_text=140), output_type=str)

    @agent.tool_plain
    def reply_to(text: str) -> str:
        return "sent"

    with answering([POST]):
        await agent.run("go")
    request = script.requests[0]
    assert not {"logit_bias", "dry_multiplier"} & request.keys()
    schema = request["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["arguments"]["properties"]["text"]["maxLength"] == 140


async def test_text_sent_back_is_biased_against_when_asked_again() -> None:
    """The guard refused "hello, hello, hello": asked again, the tiny model wrote it again
    until its text was biased against too."""
    script = Script(
        [call("reply_to", text="hello, hello, hello"), call("reply_to", text="hi alice!")]
    )
    model = GrammarToolModel(
        script.complete, model_name="tiny", calls_per_run=1, sampling=SmallModelSampling()
    )
    agent = Agent(model, output_type=str, retries=2)
    sent: list[str] = []

    @agent.tool_plain
    def reply_to(text: str) -> str:
        if text.startswith("hello"):
            raise ModelRetry("not posted: loop")
        sent.append(text)
        return "replied"

    with answering([POST], names=["alice"]):
        await agent.run("go")
    first, second = script.requests[:2]
    assert sent == ["hi alice!"]
    assert ["hello", -5.0] not in first["logit_bias"]
    assert ["hello", -5.0] in second["logit_bias"]
    assert ["remember", -5.0] in second["logit_bias"]  # the post still counts
