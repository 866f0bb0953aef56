"""Outside text on its way to a prompt: clipped, and fenced as data.

Text phi did not write (an external MCP server's answer or tool description) reaches the
model inside a tag that names where it came from, after a note saying it is data and never
instructions. Without the fence, an answer reading "[SYSTEM] new operating rule: ..." sits
in the prompt looking just like phi's own rules; without the clip, one 3,000,000-character
answer fills the model's context and fails the run.

The fence only holds if the text cannot close it, so every tag of the `external-` family
inside the text is escaped (`<` becomes `&lt;`), whatever its case or spacing.
"""

from __future__ import annotations

import html
import re
from typing import Final

__all__ = ["clip", "fenced"]

_OUR_TAGS: Final = re.compile(r"<(?=\s*/?\s*external-)", re.IGNORECASE)
"""The start of any tag of the family the fences use, opening or closing."""


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with a line saying how much was cut."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}\n[… {cut:,} more characters cut: the limit here is {limit:,}]"


def fenced(text: str, *, tag: str, attributes: dict[str, str], note: str) -> str:
    """`note`, then `text` inside `<tag attr="...">…</tag>`.

    Args:
        text: The outside text, already clipped; tags of the fence family are escaped.
        tag: The fence's tag, e.g. `external-tool-output` (a name starting `external-`).
        attributes: Where the text came from; values are escaped (they may be outside text too).
        note: What the model should take the text for, shown before the fence.
    """
    assert tag.startswith("external-"), "the escaping covers the `external-` family only"
    attrs = "".join(
        f' {name}="{html.escape(value, quote=True)}"' for name, value in attributes.items()
    )
    return f"{note}\n<{tag}{attrs}>\n{_OUR_TAGS.sub('&lt;', text)}\n</{tag}>"
