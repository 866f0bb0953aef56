"""One JSON schema for one decision: call one of the tools, or give the final answer.

The tiny local model cannot call tools natively, but grammar-constrained output always
matches a schema. So every choice the model has becomes a branch of one `anyOf`:
`{"tool": <name>, "arguments": <that tool's parameters>}` per tool, plus
`{"tool": "final_answer", "text": <string>}` when a text answer is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from pydantic_ai.tools import ToolDefinition

__all__ = ["FINAL_ANSWER", "MAX_STRING", "catalogue", "decision_schema", "example_call"]

FINAL_ANSWER: Final = "final_answer"
"""The pseudo-tool whose `text` is the run's answer."""

MAX_STRING: Final = 300
"""Longest string the grammar lets the model write. A tiny model at temperature 0 can fall
into a loop ("(100%) (100%) ...") until `max_tokens` cuts the JSON in half; a cap closes
the string instead, and 300 is a whole post."""

_FINAL_ANSWER_LINE: Final = f"- {FINAL_ANSWER}(text): Finish with this message as your answer."


def decision_schema(
    tools: Sequence[ToolDefinition], *, final_answer: bool, max_string: int = MAX_STRING
) -> dict[str, Any]:
    """The schema of one decision: one branch per tool, plus the final answer if allowed;
    free-text strings are capped at `max_string` characters.

    Each tool's `$defs` move to the root under a name prefixed by the tool's (their
    `$ref`s are rewritten), since a `$ref` points from the root of the whole document.
    """
    assert tools or final_answer, "a decision needs at least one choice"
    branches: list[dict[str, Any]] = []
    defs: dict[str, Any] = {}
    for tool in tools:
        arguments = dict(tool.parameters_json_schema)
        local_defs: dict[str, Any] = arguments.pop("$defs", None) or {}
        renames = {name: f"{tool.name}__{name}" for name in local_defs}
        defs.update(
            {
                renames[name]: _cap_strings(_rename_refs(schema, renames), max_string)
                for name, schema in local_defs.items()
            }
        )
        arguments = _cap_strings(_rename_refs(arguments, renames), max_string)
        branches.append(_object({"tool": {"const": tool.name}, "arguments": arguments}))
    if final_answer:
        text = {"type": "string", "maxLength": max_string}
        branches.append(_object({"tool": {"const": FINAL_ANSWER}, "text": text}))
    schema: dict[str, Any] = branches[0] if len(branches) == 1 else {"anyOf": branches}
    if defs:
        schema = {**schema, "$defs": defs}
    return schema


def catalogue(tools: Sequence[ToolDefinition], *, final_answer: bool) -> str:
    """The tools as the model reads them: `- name(arg, optional?): first docstring line`."""
    lines = [
        f"- {tool.name}({', '.join(_argument_names(tool))}): {_summary(tool)}" for tool in tools
    ]
    if final_answer:
        lines.append(_FINAL_ANSWER_LINE)
    return "\n".join(lines)


def example_call(tools: Sequence[ToolDefinition]) -> str:
    """A call of the first tool with placeholder values, showing the answer's shape."""
    if not tools:
        return f'{{"tool": "{FINAL_ANSWER}", "text": "..."}}'
    tool = tools[0]
    arguments = ", ".join(f'"{name.rstrip("?")}": "..."' for name in _argument_names(tool))
    return f'{{"tool": "{tool.name}", "arguments": {{{arguments}}}}}'


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _argument_names(tool: ToolDefinition) -> list[str]:
    properties: dict[str, Any] = tool.parameters_json_schema.get("properties") or {}
    required = set(tool.parameters_json_schema.get("required") or ())
    return [name if name in required else f"{name}?" for name in properties]


def _summary(tool: ToolDefinition) -> str:
    lines = [line.strip() for line in (tool.description or "").splitlines() if line.strip()]
    return lines[0] if lines else tool.name.replace("_", " ")


def _rename_refs(node: Any, renames: dict[str, str]) -> Any:
    if not renames:
        return node
    if isinstance(node, dict):
        renamed = {key: _rename_refs(value, renames) for key, value in node.items()}
        ref = renamed.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            renamed["$ref"] = "#/$defs/" + renames.get(name, name)
        return renamed
    if isinstance(node, list):
        return [_rename_refs(item, renames) for item in node]
    return node


def _cap_strings(node: Any, limit: int) -> Any:
    """`node` with `maxLength: limit` on every free-text string (not enums, consts, or
    strings that have their own limit)."""
    if isinstance(node, list):
        return [_cap_strings(item, limit) for item in node]
    if not isinstance(node, dict):
        return node
    capped = {key: _cap_strings(value, limit) for key, value in node.items()}
    free = not ({"enum", "const", "maxLength", "format", "pattern"} & capped.keys())
    if capped.get("type") == "string" and free:
        capped["maxLength"] = limit
    return capped
