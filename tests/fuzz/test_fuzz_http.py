"""Fuzz the HTTP API: schemathesis drives every route of the app's OpenAPI in process (ASGI),
hypothesis sends bad bodies and tokens to the write route. Every bad request is a 4xx with a
JSON `detail`, never a 500, and the store is unchanged afterwards."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.generation.modes import GenerationMode

from phi.memory import Memory, MiniLMEmbedder
from phi.web import LOOPBACK_HOSTS, create_app

from .conftest import FUZZED, bad_dids, bad_namespaces, broken_text, fuzz_settings, snapshot_of

TOKEN = "fuzz-token"


@pytest.fixture(scope="module")
def web_schema(fuzz_db: Path, minilm: MiniLMEmbedder) -> Any:
    """The app with no token (so every write is refused) over the seeded store; schemathesis
    reaches it as `testserver`, so that name is trusted here."""
    app = create_app(
        lambda: Memory.open(fuzz_db, embedder=minilm),
        trusted_hosts=[*LOOPBACK_HOSTS, "testserver"],
    )
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def test_every_route_answers_without_a_server_error(web_schema: Any) -> None:
    # One hypothesis run per operation of the OpenAPI document (schemathesis' own pytest
    # plugin does not load under this pytest; its strategies are the same).
    operations = [result.ok() for result in web_schema.get_all_operations()]
    assert len(operations) >= 9

    for operation, mode in itertools.product(operations, GenerationMode):

        @fuzz_settings(max_examples=15)
        @given(case=operation.as_strategy(mode))
        def check(case: Any) -> None:
            FUZZED["http"] += 1
            response = case.call()
            assert response.status_code < 500, (case.path, case.query, case.body, response.text)
            if response.status_code >= 400:
                assert response.json()["detail"], response.text

        try:
            check()
        except Unsatisfiable:
            # Some operations have no invalid form (no parameters to break).
            assert mode is GenerationMode.NEGATIVE, operation.path


@pytest.fixture(scope="module")
def writer(fuzz_db: Path, minilm: MiniLMEmbedder) -> Iterator[TestClient]:
    app = create_app(lambda: Memory.open(fuzz_db, embedder=minilm), token=TOKEN)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


def _body(**change: Any) -> dict[str, Any]:
    return {"content": "a fuzzed note", "namespace": "agent-notes", **change}


bad_bodies = st.one_of(
    st.builds(lambda c: _body(content=c), broken_text()),
    st.builds(lambda n: _body(namespace=n), bad_namespaces),
    st.builds(lambda a: _body(author=a), bad_dids),
    st.builds(lambda t: _body(tags=[t]), broken_text()),
    st.builds(lambda t: _body(tags=t), st.lists(st.just("t"), min_size=4, max_size=6)),
    st.builds(lambda u: _body(source_uris=[u]), broken_text()),
    st.builds(lambda s: _body(supersedes=s), st.one_of(st.text(max_size=20), broken_text())),
    st.builds(lambda k: _body(kind=k), st.text(max_size=12)),
    st.builds(lambda c: _body(content=c), st.sampled_from(["", "   ", "\n"])),
)
"""Bodies the write route must refuse."""


@fuzz_settings(max_examples=100)
@given(body=bad_bodies)
def test_bad_bodies_are_refused_by_name(
    writer: TestClient, fuzz_db: Path, minilm: MiniLMEmbedder, body: dict[str, Any]
) -> None:
    before = snapshot_of(fuzz_db, minilm) if FUZZED["http-body"] % 25 == 0 else None
    FUZZED["http-body"] += 1
    # `json.dumps` escapes a lone surrogate as `\ud800`: how it travels in real JSON.
    response = writer.post(
        "/api/memory/rows",
        content=json.dumps(body),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    assert 400 <= response.status_code < 500, (body, response.text)
    assert response.json()["detail"], response.text
    if before is not None:
        assert snapshot_of(fuzz_db, minilm) == before


header_bytes = st.binary(min_size=1, max_size=40).filter(
    lambda b: not any(c in b for c in b"\r\n\x00") and b.strip() == b
)


@fuzz_settings(max_examples=40)
@given(token=header_bytes)
def test_any_bearer_token_is_a_clean_401(writer: TestClient, token: bytes) -> None:
    FUZZED["http-token"] += 1
    response = writer.post(
        "/api/memory/rows", json=_body(), headers={b"Authorization": b"Bearer " + token}
    )
    assert response.status_code == 401, (token, response.text)
    assert response.json()["detail"] == "missing or wrong bearer token"


def test_the_store_is_unchanged(fuzz_db: Path, minilm: MiniLMEmbedder) -> None:
    rows = snapshot_of(fuzz_db, minilm)
    assert [row.content for row in rows][-1] == "the release is on friday"
    assert len(rows) == 4
