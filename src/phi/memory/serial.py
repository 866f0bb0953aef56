"""One typed JSON serialisation of memory's values, for the CLI, MCP and the web API.

`to_json(value)` runs pydantic's serializer (a cached `TypeAdapter`) over the memory's
frozen dataclasses, so `phi memory ... --json`, the MCP tools and the HTTP routes (which
return the dataclasses themselves) print the same shapes from one definition: the
dataclass fields, plus the few annotations here.

Timestamps are ISO 8601 with a numeric offset (`2026-11-23T12:00:00+00:00`), the form
`datetime.isoformat` writes and `datetime.fromisoformat` reads back on any Python 3: the
CLI and MCP always printed it, while the web API (through pydantic's default) printed
`...Z`. Both are RFC 3339; one form everywhere lets a client compare them as strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from functools import cache
from typing import Annotated, Any

from pydantic import PlainSerializer, TypeAdapter, WithJsonSchema
from pydantic.json_schema import JsonSchemaValue

__all__ = ["Instant", "spread", "spread_schema", "to_json"]

Instant = Annotated[
    datetime,
    PlainSerializer(datetime.isoformat, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}, mode="serialization"),
]
"""A timezone-aware moment, serialised as `datetime.isoformat` (`+00:00`, never `Z`)."""


@cache
def _adapter(kind: type[Any]) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def to_json(value: object) -> Any:
    """`value` (a memory dataclass, or a list of them) as JSON-ready Python data."""
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    kind: Any = type(value)  # a class is hashable; typeshed's `type[object]` is not seen so
    return _adapter(kind).dump_python(value, mode="json")


def spread(data: dict[str, Any], field: str, keep: tuple[str, ...] | None = None) -> dict[str, Any]:
    """`data` (a serialised dataclass) with the object under `field` spread into it: all
    its keys, or only `keep`, first. For values whose JSON is flat by tradition (a recalled
    row is a row plus its score, not `{"row": ...}`)."""
    inner: Mapping[str, Any] = data.pop(field)
    return {**{k: v for k, v in inner.items() if keep is None or k in keep}, **data}


def spread_schema(
    core_schema: Any, handler: Any, field: str, keep: tuple[str, ...] | None = None
) -> JsonSchemaValue:
    """The JSON schema of what `spread` makes, for a dataclass's
    `__get_pydantic_json_schema__` (so the OpenAPI document describes the flat shape)."""
    if handler.mode != "serialization":
        return dict(handler(core_schema))
    # The same schema without the flattening serializer (and without its ref and hooks,
    # which would lead back here).
    plain = {k: v for k, v in core_schema.items() if k not in ("serialization", "metadata", "ref")}
    schema = handler.resolve_ref_schema(handler(plain))
    inner = handler.resolve_ref_schema(schema["properties"][field])
    taken = {k: v for k, v in inner["properties"].items() if keep is None or k in keep}
    others = {k: v for k, v in schema["properties"].items() if k != field}
    required = [k for k in inner.get("required", []) if k in taken]
    required += [k for k in schema.get("required", []) if k != field]
    return {
        "type": "object",
        "title": schema.get("title"),
        "properties": {**taken, **others},
        "required": required,
    }
