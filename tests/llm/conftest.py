"""Fixtures of the language-model tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from phi.llm import LocalLlama, local_llama


@pytest.fixture(scope="session")
def smollm2() -> Iterator[LocalLlama]:
    """The process's real SmolLM2 (what `resolve_model(None)` uses), freed after the run."""
    llama = local_llama()
    yield llama
    llama.close()
