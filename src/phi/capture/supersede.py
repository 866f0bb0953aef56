"""What a captured tool call sets, and whether a later one reverses it.

A coding session changes its mind: a line written on Monday is rewritten on Tuesday, a
timeout set to 30 is set to 60, a dependency pinned to 0.27 is pinned to 0.28. Memory that
injects Monday's row as current misleads the next session, so a capture that reverses an
earlier one supersedes it (`phi.capture.hooks` does the writing; this module only decides).

A tool call `Claims` three things, all read from its input (no file is opened):
- a file region: the lines an edit wrote (`added`) and the lines it took out (`removed`);
  a later edit reverses an earlier one when it takes out a line the earlier one wrote, and
  a whole-file `Write` reverses it when the new content no longer has all of its lines;
- settings: a key of a configuration file (`set:<path>:<key>`), or of a tool's own
  configuration (`git config`, `npm config set`), with the value it was given;
- dependencies (`dep:<ecosystem>:<name>`), from a requirements, `pyproject.toml` or
  `package.json` edit, or an install command, with the version spec.
The same key given a different value later is a reversal. Lines are kept as short
digests, so a row's metadata stays small and never holds the file's text twice.

A session also says what it did, in words: "Pinned httpx to 0.27.2: 0.28 dropped proxy
auth". Once the pin is reversed that sentence is as stale as the pin, and no claim names
it. So a change also keeps digests of the terms it wrote (`Claims.terms`), and `restates`
tells whether a text of the reversed change's session repeats what the reversed change
wrote and the reversal did not (the old value: a version, a number, a name), about the same
subject or with more of the old change's words.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["Claims", "claims_from_meta", "claims_of", "restates", "reversal", "term_digests"]

MIN_LINE_CHARS: Final = 6
"""Shorter lines (`}`, `else:`, `pass`) recur everywhere: two edits sharing one say nothing
about touching the same region."""
MAX_LINES: Final = 2000
"""Lines of one change kept as digests: a bound on a row's metadata for a generated file."""
MAX_TERMS: Final = 300
"""Terms of one change kept as digests (the first ones written): the same bound for words."""
RESTATING_WORDS: Final = 3
"""Old words (none of them a value) a text must repeat to restate a reversed change: one or
two ("timeout", "retry") recur in any text about the same code."""

_TERM: Final = re.compile(r"[^\W_](?:[\w.\-]*[^\W_])?")
"""A word, a version (`0.27.2`), a hyphenated or dotted name (`date-fns-tz`, `a.b`): `==`,
`=`, `/`, `@`, quotes and spaces separate terms."""
_VALUE_MARK: Final = re.compile(r"\d|[^\W_][.\-_][^\W_]")
_FUNCTION_WORDS: Final = frozenset({
    "the", "and", "for", "from", "with", "that", "this", "these", "those", "into", "onto",
    "over", "under", "than", "then", "when", "what", "which", "while", "where", "why", "how",
    "who", "whom", "are", "was", "were", "been", "being", "has", "have", "had", "does", "did",
    "not", "but", "nor", "yet", "its", "our", "ours", "your", "you", "they", "them", "their",
    "there", "here", "also", "just", "only", "very", "now", "new", "old", "all", "any", "each",
    "every", "some", "more", "most", "less", "least", "can", "could", "would", "should",
    "will", "may", "might", "must", "shall", "let", "lets", "use", "used", "using", "via",
    "per", "out", "off", "too", "again", "still", "once", "about", "above", "after", "before",
    "because", "between", "both", "during", "other", "same", "such", "own",
})  # fmt: skip
"""English words that say nothing about what a change set (they would match any text)."""

_CONFIG_SUFFIXES: Final = frozenset(
    {".toml", ".ini", ".cfg", ".conf", ".env", ".yaml", ".yml", ".json", ".properties"}
)
_SETTING: Final = re.compile(
    r"""^\s*(?:export\s+)?["']?(?P<key>[A-Za-z_][\w.\-]*)["']?\s*[:=]\s*(?P<value>.+?)\s*,?\s*$"""
)
_REQUIREMENT: Final = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._\-]*)\s*(?:\[[^\]]*\])?\s*"
    r"(?P<spec>(?:===|==|>=|<=|~=|!=|>|<)[^;]*)?\s*(?:;.*)?$"
)
"""A PEP 508 requirement without a URL: name, extras, version spec, environment marker."""
_QUOTED: Final = re.compile(r""""([^"]*)"|'([^']*)'""")
_JS_VERSION: Final = re.compile(r"^(?:[\^~<>=]*\d|\*|latest|next|workspace:|npm:|file:|git)")
_PY_INSTALLERS: Final = (("pip", "install"), ("pip3", "install"), ("uv", "add"), ("poetry", "add"))
_JS_INSTALLERS: Final = frozenset({"npm", "pnpm", "yarn", "bun"})
_VALUE_FLAGS: Final = frozenset(
    {"-r", "-c", "-e", "-i", "--requirement", "--constraint", "--editable", "--index-url",
     "--extra-index-url", "--group", "-G", "--optional", "--file", "--registry"}
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Claims:
    """What one tool call sets."""

    path: str | None = None
    """The file it changes, normalised; `None` for a command."""
    added: frozenset[str] = frozenset()
    """Digests of the lines it wrote."""
    removed: frozenset[str] | None = frozenset()
    """Digests of the lines it took out; `None` when it rewrote the whole file."""
    settings: Mapping[str, str] = field(default_factory=dict)
    """Each setting or dependency key it set, with the value it set it to."""
    terms: frozenset[str] = frozenset()
    """Digests of the terms it wrote (`term_digests`): what a text restating it repeats."""

    def __bool__(self) -> bool:
        return bool(self.added or self.removed is None or self.settings)

    def as_meta(self) -> dict[str, Any]:
        """The claims as a row's metadata (JSON), read back by `claims_from_meta`."""
        meta: dict[str, Any] = {"settings": dict(self.settings)}
        if self.terms:
            meta["terms"] = sorted(self.terms)
        if self.path is not None:
            meta["path"] = self.path
            meta["added"] = sorted(self.added)
            meta["removed"] = None if self.removed is None else sorted(self.removed)
        return meta


def claims_from_meta(meta: object) -> Claims | None:
    """The claims a row's `meta["claims"]` holds, or `None` if it holds none (or not these)."""
    if not isinstance(meta, dict):
        return None
    settings = meta.get("settings")
    path = meta.get("path")
    added = meta.get("added", [])
    removed = meta.get("removed", [])
    terms = meta.get("terms", [])  # absent in rows captured before terms were kept
    if not isinstance(settings, dict) or not isinstance(added, list):
        return None
    if not isinstance(terms, list):
        return None
    if path is not None and not isinstance(path, str):
        return None
    if removed is not None and not isinstance(removed, list):
        return None
    return Claims(
        path=path,
        added=frozenset(str(a) for a in added),
        removed=None if removed is None else frozenset(str(r) for r in removed),
        settings={str(k): str(v) for k, v in settings.items()},
        terms=frozenset(str(t) for t in terms),
    )


def _is_value(term: str) -> bool:
    """A version, a number, a dotted or hyphenated name: what one change sets and another
    changes, and what ordinary prose does not say by chance."""
    return bool(_VALUE_MARK.search(term))


def _terms(text: str) -> list[str]:
    """The terms of `text` that can say what a change set, lower-cased, in order, once each."""
    found = (t.lower().strip(".-") for t in _TERM.findall(text))
    kept = (
        t
        for t in found
        if (len(t) >= 3 or any(c.isdigit() for c in t)) and t not in _FUNCTION_WORDS
    )
    return list(dict.fromkeys(kept))


def _term_digest(term: str) -> str:
    # The kind of term is kept outside the digest: `restates` weighs a value above a word.
    return ("v" if _is_value(term) else "w") + _digest("term\0" + term)


def term_digests(text: str) -> frozenset[str]:
    """Digests of `text`'s terms, as `Claims.terms` keeps them (a text to test with
    `restates` is digested the same way)."""
    return frozenset(_term_digest(t) for t in _terms(text)[:MAX_TERMS])


def restates(text_terms: frozenset[str], *, earlier: Claims, later: Claims) -> bool:
    """Whether a text (its `term_digests`) restates `earlier`, which `later` reversed.

    The old terms are those `earlier` wrote and `later` did not write again ("0.27.2" when
    a pin moves to "0.28.1"); the subject, those both wrote ("httpx"). A text restates the
    reversed change when it repeats an old value with the subject or another old term, or
    `RESTATING_WORDS` old words; a text that repeats only the subject, or one old word, is
    about the same thing without saying the old choice.
    """
    old = earlier.terms - later.terms
    said_old = old & text_terms
    if any(t.startswith("v") for t in said_old):
        return len(said_old) >= 2 or bool(earlier.terms & later.terms & text_terms)
    return len(said_old) >= RESTATING_WORDS


def reversal(later: Claims, earlier: Claims) -> str | None:
    """Why `later` reverses `earlier`, in a few words, or `None` when it does not."""
    for key, value in later.settings.items():
        before = earlier.settings.get(key)
        if before is not None and before != value:
            return f"{key} set to {value!r} (was {before!r})"
    if later.path is None or later.path != earlier.path or not earlier.added:
        return None
    if later.removed is None:
        gone = earlier.added - later.added
        return f"{later.path} rewritten without lines the earlier change wrote" if gone else None
    if earlier.added & later.removed:
        return f"the same region of {later.path} edited again"
    return None


def claims_of(tool: str, tool_input: Mapping[str, Any]) -> Claims:
    """What the call of `tool` with `tool_input` sets (empty claims when nothing is known)."""
    path = tool_input.get("file_path", tool_input.get("notebook_path"))
    if tool == "Bash" and isinstance(tool_input.get("command"), str):
        command = tool_input["command"]
        settings = _command_settings(command)
        # Only a command that sets something can be reversed: only its words are kept.
        return Claims(settings=settings, terms=term_digests(command) if settings else frozenset())
    if not isinstance(path, str) or not path.strip():
        return Claims()
    path = posixpath.normpath(path)
    if tool == "NotebookEdit":
        cell = tool_input.get("cell_id")
        source = tool_input.get("new_source")
        if isinstance(cell, str) and isinstance(source, str):
            return Claims(
                settings={f"cell:{path}:{cell}": _digest(source)}, terms=term_digests(source)
            )
        return Claims()
    pairs = _edit_pairs(tool, tool_input)
    if pairs is None:
        return Claims()
    before = [line for old, _ in pairs for line in old.splitlines()]
    after = [line for _, new in pairs for line in new.splitlines()]
    # Compared without indentation: re-indenting a block is not writing new lines.
    had, has = {line.strip() for line in before}, {line.strip() for line in after}
    written = [line for line in after if line.strip() not in had]
    taken_out = [line for line in before if line.strip() not in has]
    return Claims(
        path=path,
        added=_digests(written),
        removed=None if tool == "Write" else _digests(taken_out),
        settings=_file_settings(path, written),
        terms=term_digests("\n".join(written)),
    )


def _edit_pairs(tool: str, tool_input: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    if tool == "Write" and isinstance(tool_input.get("content"), str):
        return [("", tool_input["content"])]
    if tool == "Edit":
        old, new = tool_input.get("old_string"), tool_input.get("new_string")
        return [(old, new)] if isinstance(old, str) and isinstance(new, str) else None
    if tool == "MultiEdit" and isinstance(tool_input.get("edits"), list):
        return [
            (e["old_string"], e["new_string"])
            for e in tool_input["edits"]
            if isinstance(e, dict)
            and isinstance(e.get("old_string"), str)
            and isinstance(e.get("new_string"), str)
        ]
    return None


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def _digests(lines: Iterable[str]) -> frozenset[str]:
    kept = [line.strip() for line in lines if len(line.strip()) >= MIN_LINE_CHARS]
    return frozenset(_digest(line) for line in kept[:MAX_LINES])


def _file_settings(path: str, written: list[str]) -> dict[str, str]:
    name = posixpath.basename(path)
    suffix = posixpath.splitext(name)[1]
    if name.startswith("requirements") and suffix in (".txt", ".in"):
        return dict(_requirement(line.split(" #")[0]) for line in written if _is_requirement(line))
    if not (suffix in _CONFIG_SUFFIXES or name.startswith(".env")):
        return {}
    found: dict[str, str] = {}
    for line in written:
        text = line.strip()
        if text.startswith(("#", "//", "[")):
            continue
        pyproject = name == "pyproject.toml"
        setting = None if pyproject and text.startswith(("'", '"')) else _SETTING.match(line)
        if pyproject and (setting is None or setting["value"].startswith("[")):
            # A dependency list's items, one a line or inline: quoted requirements.
            quoted = [a or b for a, b in _QUOTED.findall(setting["value"] if setting else text)]
            found.update(_requirement(q) for q in quoted if _REQUIREMENT.match(q.strip()))
            continue
        if setting is None or setting["value"] in ("{", "[", "[{"):
            continue
        key, value = setting["key"], setting["value"].strip().strip("\"'")
        if name == "package.json" and _JS_VERSION.match(value):
            found[f"dep:js:{key}"] = value
        else:
            found[f"set:{path}:{key}"] = value
    return found


def _is_requirement(line: str) -> bool:
    text = line.split(" #")[0].strip()
    return bool(text) and not text.startswith(("#", "-")) and bool(_REQUIREMENT.match(text))


def _requirement(text: str) -> tuple[str, str]:
    """`(key, spec)` of one requirement that `_REQUIREMENT` matches."""
    found = _REQUIREMENT.match(text.strip())
    assert found is not None
    spec = (found["spec"] or "*").replace(" ", "")
    return f"dep:py:{_py_name(found['name'])}", spec


def _py_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _command_settings(command: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in re.split(r"&&|\|\||;|\||\n", command):
        try:
            words = shlex.split(part)
        except ValueError:
            continue  # an unbalanced quote: say nothing rather than guess
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # `ENV=x cmd ...`
        found.update(_one_command(words))
    return found


def _one_command(words: list[str]) -> dict[str, str]:
    if len(words) < 2:
        return {}
    head = (words[0], words[1])
    if head == ("git", "config"):
        args = [w for w in words[2:] if not w.startswith("-")]
        flags = [w for w in words[2:] if w.startswith("-")]
        if len(args) == 2 and not any(f.startswith(("--get", "--unset", "-l")) for f in flags):
            return {f"set:git:{args[0]}": args[1]}
        return {}
    if words[0] in _JS_INSTALLERS and words[1:3] == ["config", "set"]:
        rest = words[3:]
        if len(rest) == 1 and "=" in rest[0]:
            rest = rest[0].split("=", 1)
        return {f"set:npm:{rest[0]}": rest[1]} if len(rest) == 2 else {}
    if words[0] == "uv" and words[1:3] == ["pip", "install"]:
        return _packages(words[3:], "py")
    if head in _PY_INSTALLERS:
        return _packages(words[2:], "py")
    if words[0] in _JS_INSTALLERS and words[1] in ("install", "i", "add"):
        return _packages(words[2:], "js")
    if head in (("cargo", "add"), ("go", "get")):
        return _packages(words[2:], "rs" if words[0] == "cargo" else "go")
    return {}


def _packages(args: list[str], ecosystem: str) -> dict[str, str]:
    found: dict[str, str] = {}
    skip = False
    for arg in args:
        if skip or arg.startswith("-"):
            skip = not skip and arg in _VALUE_FLAGS
            continue
        if arg.startswith((".", "/", "~")) or "://" in arg:
            continue  # a path or a URL, not a name
        if ecosystem == "py" and "@" not in arg:  # poetry spells a pin `name@^1.2`
            if _REQUIREMENT.match(arg):
                found.update([_requirement(arg)])
            continue
        at = arg.rfind("@")  # npm scopes start with one: `@types/node@20`
        name, spec = (arg[:at], arg[at + 1 :]) if at > 0 else (arg, "*")
        if ecosystem == "py":
            name = _py_name(name.split("[")[0])
        found[f"dep:{ecosystem}:{name}"] = spec.replace(" ", "")
    return found
