"""Typed tool outcomes that are not content.

A tool that declines to act by rule (a person outside the batch, a gated action in a batch
with strangers) returns `Refused`; the model sees `{"refused": "..."}`, and code tells a
refusal from content by its type, never by how a string begins. A call the model can fix
(a URI not in the batch, a block edit over its limit) raises pydantic-ai's `ModelRetry`
instead, so the model is asked again.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Refused"]


@dataclass(frozen=True, kw_only=True)
class Refused:
    """A tool declined to act: nothing was written, and retrying the same call will not help."""

    refused: str
    """Why, and what is allowed instead."""
