"""Team grants in this process: what a `NAME TOKEN GRANT...` line gives, what a read-only or
multi-prefix scope lets a client read and write, and that the remote app hands each token's
server its grants and its writer's name. test_team_tokens.py shows the same through
`phi mcp --http`; these are the fast tests `scripts/mutate` runs against the grant code."""

from __future__ import annotations

from pathlib import Path

import pytest

from phi.errors import InvalidInput, NamespaceNotFound
from phi.mcp._scope import ReadOnly, Scope
from phi.mcp.remote import TokenScope, build_remote_app, load_tokens
from phi.memory import Memory, NewRow
from tests._serving import serving

from .test_remote import TOKEN_A, TOKEN_B, client, result

pytestmark = pytest.mark.anyio

TOKEN_C = "c" * 8 + "1e0c93a5b2f4e86d0c1a3b7d"


def tokens(tmp_path: Path, text: str) -> list[TokenScope]:
    path = tmp_path / "tokens"
    path.write_text(text)
    path.chmod(0o600)
    return load_tokens(path)


def refusal(tmp_path: Path, text: str) -> str:
    with pytest.raises(InvalidInput) as caught:
        tokens(tmp_path, text)
    return str(caught.value)


def test_each_grant_line_gives_exactly_its_scope(tmp_path: Path) -> None:
    assert tokens(tmp_path, f"w {TOKEN_A} rw:*\n") == [
        TokenScope(token=TOKEN_A, prefix=None, name="w", read_only=False)
    ]
    assert tokens(tmp_path, f"r {TOKEN_A} ro:*\n") == [
        TokenScope(token=TOKEN_A, prefix=None, name="r", read_only=True)
    ]
    # The read grants around a write grant are all extra reads, in the order given; a
    # prefix may hold the grant's own separator after its first one.
    assert tokens(tmp_path, f"al {TOKEN_A} ro:team:x rw:al- ro:ops.\n") == [
        TokenScope(
            token=TOKEN_A, prefix="al-", name="al", read_only=False, also_read=("team:x", "ops.")
        )
    ]
    # Without a write grant the first read grant is home, read-only; the rest extra reads.
    assert tokens(tmp_path, f"ci {TOKEN_A} ro:team- ro:ops. ro:x:\n") == [
        TokenScope(
            token=TOKEN_A, prefix="team-", name="ci", read_only=True, also_read=("ops.", "x:")
        )
    ]
    # Names and tokens come from their own fields.
    (one, two) = tokens(tmp_path, f"one {TOKEN_A} rw:a-\ntwo {TOKEN_B} rw:b-\n")
    assert (one.name, one.token, two.name, two.token) == ("one", TOKEN_A, "two", TOKEN_B)


def test_each_mistake_in_a_grant_line_is_refused_with_its_reason(tmp_path: Path) -> None:
    where = f"{tmp_path / 'tokens'}:1: "
    for grant in ("rw", "RW:a-", "ro-a", "RO:a-", "xx:a-", ":a-"):
        assert refusal(tmp_path, f"a {TOKEN_A} {grant}\n") == (
            f"{where}grant {grant!r} is not 'rw:PREFIX' or 'ro:PREFIX' (e.g. 'ro:team-')"
        )
    bad = refusal(tmp_path, f"a {TOKEN_A} ro:bad/name\n")
    assert bad.startswith(f"{where}grant 'ro:bad/name': ") and "namespace" in bad
    assert refusal(tmp_path, f"a {TOKEN_A} rw:a- rw:b- rw:c-\n") == (
        f"{where}a token has at most one 'rw:' grant, got 3"
    )
    for line in (f"a {TOKEN_A} ro:* ro:b-", f"a {TOKEN_A} ro:b- rw:*"):
        assert refusal(tmp_path, line + "\n") == (
            f"{where}a '*' grant covers every namespace; give it alone"
        )
    # Two different names are fine; the same name twice is not, whatever their grants.
    assert len(tokens(tmp_path, f"a {TOKEN_A} ro:x\nb {TOKEN_B} ro:x\n")) == 2
    assert refusal(tmp_path, f"a {TOKEN_A} ro:x\nb {TOKEN_B} ro:y\na {TOKEN_C} ro:z\n") == (
        f"{tmp_path / 'tokens'}:3: the name 'a' is given twice"
    )


def test_a_read_only_error_names_the_namespace() -> None:
    error = ReadOnly("team-x")
    assert error.namespace == "team-x"
    assert str(error) == (
        "namespace 'team-x' is read-only for this client (its token may read it, not write"
        " it); write with a token that has it read-write"
    )
    assert isinstance(error, InvalidInput)


def test_reads_and_writes_of_each_kind_of_scope() -> None:
    writer = Scope(prefix="al-", also_read=("team-", "ops."))
    assert [writer.allows(n) for n in ("al-x", "team-x", "ops.y", "teamx", "bob")] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert [writer.writable(n) for n in ("al-x", "team-x", "ops.y")] == [True, False, False]
    assert writer.check_write("al-x") == "al-x"
    with pytest.raises(ReadOnly) as caught:
        writer.check_write("ops.y")
    assert caught.value.namespace == "ops.y"
    with pytest.raises(InvalidInput) as outside:
        writer.check_write("bob")
    assert type(outside.value) is InvalidInput and "outside this server's prefix" in str(
        outside.value
    )
    reader = Scope(prefix="al-", read_only=True, also_read=("team-",))
    assert reader.allows("al-x") and reader.allows("team-x") and not reader.allows("bob")
    assert not reader.writable("al-x") and not reader.writable("team-x")
    everything = Scope()
    assert everything.writable("anything") and everything.allows("anything")


async def test_a_read_covers_every_prefix_the_client_may_read(memory: Memory) -> None:
    for namespace in ("al-notes", "team-plan", "team-old", "ops.log", "bob-secret"):
        await memory.remember(NewRow(content=f"in {namespace}", namespace=namespace))
    scope = Scope(prefix="al-", read_only=True, also_read=("team-", "ops."))
    assert await scope.namespaces(memory, None) == ["al-notes", "team-old", "team-plan", "ops.log"]
    only_extra = Scope(prefix="nobody-", also_read=("ops.",))
    assert await only_extra.namespaces(memory, None) == ["ops.log"]
    with pytest.raises(NamespaceNotFound):
        await Scope(prefix="nobody-", also_read=("none-",)).namespaces(memory, None)


async def test_the_remote_app_gives_each_token_its_grants_and_its_name(
    memory: Memory, tmp_path: Path
) -> None:
    await memory.remember(NewRow(content="the team ships on friday", namespace="team-plan"))
    granted = tokens(
        tmp_path, f"alice {TOKEN_A} rw:alice- ro:team-\nci {TOKEN_B} ro:alice- ro:team-\n"
    )
    async with serving(build_remote_app(memory, granted)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with client(url, TOKEN_A) as alice:
            failed, written = await result(
                alice, "remember", content="alice owns the release", namespace="alice-notes"
            )
            assert not failed, written
            failed, message = await result(
                alice, "remember", content="sneaky", namespace="team-plan"
            )
            assert failed and "'team-plan' is read-only for this client" in message
            failed, found = await result(alice, "recall", query="when does the team ship?")
            assert not failed
            assert "the team ships on friday" in [h["content"] for h in found["results"]]
        async with client(url, TOKEN_B) as ci:
            failed, message = await result(ci, "remember", content="x", namespace="alice-notes")
            assert failed and "'alice-notes' is read-only for this client" in message
    rows = [row async for row in memory.export(namespace="alice-notes")]
    assert [(r.content, r.written_by) for r in rows] == [("alice owns the release", "alice")]
