"""`grammar:` model strings: an OpenAI-compatible server driven through the grammar adapter."""

from __future__ import annotations

import pytest
from pydantic_ai.exceptions import ModelAPIError

from phi.errors import UserError
from phi.llm import ChatServer, GrammarToolModel, describe_brain, resolve_model, uses_grammar
from phi.llm.http import parse_server_spec

pytestmark = pytest.mark.anyio

SPEC = "grammar:http://:s3cret@127.0.0.1:8080/v1#smollm2"


def test_the_spec_names_url_key_and_model() -> None:
    assert parse_server_spec(SPEC) == ChatServer(
        base_url="http://127.0.0.1:8080/v1", model="smollm2", api_key="s3cret"
    )
    assert parse_server_spec("grammar:http://localhost:11434/v1") == ChatServer(
        base_url="http://localhost:11434/v1"
    )


def test_it_resolves_to_the_grammar_adapter_and_the_banner_hides_the_key() -> None:
    model = resolve_model(SPEC)
    assert isinstance(model, GrammarToolModel)
    assert (model.model_name, model.system, model.calls_per_run) == (
        "smollm2",
        "openai-compatible",
        1,
    )
    assert uses_grammar(SPEC) and uses_grammar(None) and not uses_grammar("test")
    banner = describe_brain(SPEC)
    assert "s3cret" not in banner
    assert banner.startswith("brain: smollm2 at http://127.0.0.1:8080/v1 (OpenAI-compatible")


@pytest.mark.parametrize("spec", ["grammar:", "grammar:ftp://x/v1", "grammar:127.0.0.1:8080"])
def test_a_spec_without_an_http_url_is_refused(spec: str) -> None:
    with pytest.raises(UserError, match="expected grammar:http://HOST:PORT/v1"):
        resolve_model(spec)


async def test_a_server_that_is_not_there_is_a_model_api_error() -> None:
    server = ChatServer(base_url="http://127.0.0.1:9/v1")  # discard port: nothing listens
    with pytest.raises(
        ModelAPIError, match=r"cannot reach http://127.0.0.1:9/v1/chat/completions: ConnectError"
    ):
        await server.complete(
            {
                "messages": [{"role": "user", "content": "hi"}],
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "d", "schema": {"type": "string"}, "strict": True},
                },
                "max_tokens": 4,
                "temperature": 0.0,
                "seed": 0,
            }
        )
