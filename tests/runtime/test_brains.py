"""Which brains a runtime starts with, and what the banner says of memory's passes."""

from __future__ import annotations

import pytest

from phi.config import Settings
from phi.llm import GrammarToolModel, SmallModelSampling, resolve_model
from phi.runtime.app import MEMORY_PASSES_OFF, choose_brains


def _settings(**values: str | None) -> Settings:
    return Settings.model_validate(values)


def test_memory_passes_are_off_by_default_on_the_tiny_model() -> None:
    brains = choose_brains(_settings())
    assert brains.tiny and not brains.learns
    assert brains.memory_line() == MEMORY_PASSES_OFF


def test_asking_for_the_local_memory_model_turns_the_passes_on() -> None:
    brains = choose_brains(_settings(memory_model="local"))
    assert brains.learns
    assert brains.memory_line() is None  # the same brain as the agent's: nothing more to say


@pytest.mark.parametrize(
    ("values", "line"),
    [
        ({"model": "test"}, None),
        ({"memory_model": "test"}, "memory passes: brain: test"),
        ({"model": "test", "memory_model": "local"}, "memory passes: brain: SmolLM2"),
    ],
)
def test_a_real_model_learns(values: dict[str, str], line: str | None) -> None:
    brains = choose_brains(_settings(**values))
    assert brains.learns
    said = brains.memory_line()
    assert said == line if line is None else (said or "").startswith(line)


def test_the_local_model_is_tuned_against_echoes_and_loops() -> None:
    model = resolve_model(None)
    assert isinstance(model, GrammarToolModel)
    assert model.sampling == SmallModelSampling() and model.max_text == 140
