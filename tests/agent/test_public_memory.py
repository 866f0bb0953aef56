"""Public memory on the local network: review's promote publishes a cosmik card on phi's
PDS (keeping the local card with its provenance and the record's AT-URI, which `forget`
reports), and the agent can search its public cards."""

from __future__ import annotations

import pytest
from pydantic_ai import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phi.agent.public import search_cards
from phi.atproto import CosmikCard, PhiClient
from phi.memory import NewRow, user_namespace
from phi.memory.learning import PUBLIC, SmallModel
from phi.memory.store import DERIVED_FROM, PUBLISHED_URIS

from ._brain import Brain, call
from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]

CARD = "Mind of the Raven (Bernd Heinrich): a field biologist's book on raven minds"


def _promote_first(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    (output,) = info.output_tools
    verdict = {"key": "o1", "verdict": "promote", "card": CARD}
    return ModelResponse(parts=[ToolCallPart(tool_name=output.name, args={"verdicts": [verdict]})])


async def test_promote_publishes_a_card_and_the_agent_finds_it(
    runtime: RuntimeFactory, alice: PhiClient
) -> None:
    async def search_then_stop(prompt: str, step: int) -> list[ToolCallPart]:
        return [call("search_public_memory", query="raven book")] if step == 0 else []

    did = alice.me.did
    brain = Brain(search_then_stop)
    async with runtime(brain) as phi_runtime:
        memory, client = phi_runtime.memory, phi_runtime.client
        share = await memory.remember(
            NewRow(
                content="recommends the book 'Mind of the Raven'",
                namespace=user_namespace(did),
                kind="observation",
                author=did,
            )
        )
        phi_runtime.small = SmallModel(model=FunctionModel(_promote_first), memory=memory)

        said = await phi_runtime.review_now()

        cards = {c.uri: c.value for c in await client.list_records(CosmikCard, limit=100)}
        published = [
            uri for uri, card in cards.items() if getattr(card.content, "text", "") == CARD
        ]
        assert len(published) == 1
        (uri,) = published
        assert uri.startswith(f"at://{client.me.did}/network.cosmik.card/")
        assert uri in said
        (local,) = [r async for r in memory.export(namespace=PUBLIC)]
        assert local.content == CARD and local.author == did
        assert local.meta[DERIVED_FROM] == [share.row_id]
        assert local.meta[PUBLISHED_URIS] == [uri]

        hits = await search_cards(client, "which RAVEN book?")
        assert hits[0].uri == uri and hits[0].text == CARD
        assert await search_cards(client, "zzzz unrelated") == []

        await phi_runtime.post_now()  # the agent searches with its tool
        assert any(uri in result for result in brain.results), brain.results

        report = await memory.forget(user_namespace(did))
    assert report.published == (uri,)  # still on the PDS: listed for the operator
