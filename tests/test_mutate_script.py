"""`scripts/mutate`'s bookkeeping: which commit each module was verified at, and what
`--changed` mutates against it. mutmut itself is not run here (`run_module` is replaced by a
recorder): these pin the choice of mutants, which is what keeps the CI gate honest."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "_mutate.py"


@pytest.fixture
def mutate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script, pointed at a scratch repository with two critical modules."""
    spec = importlib.util.spec_from_file_location("phi_mutate_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "CRITICAL_DIR", tmp_path / "tests" / "mutation")
    monkeypatch.setattr(module, "VERIFIED_FILE", tmp_path / "tests" / "mutation" / "verified")
    (tmp_path / "src").mkdir()
    (tmp_path / "tests" / "mutation").mkdir(parents=True)
    for name in ("a", "b"):
        (tmp_path / "src" / f"{name}.py").write_text("def f():\n    return 1\n")
        (tmp_path / "tests" / f"test_{name}.py").write_text("def test_f():\n    assert True\n")
    (tmp_path / "tests" / "mutation" / "area.toml").write_text(
        '[[module]]\npath = "src/a.py"\ntests = ["tests/test_a.py"]\n'
        '[[module]]\npath = "src/b.py"\ntests = ["tests/test_b.py::test_f"]\n'
    )
    _git(tmp_path, "init", "-q")
    _commit(tmp_path, "first")
    return module


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _commit(root: Path, message: str) -> str:
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", message)
    return _git(root, "rev-parse", "HEAD").strip()


def _calls(mutate: ModuleType, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, object]]:
    calls: list[tuple[str, object]] = []

    def run_module(module: object, *, workers: int, lines: set[int] | None = None) -> object:
        calls.append((module.path, lines))  # type: ignore[attr-defined]
        return mutate.Tally(module=module.path)  # type: ignore[attr-defined]

    monkeypatch.setattr(mutate, "run_module", run_module)
    return calls


def test_a_module_is_recorded_only_when_it_met_the_goal_on_committed_code(
    mutate: ModuleType, tmp_path: Path
) -> None:
    head = _git(tmp_path, "rev-parse", "HEAD").strip()
    (tmp_path / "tests" / "test_b.py").write_text("def test_f():\n    pass\n")  # uncommitted
    a, b = mutate.critical_set()
    assert (mutate.clean_commit(a), mutate.clean_commit(b)) == (head, None)
    tallies = [
        mutate.Tally(module="src/a.py", made=10, killed=9, survived=1, commit=head),
        mutate.Tally(module="src/b.py", made=10, killed=10, commit=None),
    ]
    refused = mutate.record_verified(tallies, mutate.critical_set(), threshold=0.9)
    assert mutate.verified_commits() == {"src/a.py": head}
    assert refused == ["src/b.py: uncommitted"]

    tallies[0].killed, tallies[0].survived = 8, 2
    refused = mutate.record_verified(tallies[:1], mutate.critical_set(), threshold=0.9)
    assert refused == ["src/a.py: below the goal"]
    assert mutate.verified_commits() == {"src/a.py": head}, "a failed run keeps the old record"


def test_a_run_is_recorded_at_the_commit_it_mutated_not_at_a_later_head(
    mutate: ModuleType, tmp_path: Path
) -> None:
    """Code committed while a run goes on was not mutated by it: the record names the
    commit the run began on."""
    began = _git(tmp_path, "rev-parse", "HEAD").strip()
    (a,) = [m for m in mutate.critical_set() if m.path == "src/a.py"]
    tally = mutate.Tally(module="src/a.py", made=4, killed=4, commit=mutate.clean_commit(a))
    (tmp_path / "src" / "a.py").write_text("def f():\n    return 5\n")
    later = _commit(tmp_path, "a changes during the run")
    assert later != began
    assert mutate.record_verified([tally], mutate.critical_set(), threshold=0.9) == []
    assert mutate.verified_commits() == {"src/a.py": began}


def test_changed_compares_each_module_with_its_own_verified_commit(
    mutate: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _git(tmp_path, "rev-parse", "HEAD").strip()
    (tmp_path / "src" / "a.py").write_text("def f():\n    return 2\n")
    second = _commit(tmp_path, "a changes")
    mutate.VERIFIED_FILE.write_text(f"src/a.py {second}\nsrc/b.py {first}\n")
    calls = _calls(mutate, monkeypatch)
    assert mutate.run_changed(mutate.critical_set(), given=None, workers=1) == []
    assert calls == [], "a change verified since is not mutated again"

    (tmp_path / "src" / "b.py").write_text("def f():\n    x = 3\n    return x\n")
    _commit(tmp_path, "b changes")
    mutate.run_changed(mutate.critical_set(), given=None, workers=1)
    assert calls == [("src/b.py", {2, 3})], "only b's changed lines, against b's own commit"


def test_a_changed_guarding_test_makes_its_module_mutated_whole(
    mutate: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = _git(tmp_path, "rev-parse", "HEAD").strip()
    mutate.VERIFIED_FILE.write_text(f"src/b.py {first}\n")
    (tmp_path / "tests" / "test_b.py").write_text("def test_f():\n    pass\n")  # weakened
    (tmp_path / "src" / "a.py").write_text("def f():\n    return 3\n")
    _commit(tmp_path, "weaken b's test")
    calls = _calls(mutate, monkeypatch)
    mutate.run_changed(mutate.critical_set(), given=None, workers=1)
    assert calls == [("src/b.py", None)]
    # a was never verified and there is no origin/main: named, not mutated whole in CI.
    assert "not yet verified, skipped: src/a.py" in capsys.readouterr().out


def test_the_old_single_commit_format_stands_for_every_module(
    mutate: ModuleType, tmp_path: Path
) -> None:
    first = _git(tmp_path, "rev-parse", "HEAD").strip()
    mutate.VERIFIED_FILE.write_text(f"{first}\n# a comment\nsrc/b.py {first}\n")
    assert mutate.verified_commits() == {"*": first, "src/b.py": first}
    assert mutate.base_commit(None, module="src/a.py") == first


def test_a_run_that_checked_no_mutant_is_an_error_not_a_score(mutate: ModuleType) -> None:
    """Tests that could not start leave every mutant unchecked: that must not read as a
    module whose tests kill nothing (or, with the verdicts ignored, as one that passed)."""
    problem = mutate.never_checked("src/a.py", {"m_1": None, "m_2": None}, "stats failed")
    assert problem is not None
    assert "none of the 2 mutants of src/a.py" in problem and problem.endswith("stats failed")
    assert mutate.never_checked("src/a.py", {"m_1": None, "m_2": 1}, "") is None
    assert mutate.never_checked("src/a.py", {}, "") is None


def test_a_mutant_whose_fork_crashed_is_run_once_more(mutate: ModuleType) -> None:
    """A crashed fork ("suspicious", an exit code mutmut does not know) is not a survivor
    until a second run says so; every other verdict stands as it is."""
    asked: list[list[str]] = []

    def rerun(names: list[str]) -> dict[str, int | None]:
        asked.append(names)
        return {"m_crash": 1, "m_crash_twice": 35, "m_kill": 0}

    codes = {"m_kill": 1, "m_live": 0, "m_crash": -6, "m_crash_twice": 35, "m_none": None}
    again = mutate.again_if_crashed(codes, rerun)
    assert asked == [["m_crash", "m_crash_twice"]]
    assert again == {"m_kill": 1, "m_live": 0, "m_crash": 1, "m_crash_twice": 35, "m_none": None}
    assert mutate.again_if_crashed({"m_kill": 1}, rerun) == {"m_kill": 1}
    assert len(asked) == 1, "nothing crashed: nothing runs again"
