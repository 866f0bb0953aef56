"""Bad text and identifiers are refused by the library, by name, before anything is written."""

from __future__ import annotations

from typing import Any

import pytest

from phi.errors import InvalidInput
from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory.model import validate_did, validate_namespace

pytestmark = pytest.mark.anyio

LONE = "\ud800"
"""A lone surrogate: what `\\ud800` in JSON or invalid UTF-8 on a command line decodes to."""
ESCAPED = "\udcff"
"""What Python's `surrogateescape` makes of the invalid UTF-8 byte 0xff in `argv`."""

BAD_WRITES: list[tuple[dict[str, Any], str]] = [
    ({"content": f"half a character {LONE}"}, "content"),
    ({"content": f"from argv {ESCAPED}"}, "content"),
    ({"tags": [f"topic{ESCAPED}"]}, "tag"),
    ({"source_uris": [f"https://example.com/{LONE}"]}, "source URI"),
    ({"author": f"did:plc:{LONE}"}, "author"),
    ({"author": "bob"}, "not a DID"),
    ({"author": "did:plc:bob\n"}, "not a DID"),
    ({"namespace": "notes\n"}, "invalid namespace"),
    ({"namespace": f"notes{LONE}"}, "invalid namespace"),
    ({"thread": f"t{LONE}"}, "meta"),
]


@pytest.mark.parametrize(("change", "named"), BAD_WRITES)
async def test_bad_text_is_refused_and_nothing_is_stored(
    memory: Memory, change: dict[str, Any], named: str
) -> None:
    arguments: dict[str, Any] = {"content": "hello", "namespace": "notes", **change}
    with pytest.raises(InvalidInput, match=named):
        await memory.remember(NewRow(**arguments))
    assert (await memory.stats()).rows == 0


async def test_an_interaction_with_a_lone_surrogate_is_refused(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="content"):
        await memory.remember(
            NewRow.interaction([Turn(speaker="@ann.test", text=f"hi {LONE}")], namespace="notes")
        )
    with pytest.raises(InvalidInput, match="not a DID"):
        await memory.remember(
            NewRow.interaction(
                [Turn(speaker="@ann.test", text="hi")], namespace="notes", author="ann.test"
            )
        )
    assert (await memory.stats()).rows == 0


async def test_reads_refuse_bad_text_by_name(memory: Memory) -> None:
    await memory.remember(NewRow(content="hello", namespace="notes"))
    with pytest.raises(InvalidInput, match="query"):
        await memory.search(f"hello {LONE}")
    with pytest.raises(InvalidInput, match="hint"):
        await memory.preload(f"hello {LONE}")
    with pytest.raises(InvalidInput, match="row id"):
        await memory.get(f"row{LONE}")


@pytest.mark.parametrize("did", ["did:plc:abc\n", "did:plc:abc\ndid:plc:x", "bob", ""])
def test_dids_match_whole(did: str) -> None:
    with pytest.raises(InvalidInput, match="not a DID"):
        validate_did(did)
    with pytest.raises(InvalidInput, match="not a DID"):
        user_namespace(did)


@pytest.mark.parametrize("namespace", ["notes\n", "notes\nother", "a" * 201, ""])
def test_namespaces_match_whole(namespace: str) -> None:
    with pytest.raises(InvalidInput, match="invalid namespace"):
        validate_namespace(namespace)


def test_good_names_pass() -> None:
    assert validate_did("did:plc:abc123") == "did:plc:abc123"
    assert validate_did("did:web:example.com") == "did:web:example.com"
    assert user_namespace("did:plc:abc") == "phi-users-did:plc:abc"
    assert validate_namespace("agent-notes") == "agent-notes"
