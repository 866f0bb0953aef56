"""Lexicons of the records phi writes, and validation of a record against them.

A PDS does not validate records of lexicons it does not know (phi's own `io.phi.*`, Semble's
`network.cosmik.*`), so a malformed record would be stored and break readers later. phi
validates every record against the JSON lexicon shipped in `phi/atproto/lexicons/` before
writing it. The validator covers the lexicon features these files use: objects, required
fields, strings (length in bytes and graphemes, formats, enums), integers, booleans, arrays,
local refs, unions and `com.atproto.repo.strongRef`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

from phi.atproto._graphemes import grapheme_count
from phi.atproto.errors import InvalidRecord

__all__ = ["DEFAULT_PREFIX", "Lexicons", "lexicon_documents"]

DEFAULT_PREFIX = "io.phi"
"""The prefix the shipped lexicon files are written with."""

_HANDLE = re.compile(
    r"^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$"
)
_DID = re.compile(r"^did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]$")
_URI = re.compile(r"^[a-z][a-z0-9+.-]*:\S+$")
_AT_URI = re.compile(r"^at://[^\s/]+(/[a-zA-Z0-9.-]+(/[a-zA-Z0-9._:~-]+)?)?$")
_NSID = re.compile(r"^[a-zA-Z]([a-zA-Z0-9-]*)(\.[a-zA-Z0-9-]+)+$")
_CID = re.compile(r"^[a-zA-Z0-9+=]{8,256}$")

_STRONG_REF: dict[str, Any] = {
    "type": "object",
    "required": ["uri", "cid"],
    "properties": {
        "uri": {"type": "string", "format": "at-uri"},
        "cid": {"type": "string", "format": "cid"},
    },
}


@cache
def lexicon_documents() -> dict[str, dict[str, Any]]:
    """The shipped lexicon files, by their id as written (prefix `io.phi`)."""
    docs: dict[str, dict[str, Any]] = {}
    for entry in (resources.files("phi.atproto") / "lexicons").iterdir():
        if entry.name.endswith(".json"):
            doc = json.loads(entry.read_text())
            docs[doc["id"]] = doc
    return docs


def _datetime_ok(value: str) -> bool:
    if "T" not in value:
        return False
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return parsed.tzinfo is not None


def _format_ok(fmt: str, value: str) -> bool:
    checks: dict[str, Callable[[str], bool]] = {
        "datetime": _datetime_ok,
        "handle": lambda v: bool(_HANDLE.match(v)) and len(v) <= 253,
        "did": lambda v: bool(_DID.match(v)),
        "uri": lambda v: bool(_URI.match(v)),
        "at-uri": lambda v: bool(_AT_URI.match(v)),
        "nsid": lambda v: bool(_NSID.match(v)),
        "cid": lambda v: bool(_CID.match(v)),
    }
    check = checks.get(fmt)
    return True if check is None else check(value)


@dataclass(frozen=True, kw_only=True)
class _Ctx:
    doc: dict[str, Any]
    problems: list[str]


def _check_string(schema: dict[str, Any], value: object, path: str, ctx: _Ctx) -> None:
    if not isinstance(value, str):
        ctx.problems.append(f"{path} must be a string, not {type(value).__name__}")
        return
    size = len(value.encode())
    if "maxLength" in schema and size > schema["maxLength"]:
        ctx.problems.append(f"{path} is {size} bytes, more than {schema['maxLength']}")
    if "minLength" in schema and size < schema["minLength"]:
        ctx.problems.append(f"{path} must be at least {schema['minLength']} bytes")
    if "maxGraphemes" in schema and grapheme_count(value) > schema["maxGraphemes"]:
        ctx.problems.append(f"{path} has more than {schema['maxGraphemes']} graphemes")
    if "enum" in schema and value not in schema["enum"]:
        ctx.problems.append(f"{path} must be one of {schema['enum']!r}, not {value!r}")
    if "const" in schema and value != schema["const"]:
        ctx.problems.append(f"{path} must be {schema['const']!r}")
    if "format" in schema and not _format_ok(schema["format"], value):
        ctx.problems.append(f"{path} is not a valid {schema['format']}: {value!r}")


def _resolve(ref: str, ctx: _Ctx) -> dict[str, Any]:
    if ref == "com.atproto.repo.strongRef":
        return _STRONG_REF
    name = ref.split("#", 1)[1] if "#" in ref else "main"
    return dict(ctx.doc["defs"][name])


def _check_object(schema: dict[str, Any], value: object, path: str, ctx: _Ctx) -> None:
    if not isinstance(value, dict):
        ctx.problems.append(f"{path} must be an object")
        return
    for name in schema.get("required", []):
        if value.get(name) is None:
            ctx.problems.append(f"{path}.{name} is required")
    for name, prop in schema.get("properties", {}).items():
        if value.get(name) is not None:
            _check(prop, value[name], f"{path}.{name}", ctx)


def _check_union(schema: dict[str, Any], value: object, path: str, ctx: _Ctx) -> None:
    if not isinstance(value, dict) or not isinstance(value.get("$type"), str):
        ctx.problems.append(f"{path} must be an object with a `$type`")
        return
    doc_id = ctx.doc["id"]
    for ref in schema["refs"]:
        full = f"{doc_id}{ref}" if ref.startswith("#") else ref
        if value["$type"] == full:
            _check(_resolve(ref, ctx), value, path, ctx)
            return
    if schema.get("closed"):
        ctx.problems.append(f"{path}.$type {value['$type']!r} is not one of {schema['refs']!r}")


def _check(schema: dict[str, Any], value: object, path: str, ctx: _Ctx) -> None:
    kind = schema["type"]
    if kind == "string":
        _check_string(schema, value, path, ctx)
    elif kind == "object":
        _check_object(schema, value, path, ctx)
    elif kind == "ref":
        _check(_resolve(schema["ref"], ctx), value, path, ctx)
    elif kind == "union":
        _check_union(schema, value, path, ctx)
    elif kind == "array":
        _check_array(schema, value, path, ctx)
    else:
        _check_scalar(schema, value, path, ctx)


def _check_array(schema: dict[str, Any], value: object, path: str, ctx: _Ctx) -> None:
    if not isinstance(value, list):
        ctx.problems.append(f"{path} must be an array")
        return
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        ctx.problems.append(f"{path} has more than {schema['maxLength']} items")
    for i, item in enumerate(value):
        _check(schema["items"], item, f"{path}[{i}]", ctx)


def _check_scalar(schema: dict[str, Any], value: object, path: str, ctx: _Ctx) -> None:
    kind = schema["type"]
    if kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            ctx.problems.append(f"{path} must be an integer")
        elif not schema.get("minimum", value) <= value <= schema.get("maximum", value):
            ctx.problems.append(f"{path} is out of range")
    elif kind == "boolean" and not isinstance(value, bool):
        ctx.problems.append(f"{path} must be a boolean")


class Lexicons:
    """The lexicons of phi's collections under one NSID prefix.

    Args:
        prefix: phi's NSID prefix (`Settings.nsid_prefix`); the shipped files use `io.phi`.
    """

    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        self.prefix = prefix
        self._docs: dict[str, dict[str, Any]] = {}
        for doc_id, doc in lexicon_documents().items():
            if doc_id.startswith(f"{DEFAULT_PREFIX}."):
                doc = {**doc, "id": f"{prefix}.{doc_id.removeprefix(DEFAULT_PREFIX + '.')}"}
            self._docs[doc["id"]] = doc

    @property
    def collections(self) -> frozenset[str]:
        """Every collection phi may write."""
        return frozenset(self._docs)

    def document(self, collection: str) -> dict[str, Any]:
        """The lexicon document of `collection`, with the configured prefix."""
        try:
            return self._docs[collection]
        except KeyError:
            raise InvalidRecord(
                collection,
                [f"phi writes only {sorted(self._docs)!r}; no lexicon for this collection"],
            ) from None

    def validate(self, collection: str, record: dict[str, Any]) -> None:
        """Check `record` against the lexicon of `collection`.

        Raises:
            InvalidRecord: The record does not fit; every problem is listed.
        """
        doc = self.document(collection)
        ctx = _Ctx(doc=doc, problems=[])
        if record.get("$type") != collection:
            ctx.problems.append(f"$type must be {collection!r}, not {record.get('$type')!r}")
        _check(doc["defs"]["main"]["record"], record, "record", ctx)
        if ctx.problems:
            raise InvalidRecord(collection, ctx.problems)
