"""What a tool call sets, and when a later one reverses it (`phi.capture.supersede`, no store)."""

from __future__ import annotations

from typing import Any

import pytest

from phi.capture.supersede import Claims, claims_from_meta, claims_of, reversal

EARLIER_EDIT = {
    "file_path": "/repo/src/client.py",
    "old_string": "def fetch(url):\n    return http.get(url)",
    "new_string": "def fetch(url):\n    return http.get(url, timeout=30)",
}


def edit(old: str, new: str, path: str = "/repo/src/client.py") -> Claims:
    return claims_of("Edit", {"file_path": path, "old_string": old, "new_string": new})


def test_an_edit_claims_the_lines_it_wrote_and_took_out() -> None:
    claims = claims_of("Edit", EARLIER_EDIT)
    assert claims.path == "/repo/src/client.py"
    assert len(claims.added) == 1  # `return http.get(url, timeout=30)`; `def fetch` stayed
    assert claims.removed is not None and len(claims.removed) == 1
    assert claims.settings == {}
    assert claims  # something is claimed


def test_editing_a_line_the_earlier_edit_wrote_reverses_it() -> None:
    earlier = claims_of("Edit", EARLIER_EDIT)
    later = edit("    return http.get(url, timeout=30)", "    return http.get(url, timeout=90)")
    assert reversal(later, earlier) == "the same region of /repo/src/client.py edited again"
    # Not the other way round, and not an edit elsewhere in the file, or in another file.
    assert reversal(earlier, later) is None
    elsewhere = edit("    return http.post(url, body)", "    return http.post(url, data=body)")
    assert reversal(elsewhere, earlier) is None
    other_file = edit(
        "    return http.get(url, timeout=30)", "    return None", path="/repo/src/other.py"
    )
    assert reversal(other_file, earlier) is None


def test_an_edit_that_only_keeps_the_earlier_lines_as_context_reverses_nothing() -> None:
    earlier = claims_of("Edit", EARLIER_EDIT)
    below = edit(
        "    return http.get(url, timeout=30)",
        "    return http.get(url, timeout=30)\n\n\ndef close():\n    http.close()",
    )
    assert reversal(below, earlier) is None


def test_short_lines_say_nothing_about_a_region() -> None:
    earlier = edit("if a:\n    x()", "if a:\n    y_call()\nelse:\n    pass")
    later = edit("else:\n    pass", "")  # removes only lines anyone might write
    assert reversal(later, earlier) is None


def test_a_write_reverses_an_edit_only_when_the_edit_is_gone() -> None:
    earlier = claims_of("Edit", EARLIER_EDIT)
    kept = claims_of(
        "Write",
        {
            "file_path": "/repo/src/client.py",
            "content": "def fetch(url):\n    return http.get(url, timeout=30)\n",
        },
    )
    gone = claims_of(
        "Write",
        {"file_path": "/repo/src/client.py", "content": "def fetch(url):\n    return None\n"},
    )
    assert kept.removed is None  # a whole file
    assert reversal(kept, earlier) is None
    assert reversal(gone, earlier) == (
        "/repo/src/client.py rewritten without lines the earlier change wrote"
    )


def test_multi_edit_claims_every_edit() -> None:
    earlier = claims_of("Edit", EARLIER_EDIT)
    later = claims_of(
        "MultiEdit",
        {
            "file_path": "/repo/src/client.py",
            "edits": [
                {"old_string": "import http", "new_string": "import httpx as http"},
                {
                    "old_string": "    return http.get(url, timeout=30)",
                    "new_string": "    return http.get(url)",
                },
                {"old_string": 3, "new_string": "not an edit"},
            ],
        },
    )
    assert reversal(later, earlier) == "the same region of /repo/src/client.py edited again"


@pytest.mark.parametrize(
    ("tool", "tool_input", "settings"),
    [
        (
            "Edit",
            {
                "file_path": "/repo/pyproject.toml",
                "old_string": "x",
                "new_string": 'dependencies = ["httpx>=0.27", "Anyio_Ext"]\n'
                "    \"rich[jupyter] == 13.1 ; python_version >= '3.11'\",\n"
                "line-length = 100\n[tool.ruff]\n# note = 1",
            },
            {
                "dep:py:httpx": ">=0.27",
                "dep:py:anyio-ext": "*",
                "dep:py:rich": "==13.1",
                "set:/repo/pyproject.toml:line-length": "100",
            },
        ),
        (
            "Write",
            {
                "file_path": "/repo/requirements-dev.txt",
                "content": "httpx==0.27.0  # pinned\n-r base.txt\npytest\n# c\n",
            },
            {"dep:py:httpx": "==0.27.0", "dep:py:pytest": "*"},
        ),
        (
            "Edit",
            {
                "file_path": "/repo/package.json",
                "old_string": "",
                "new_string": '    "react": "^18.2.0",\n    "main": "index.js",\n  "deps": {',
            },
            {"dep:js:react": "^18.2.0", "set:/repo/package.json:main": "index.js"},
        ),
        (
            "Write",
            {"file_path": "/repo/.env.local", "content": "export API_TIMEOUT=30\nDEBUG='1'\n"},
            {"set:/repo/.env.local:API_TIMEOUT": "30", "set:/repo/.env.local:DEBUG": "1"},
        ),
        (
            "Write",
            {"file_path": "/repo/src/app.py", "content": "TIMEOUT = 30\n"},
            {},  # code, not configuration: its lines are a region, not settings
        ),
        (
            "Bash",
            {
                "command": "uv add 'httpx==0.28' && git config --global user.email a@b.c; "
                "CI=1 npm install --save-dev @types/node@20 react | tee log\n"
                "pip install -r req.txt -U 'anyio[trio]>=4' ./local && poetry add pendulum@^3"
            },
            {
                "dep:py:httpx": "==0.28",
                "set:git:user.email": "a@b.c",
                "dep:js:@types/node": "20",
                "dep:js:react": "*",
                "dep:py:anyio": ">=4",
                "dep:py:pendulum": "^3",
            },
        ),
        (
            "Bash",
            {
                "command": "npm config set registry=https://r.example && pnpm config set "
                "store-dir /s && cargo add serde@1.0 && go get golang.org/x/net@v0.30.0"
            },
            {
                "set:npm:registry": "https://r.example",
                "set:npm:store-dir": "/s",
                "dep:rs:serde": "1.0",
                "dep:go:golang.org/x/net": "v0.30.0",
            },
        ),
        ("Bash", {"command": "git config --get user.email; git config -l; echo 'unclosed"}, {}),
        ("Bash", {"command": "uv pip install -e . httpx"}, {"dep:py:httpx": "*"}),
        (
            "NotebookEdit",
            {"notebook_path": "/repo/a.ipynb", "cell_id": "c1", "new_source": "x = 1"},
            {
                "cell:/repo/a.ipynb:c1": claims_of(
                    "NotebookEdit",
                    {"notebook_path": "/repo/a.ipynb", "cell_id": "c1", "new_source": "x = 1"},
                ).settings["cell:/repo/a.ipynb:c1"]
            },
        ),
    ],
)
def test_settings_and_dependencies_a_call_sets(
    tool: str, tool_input: dict[str, Any], settings: dict[str, str]
) -> None:
    assert dict(claims_of(tool, tool_input).settings) == settings


def test_the_same_key_given_another_value_is_a_reversal() -> None:
    pinned = claims_of("Bash", {"command": "uv add httpx==0.27"})
    repinned = claims_of(
        "Edit",
        {
            "file_path": "/repo/pyproject.toml",
            "old_string": '    "httpx==0.27",',
            "new_string": '    "httpx==0.28",',
        },
    )
    same = claims_of("Bash", {"command": "uv add httpx==0.27"})
    other = claims_of("Bash", {"command": "uv add anyio==4"})
    assert reversal(repinned, pinned) == "dep:py:httpx set to '==0.28' (was '==0.27')"
    assert reversal(same, pinned) is None
    assert reversal(other, pinned) is None


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Bash", {"command": "ls -la"}),
        ("Edit", {"file_path": " ", "old_string": "a", "new_string": "b"}),
        ("Edit", {"file_path": "/a.py", "old_string": 1, "new_string": "b"}),
        ("Write", {"file_path": "/a.py"}),
        ("NotebookEdit", {"notebook_path": "/a.ipynb"}),
        ("WebFetch", {"url": "https://example.org"}),
        ("Bash", {"command": 5}),
    ],
)
def test_calls_that_set_nothing_claim_nothing(tool: str, tool_input: dict[str, Any]) -> None:
    claims = claims_of(tool, tool_input)
    assert not claims
    assert reversal(claims, claims_of("Edit", EARLIER_EDIT)) is None


def test_claims_survive_a_row_meta_round_trip() -> None:
    for claims in (
        claims_of("Edit", EARLIER_EDIT),
        claims_of("Write", {"file_path": "/r/a.py", "content": "print('hello world')"}),
        claims_of("Bash", {"command": "uv add httpx==0.27"}),
    ):
        assert claims_from_meta(claims.as_meta()) == claims
    assert claims_from_meta(None) is None
    assert claims_from_meta({"settings": []}) is None
    assert claims_from_meta({"settings": {}, "added": "x"}) is None
    assert claims_from_meta({"settings": {}, "path": 3}) is None
    assert claims_from_meta({"settings": {}, "path": "/a", "removed": "x"}) is None


def test_paths_are_compared_normalised() -> None:
    earlier = claims_of("Edit", EARLIER_EDIT)
    later = edit(
        "    return http.get(url, timeout=30)",
        "    pass_through()",
        path="/repo/src/../src/client.py",
    )
    assert reversal(later, earlier) is not None


def test_reindenting_the_earlier_lines_reverses_nothing() -> None:
    earlier = claims_of("Edit", EARLIER_EDIT)
    nested = edit(
        "    return http.get(url, timeout=30)",
        "    with session():\n        return http.get(url, timeout=30)",
    )
    assert not nested.removed
    assert reversal(nested, earlier) is None


def test_writing_the_same_line_elsewhere_reverses_nothing() -> None:
    earlier = claims_of("Edit", EARLIER_EDIT)
    copy = edit("def head(url):\n    pass", "def head(url):\n    return http.get(url, timeout=30)")
    assert reversal(copy, earlier) is None
