"""One project, one namespace: derived from the repository's identity, overridable."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from phi.capture import HookOptions, Spool, _run, run_hook
from phi.capture.project import (
    PROJECT_ENV,
    normalise_remote,
    origin_url,
    project_namespace,
    resolve_namespace,
)
from phi.errors import InvalidInput
from phi.memory.model import validate_namespace


def repository(root: Path, url: str | None) -> Path:
    (root / ".git").mkdir(parents=True)
    config = '[core]\n\tbare = false\n[remote "upstream"]\n\turl = git@example.org:fork/x.git\n'
    if url is not None:
        config += (
            f'[remote "origin"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
        )
    config += '[branch "main"]\n\tremote = origin\n'
    (root / ".git" / "config").write_text(config)
    return root


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/acme/api.git",
        "https://alice:s3cret@GitHub.com/acme/api",
        "ssh://git@github.com:22/acme/api.git/",
        "git@github.com:acme/api.git",
        "github.com:acme/api",
        "git://github.com/acme/api.git",
    ],
)
def test_every_form_of_one_remote_is_one_project(url: str) -> None:
    assert normalise_remote(url) == ("github.com", "acme/api")


def test_the_owner_and_a_nested_group_are_kept_and_a_local_remote_is_no_identity() -> None:
    assert normalise_remote("https://gitlab.com/acme/platform/api.git") == (
        "gitlab.com",
        "acme/platform/api",
    )
    assert normalise_remote("ssh://git@host.example/~alice/dots.git") == (
        "host.example",
        "alice/dots",
    )
    assert normalise_remote("/srv/git/api.git") is None
    assert normalise_remote("file:///srv/git/api.git") is None
    assert normalise_remote("../api") is None


def test_two_checkouts_of_one_repository_share_a_namespace(tmp_path: Path) -> None:
    one = repository(tmp_path / "one" / "api", "git@github.com:acme/api.git")
    two = repository(tmp_path / "two" / "checkout", "https://github.com/acme/api")
    (one / "src" / "deep").mkdir(parents=True)
    assert project_namespace(one / "src" / "deep") == "code:github.com:acme:api"
    assert project_namespace(two) == "code:github.com:acme:api"
    validate_namespace(project_namespace(one))


def test_two_folders_of_one_name_with_other_repositories_stay_apart(tmp_path: Path) -> None:
    first = repository(tmp_path / "a" / "api", "git@github.com:acme/api.git")
    second = repository(tmp_path / "b" / "api", "git@github.com:other/api.git")
    local = repository(tmp_path / "c" / "api", None)
    plain = tmp_path / "d" / "api"
    plain.mkdir(parents=True)
    names = {project_namespace(p) for p in (first, second, local, plain)}
    assert len(names) == 4
    assert project_namespace(local).startswith("code:path:api-")
    assert project_namespace(local / ".") == project_namespace(local)
    for name in names:
        validate_namespace(name)


def test_a_worktree_reads_the_main_repositorys_remote(tmp_path: Path) -> None:
    main = repository(tmp_path / "main", "https://github.com/acme/api.git")
    linked = main / ".git" / "worktrees" / "feature"
    linked.mkdir(parents=True)
    (linked / "commondir").write_text("../..\n")
    tree = tmp_path / "feature"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {linked}\n")
    assert origin_url(tree) == "https://github.com/acme/api.git"
    assert project_namespace(tree) == "code:github.com:acme:api"


def test_odd_characters_and_a_very_long_remote_still_make_a_valid_namespace(
    tmp_path: Path,
) -> None:
    odd = repository(tmp_path / "odd", "https://git.example/team name/r~pö.git")
    assert project_namespace(odd) == "code:git.example:team%20name:r%7Ep%C3%B6"
    long = repository(tmp_path / "long", "https://git.example/" + "/".join(["group"] * 60))
    name = project_namespace(long)
    assert name.startswith("code:git.example:") and len(name) < 60
    validate_namespace(name)
    weird = tmp_path / "naïve folder!"
    weird.mkdir()
    validate_namespace(project_namespace(weird))


def test_an_explicit_namespace_wins_then_the_environment_then_the_project(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path / "api", "git@github.com:acme/api.git")
    env = {PROJECT_ENV: "team-api"}
    assert resolve_namespace("mine", str(repo), environ=env) == "mine"
    assert resolve_namespace(None, str(repo), environ=env) == "team-api"
    assert resolve_namespace(None, str(repo), environ={PROJECT_ENV: " "}) == (
        "code:github.com:acme:api"
    )
    with pytest.raises(InvalidInput, match=r"^PHI_CAPTURE_PROJECT='team api' is not a namespace"):
        resolve_namespace(None, str(repo), environ={PROJECT_ENV: "team api"})


def test_a_bad_project_variable_is_said_in_one_line_and_nothing_is_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PROJECT_ENV, "-starts-badly")
    options = HookOptions(spool_dir=tmp_path / "capture", namespace=None, recall=True)
    event = {"hook_event_name": "Stop", "session_id": "s1", "cwd": str(tmp_path)}
    out, err = io.StringIO(), io.StringIO()
    assert run_hook(io.BytesIO(json.dumps(event).encode()), options, out=out, err=err) == 1
    assert err.getvalue().startswith("phi capture: PHI_CAPTURE_PROJECT='-starts-badly' is not")
    assert len(err.getvalue().splitlines()) == 1
    assert (out.getvalue(), Spool(directory=options.spool_dir).path.exists()) == ("", False)


def test_the_hook_queues_each_event_in_its_own_projects_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PROJECT_ENV, raising=False)
    nudged: list[Path] = []  # the resident process is not what this test is about
    monkeypatch.setattr(_run, "nudge", lambda resident: nudged.append(resident.spool_dir))
    api = repository(tmp_path / "api", "git@github.com:acme/api.git")
    web = repository(tmp_path / "web", "git@github.com:acme/web.git")
    options = HookOptions(spool_dir=tmp_path / "capture", namespace=None, recall=True)
    spool = Spool(directory=options.spool_dir)
    for cwd in (api / "src", web, api):
        event = {"hook_event_name": "Notification", "session_id": "s1", "cwd": str(cwd)}
        code = run_hook(
            io.BytesIO(json.dumps(event).encode()), options, out=io.StringIO(), err=io.StringIO()
        )
        assert code == 0
    queued = [json.loads(line)["namespace"] for line in spool.path.read_text().splitlines()]
    assert queued == [
        "code:github.com:acme:api",
        "code:github.com:acme:web",
        "code:github.com:acme:api",
    ]
    assert nudged == [options.spool_dir] * 3
