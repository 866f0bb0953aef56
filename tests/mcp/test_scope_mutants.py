"""`Scope`, the namespace confinement every MCP tool goes through, on its own: what a prefix
covers, what a confined client is told, and which namespaces a read covers, over a real
store. test_remote.py shows the same rules through `phi mcp --http`."""

from __future__ import annotations

import pytest

from phi.errors import InvalidInput, NamespaceNotFound, RowNotFound
from phi.mcp._scope import Scope, within
from phi.memory import Memory, NewRow

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("namespace", "prefix", "inside"),
    [
        ("alpha-x", "alpha", True),
        ("alphax", "alpha", False),
        ("alpha", "alpha", True),
        ("beta-alpha", "alpha", False),  # a prefix is where a name starts, not inside it
        ("team-a-notes", "team-a-", True),
        ("team-a-", "team-a-", True),
        ("team-a", "team-a-", False),
        ("a:b", "a:", True),
        ("ab", "a", False),
        ("a--x", "a-", True),
        ("ax-", "a", False),  # the separator must come right after the prefix
        ("ax.y", "a", False),
    ],
)
def test_what_a_prefix_covers(namespace: str, prefix: str, inside: bool) -> None:
    assert within(namespace, prefix) is inside
    assert Scope(prefix=prefix).allows(namespace) is inside
    assert Scope().allows(namespace) is True


def test_a_namespace_outside_the_prefix_is_refused_saying_what_to_use() -> None:
    scope = Scope(prefix="alpha")
    assert scope.check("alpha-notes") == "alpha-notes"
    with pytest.raises(InvalidInput) as caught:
        scope.check("alphabet-notes")
    assert str(caught.value) == (
        "namespace 'alphabet-notes' is outside this server's prefix 'alpha'; "
        "use a namespace like 'alpha-notes'"
    )
    with pytest.raises(InvalidInput) as caught:
        Scope(prefix="team-a-").check("team-b-notes")
    assert str(caught.value).endswith("use a namespace like 'team-a-notes'")
    assert Scope().check("anything") == "anything"


@pytest.mark.parametrize(
    ("prefix", "name", "placed"),
    [
        ("alpha", "notes", "alpha-notes"),
        ("alpha", "alpha", "alpha"),
        ("alpha", "alpha_notes", "alpha_notes"),
        ("team-a-", "notes", "team-a-notes"),
        ("team:", "notes", "team:notes"),
        ("t.", "notes", "t.notes"),
        ("t_", "notes", "t_notes"),
        ("a-b", "notes", "a-b-notes"),  # the last character decides, not the first
        ("-ab", "notes", "-ab-notes"),
        (None, "notes", "notes"),
    ],
)
def test_a_name_is_placed_under_the_prefix_at_a_boundary(
    prefix: str | None, name: str, placed: str
) -> None:
    assert Scope(prefix=prefix).place(name) == placed


async def test_a_row_outside_the_scope_is_not_found_rather_than_forbidden(
    memory: Memory,
) -> None:
    theirs = await memory.remember(NewRow(content="b's plan", namespace="team-b-notes"))
    mine = await memory.remember(NewRow(content="a's plan", namespace="team-a-notes"))
    scope = Scope(prefix="team-a-")
    assert scope.check_row(mine) == mine
    assert Scope().check_row(theirs) == theirs
    with pytest.raises(RowNotFound) as caught:
        scope.check_row(theirs)
    assert str(caught.value) == f"no memory row with id {theirs.row_id!r}"


async def test_a_read_covers_the_namespaces_asked_for_or_all_under_the_prefix(
    memory: Memory,
) -> None:
    for namespace in ("alpha", "alpha-notes", "alpha.x", "alphabet-secret", "beta"):
        await memory.remember(NewRow(content=f"in {namespace}", namespace=namespace))
    alpha = Scope(prefix="alpha")
    assert await alpha.namespaces(memory, None) == ["alpha", "alpha-notes", "alpha.x"]
    assert await alpha.namespaces(memory, []) == ["alpha", "alpha-notes", "alpha.x"]
    assert await alpha.namespaces(memory, ["alpha-notes", "alpha-new"]) == [
        "alpha-notes",
        "alpha-new",
    ]
    with pytest.raises(InvalidInput, match="'alphabet-secret' is outside"):
        await alpha.namespaces(memory, ["alpha-notes", "alphabet-secret"])
    assert await Scope().namespaces(memory, None) is None
    assert await Scope().namespaces(memory, ["beta"]) == ["beta"]
    with pytest.raises(NamespaceNotFound) as caught:
        await Scope(prefix="gamma").namespaces(memory, None)
    assert str(caught.value) == ("namespace 'gamma*' holds no rows (see `phi memory stats`)")
    # `alphabet` lists by plain prefix as `alphabet-secret` too, yet owns nothing under it.
    with pytest.raises(NamespaceNotFound):
        await Scope(prefix="alphabe").namespaces(memory, None)
