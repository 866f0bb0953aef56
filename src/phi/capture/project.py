"""Which project a hook event belongs to, and so which namespace its memories go to.

One project is one namespace, named after the repository's identity rather than its
folder: two checkouts of one repository share their memories, and two folders named `api`
holding different repositories do not. The identity is the repository's `origin` remote,
normalised (`https://`, `ssh://` and scp-like `git@host:owner/repo` forms of one URL name
one project; credentials, a port, `.git` and the host's case do not count), else the
repository's root folder, else (outside any repository) the working folder itself.

Read from `.git/config` directly: a hook runs on every tool call, and a `git` process per
event would cost more than the whole hook may take.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Final
from urllib.parse import quote, urlsplit

from phi.errors import InvalidInput

__all__ = [
    "PROJECT_ENV",
    "find_repository",
    "normalise_remote",
    "origin_url",
    "project_namespace",
    "resolve_namespace",
]

PROJECT_ENV: Final = "PHI_CAPTURE_PROJECT"
"""An environment variable naming the namespace outright (`--namespace` still wins)."""
PREFIX: Final = "code"
"""Every derived namespace starts `code:`, so a project's memories are easy to list."""
_MAX_CHARS: Final = 200
"""`phi.memory`'s longest namespace (`MAX_NAMESPACE_CHARS`), not imported: that would load
the memory engine on every tool call."""
_NAMESPACE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:%-]*")
"""`phi.memory`'s namespace rule, repeated for the same reason as `_MAX_CHARS`."""
_SCP_LIKE: Final = re.compile(r"^(?:(?P<user>[^@/]+)@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$")
_SECTION: Final = re.compile(r'^\s*\[\s*([^\s\]"]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_MAX_CONFIG_BYTES: Final = 1 << 20


def find_repository(start: Path) -> Path | None:
    """The nearest folder at or above `start` holding a `.git` (folder or worktree file)."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _config_path(root: Path) -> Path | None:
    """The `config` of the repository at `root`, following a worktree's or submodule's
    `.git` file (`gitdir: ...`) and a linked worktree's `commondir`."""
    dot_git = root / ".git"
    if dot_git.is_file():
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        if not text.startswith("gitdir:"):
            return None
        git_dir = (root / text.removeprefix("gitdir:").strip()).resolve()
        common = git_dir / "commondir"
        if common.is_file():
            git_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    else:
        git_dir = dot_git
    config = git_dir / "config"
    return config if config.is_file() else None


def origin_url(root: Path) -> str | None:
    """`remote.origin.url` of the repository at `root`, read from its config file."""
    try:
        config = _config_path(root)
        if config is None or config.stat().st_size > _MAX_CONFIG_BYTES:
            return None
        lines = config.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    in_origin = False
    for line in lines:
        section = _SECTION.match(line)
        if section:
            in_origin = section[1].lower() == "remote" and section[2] == "origin"
            continue
        key, sep, value = line.partition("=")
        if in_origin and sep and key.strip().lower() == "url":
            url = value.strip().strip('"')
            return url or None
    return None


def normalise_remote(url: str) -> tuple[str, str] | None:
    """`(host, path)` of a remote URL: host lower-cased, credentials and port dropped, the
    path without `.git`, slashes at its ends, or `~`; `None` for a local path or `file:`."""
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme.lower() == "file" or not parts.hostname:
            return None
        host, path = parts.hostname, parts.path
    else:
        scp = _SCP_LIKE.match(url)
        if scp is None or "/" in scp["host"]:
            return None
        host, path = scp["host"], scp["path"]
    path = path.strip("/").removesuffix(".git").strip("/").lstrip("~")
    if not path:
        return None
    return host.lower(), path


def _segment(text: str) -> str:
    # The namespace alphabet is `A-Za-z0-9._:%-`: everything else is percent-encoded, and
    # `:` too, since it separates the segments here.
    return quote(text, safe="").replace("~", "%7E").replace(":", "%3A")


def _path_namespace(folder: Path) -> str:
    digest = hashlib.sha256(os.fsencode(folder)).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]", "-", folder.name)[:40].strip("-.") or "root"
    return f"{PREFIX}:path:{name}-{digest}"


def project_namespace(cwd: str | Path) -> str:
    """The namespace of the project a session in `cwd` works on.

    `code:<host>:<owner>:<repo>` for a repository with an `origin` remote (its path's
    segments joined by `:`), else `code:path:<folder name>-<hash of its path>` for the
    repository's root, or for `cwd` itself outside any repository.
    """
    folder = Path(os.path.abspath(cwd))
    root = find_repository(folder)
    url = origin_url(root) if root else None
    remote = normalise_remote(url) if url else None
    if remote:
        host, path = remote
        name = ":".join([PREFIX, _segment(host), *(_segment(p) for p in path.split("/") if p)])
        if len(name) <= _MAX_CHARS:
            return name
        digest = hashlib.sha256(f"{host}/{path}".encode()).hexdigest()[:16]
        return f"{PREFIX}:{_segment(host)}:{digest}"
    return _path_namespace(root or folder)


def resolve_namespace(
    explicit: str | None, cwd: str | None, *, environ: dict[str, str] | None = None
) -> str:
    """Where an event goes: `explicit` (`--namespace`), else `$PHI_CAPTURE_PROJECT`, else
    the project of the event's `cwd` (this process's folder when the event names none).

    Raises:
        InvalidInput: `$PHI_CAPTURE_PROJECT` is not a namespace (every event would be set
            aside when stored, where nobody looks).
    """
    if explicit:
        return explicit
    named = (os.environ if environ is None else environ).get(PROJECT_ENV, "").strip()
    if named:
        if len(named) > _MAX_CHARS or not _NAMESPACE.fullmatch(named):
            raise InvalidInput(
                f"{PROJECT_ENV}={named!r} is not a namespace: use 1-{_MAX_CHARS} characters"
                " of A-Z a-z 0-9 . _ : % - starting with a letter or digit"
            )
        return named
    return project_namespace(cwd or os.getcwd())
