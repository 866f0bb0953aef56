"""Mutation testing of phi's critical code with mutmut 3: which one-line breaks the tests see.

Why mutmut 3 rather than cosmic-ray: mutmut forks one process per mutant from a pytest that
has already imported everything, and runs only the tests that reached the mutated function
(it records them in a first pass), so a module of a few hundred mutants takes seconds to a
few minutes on two cores. cosmic-ray writes each mutant to disk and starts the whole test
command again for it (a pytest start-up of ~2 s each before any test runs): an order of
magnitude slower for the same kills. mutmut's limit is that it mutates inside functions only
(module constants are out of its reach), which is where phi's checks live.

Each module of the critical set (the area files in `tests/mutation/`) runs in a scratch
copy of the tree, never in the working tree: mutmut rewrites the source it tests. A subprocess
a test starts (`phi …`) imports the mutated copy too (`tests/conftest.py` points `PYTHONPATH`
at it under mutmut), so a mutant is killed by what a user would see. Equivalent mutants (no
test can tell them apart: they do not change behaviour) are listed with a reason in their
area's file, by mutmut's name.

Usage: `scripts/mutate [PATH…] [--json] [--changed [--base REF]] [--record] [--workers N]`.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _folder_guard import kept  # noqa: E402  (a sibling script, found through the line above)

CRITICAL_DIR = ROOT / "tests" / "mutation"
VERIFIED_FILE = CRITICAL_DIR / "verified"
"""Per module, the commit of the last run in which it met the goal (`--record` writes it):
one `PATH COMMIT` line each. `--changed` compares each module with its own commit, so areas
can be verified one at a time as they settle."""
KILLED = {"killed", "caught by type check", "timeout", "segfault"}
"""mutmut's verdicts that mean the tests noticed the mutant (a hang or a crash is noticed)."""

COPIED = ("src", "tests", "pyproject.toml", "uv.lock", "README.md", "examples", "scripts", "data")
"""What a scratch copy holds: what the tests read. `bench/` and `.cache/` are linked."""


@dataclass(frozen=True, kw_only=True)
class Module:
    """One module of the critical set and the tests that guard it."""

    path: str
    """The source file, relative to the repository (`src/phi/agent/gate.py`)."""
    tests: tuple[str, ...]
    """Test files or node ids mutmut may run against its mutants."""


@dataclass(kw_only=True)
class Tally:
    """What happened to one module's mutants."""

    module: str
    made: int = 0
    killed: int = 0
    survived: int = 0
    equivalent: int = 0
    seconds: float = 0.0
    commit: str | None = None
    """The commit whose code this run mutated: HEAD when the scratch copy was made, if the
    module and its guarding tests were then as HEAD has them; None for uncommitted code."""
    survivors: list[str] = field(default_factory=list)
    """Names of mutants no test killed (and not listed as equivalent)."""
    equivalents: list[str] = field(default_factory=list)
    """The mutants of the run listed as equivalent, each with its change and the reason
    given: mutmut numbers mutants by position in their function, so after an edit a listed
    name can point at another mutant; printed so that shows."""

    @property
    def score(self) -> float:
        """Share of the mutants that can be killed which were: killed / (made - equivalent)."""
        judged = self.made - self.equivalent
        return 1.0 if judged == 0 else self.killed / judged


def _area_files() -> list[Path]:
    return sorted(CRITICAL_DIR.glob("*.toml"))


def critical_set() -> list[Module]:
    """The critical set: every `[[module]]` of the area files in `tests/mutation/`."""
    modules = []
    for area in _area_files():
        data = tomllib.loads(area.read_text())
        for entry in data.get("module", []):
            modules.append(Module(path=entry["path"], tests=tuple(entry["tests"])))
    return modules


def equivalents() -> dict[str, str]:
    """Mutant name -> why it cannot be told apart from the original (each area file's
    `[equivalent]` table)."""
    found: dict[str, str] = {}
    for area in _area_files():
        found.update(tomllib.loads(area.read_text()).get("equivalent", {}))
    return found


def _scratch_copy(into: Path) -> None:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source,
                into / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "mutants"),
            )
        elif source.exists():
            shutil.copy2(source, into / name)
    for name in (".venv", "bench", ".cache"):
        if (ROOT / name).exists():
            (into / name).symlink_to(ROOT / name)


def _configure(into: Path, module: Module) -> None:
    pyproject = into / "pyproject.toml"
    text = pyproject.read_text()
    text = re.sub(r"\n\[tool\.mutmut\]\n(?:[^\[].*\n|\n)*", "\n", text)
    text += (
        "\n[tool.mutmut]\n"
        'source_paths = ["src/phi"]\n'
        f"only_mutate = [{json.dumps(module.path)}]\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(list(module.tests))}\n"
        'pytest_add_cli_args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-q", "-x"]\n'
        'also_copy = ["README.md", "examples", "scripts", "data"]\n'
    )
    pyproject.write_text(text)


@dataclass(frozen=True, kw_only=True)
class Mutant:
    """Where one mutant changes the source."""

    name: str
    line: int
    before: str
    after: str


_RESELECT = """
import json, sys, pytest

class Ids:
    def __init__(self):
        self.ids = []
    def pytest_collection_modifyitems(self, items):
        self.ids = [item.nodeid for item in items]

args = ["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
first, again = Ids(), Ids()
pytest.main([*args, *sys.argv[1:]], plugins=[first])
code = pytest.main([*args, *first.ids], plugins=[again]) if first.ids else 0
lost = [i for i in first.ids if i not in again.ids]
print(json.dumps(lost[:10]))
sys.exit(1 if lost or code else 0)
"""
"""Collects the given tests, then selects what it found again by node id in the same
process, as mutmut does; fails naming the ids it cannot find."""


class Scratch:
    """A scratch copy of the tree with mutmut configured for one module."""

    def __init__(self, into: Path, module: Module, *, workers: int) -> None:
        self.into, self.module, self.workers = into, module, workers
        _scratch_copy(into)
        _configure(into, module)
        self.env = {
            k: v for k, v in os.environ.items() if k not in ("MUTANT_UNDER_TEST", "PYTHONPATH")
        }

    def check_node_ids(self) -> None:
        """Refuse tests whose node ids pytest cannot select again in the same process.

        mutmut collects the tests, then runs each mutant's by node id in a process forked
        from the one that collected them. An id pytest cannot find there (one it made from
        a bytes parameter) makes the forked run raise instead of testing; the child then
        hangs in onnxruntime's exit handlers until mutmut's wall timeout, which it counts
        as a kill. So such a test is an error here, before any mutant runs.
        """
        python = str(ROOT / ".venv" / "bin" / "python")
        done = subprocess.run(
            [python, "-c", _RESELECT, *self.module.tests],
            cwd=self.into,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(
                f"pytest cannot select these tests of {self.module.path} again by node id"
                f" (give their parameters plain ids):\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )

    def run(self, names: list[str] | None = None) -> str:
        """`mutmut run` (all mutants, or only `names`); its output."""
        mutmut = str(ROOT / ".venv" / "bin" / "mutmut")
        done = subprocess.run(
            [mutmut, "run", "--max-children", str(self.workers), *(names or [])],
            cwd=self.into,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout + done.stderr

    def codes(self, output: str) -> dict[str, int | None]:
        meta = self.into / "mutants" / f"{self.module.path}.meta"
        if not meta.exists():
            raise SystemExit(f"mutmut made no mutants of {self.module.path}:\n{output[-2000:]}")
        codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
        return codes

    def mutants(self) -> dict[str, Mutant]:
        return mutant_lines(self.into / "mutants" / self.module.path, ROOT / self.module.path)


def run_module(module: Module, *, workers: int, lines: set[int] | None = None) -> Tally:
    """Mutate one module in a scratch copy and tally its mutants.

    Args:
        lines: When given, only mutants on these source lines are run and counted (the
            `--changed` mode); otherwise all.
    """
    started = time.monotonic()
    commit = clean_commit(module)
    with kept(ROOT), tempfile.TemporaryDirectory(prefix="phi-mutate-") as scratch:
        copy = Scratch(Path(scratch), module, workers=workers)
        copy.check_node_ids()
        if lines is None:
            output = copy.run()
            codes = copy.codes(output)
        else:
            # Naming a mutant that does not exist makes mutmut generate them all and run
            # none; then only those on the changed lines run.
            output = copy.run(["phi.none.x_none__mutmut_0"])
            copy.codes(output)
            chosen = sorted(n for n, m in copy.mutants().items() if m.line in lines)
            output = copy.run(chosen) if chosen else output
            every = copy.codes(output)
            codes = {name: every.get(name) for name in chosen}
        codes = again_if_crashed(codes, lambda names: copy.codes(copy.run(names)))
        where = copy.mutants()
    problem = never_checked(module.path, codes, output)
    if problem:
        raise SystemExit(problem)
    tally = _tally(module.path, codes, where, time.monotonic() - started)
    tally.commit = commit
    return tally


def again_if_crashed(
    codes: dict[str, int | None], rerun: Callable[[list[str]], dict[str, int | None]]
) -> dict[str, int | None]:
    """`codes` with each mutant whose forked test process crashed run once more.

    mutmut calls a fork that died without an exit code of its own "suspicious" (under load
    a forked pytest can be killed or crash in a native library's exit handlers); counted, it
    would be a survivor no test let live. Its second verdict stands, whatever it is.
    """
    from mutmut.stats import status_by_exit_code

    crashed = sorted(n for n, c in codes.items() if status_by_exit_code[c] == "suspicious")
    if not crashed:
        return codes
    again = rerun(crashed)
    return codes | {name: again.get(name) for name in crashed}


def never_checked(path: str, codes: dict[str, int | None], output: str) -> str | None:
    """Why the run says nothing, when mutmut checked none of the mutants it made.

    mutmut leaves every mutant "not checked" when its first, clean pass of the tests fails
    (a service the tests need is down, a test fails on the unmutated code). Counted, they
    would read as a module whose tests kill nothing; it is a run that never happened.
    """
    if not codes or any(code is not None for code in codes.values()):
        return None
    return (
        f"mutmut checked none of the {len(codes)} mutants of {path}: its tests did not run"
        f" on the unmutated code (a service they need down? a test failing?). mutmut said:\n"
        f"{output[-2000:]}"
    )


def clean_commit(module: Module) -> str | None:
    """HEAD, if `module` and the files of its guarding tests are as HEAD has them now."""
    files = [module.path, *sorted({t.split("::")[0] for t in module.tests})]
    if _git("status", "--porcelain", "--", *files).strip():
        return None
    return _git("rev-parse", "HEAD").strip()


def _tally(
    path: str, codes: dict[str, int | None], where: dict[str, Mutant], seconds: float
) -> Tally:
    from mutmut.stats import status_by_exit_code

    known = equivalents()
    tally = Tally(module=path, made=len(codes), seconds=seconds)
    for name, code in sorted(codes.items()):
        status = status_by_exit_code[code]
        mutant = where.get(name)
        shown = (
            f"{path}:{mutant.line}: {mutant.before.strip()!r} -> {mutant.after.strip()!r}"
            if mutant
            else path
        )
        if status in KILLED:
            tally.killed += 1
        elif name in known:
            tally.equivalent += 1
            tally.equivalents.append(f"{name} {shown} ({known[name]})")
        else:
            tally.survived += 1
            tally.survivors.append(f"{name} ({status}) {shown}")
    return tally


# -- the --changed mode: mutants on lines changed since the last verified commit -----------


def verified_commits() -> dict[str, str]:
    """Module path -> the commit of its last run that met the goal (`tests/mutation/verified`;
    a line holding a commit alone, the old format, stands for every module)."""
    found: dict[str, str] = {}
    if not VERIFIED_FILE.exists():
        return found
    for raw in VERIFIED_FILE.read_text().splitlines():
        parts = raw.split("#", 1)[0].split()
        if len(parts) == 1:
            found.setdefault("*", parts[0])
        elif len(parts) == 2:
            found[parts[0]] = parts[1]
    return found


def record_verified(tallies: list[Tally], modules: list[Module], *, threshold: float) -> list[str]:
    """Record, for each module that met the goal, the commit its run mutated (`Tally.commit`:
    the code as it was when the run began, whatever was committed during the run; a run on
    uncommitted code proves nothing about a commit); the refused, named."""
    found = verified_commits()
    refused = []
    for tally in tallies:
        if tally.score < threshold or tally.commit is None:
            reason = "uncommitted" if tally.commit is None else "below the goal"
            refused.append(f"{tally.module}: {reason}")
            continue
        found[tally.module] = tally.commit
    if all(m.path in found for m in critical_set()):
        found.pop("*", None)  # every module has a line of its own: the old catch-all is spent
    lines = [
        "# Per module of the critical set, the commit of its last mutation run that met the goal",
        "# (written by `scripts/mutate --record`; `--changed` mutates what changed since).",
        *(f"{path} {commit}" for path, commit in sorted(found.items())),
    ]
    VERIFIED_FILE.write_text("\n".join(lines) + "\n")
    return refused


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def base_commit(given: str | None, *, module: str | None = None) -> str | None:
    """What `--changed` compares a module with: `--base`, else the commit of the module's
    last run that met the goal (`tests/mutation/verified`), else the merge base with
    origin/main; None when there is none of them (a clone without that branch, before any
    verified run)."""
    if given is None:
        verified = verified_commits()
        given = verified.get(module or "", verified.get("*"))
    if given is None:
        given = "origin/main"
    found = subprocess.run(
        ["git", "merge-base", given, "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return found.stdout.strip() or None


def changed_lines(base: str, paths: list[str]) -> dict[str, set[int]]:
    """File -> its lines added or changed since `base` (committed and uncommitted)."""
    diff = subprocess.run(
        ["git", "diff", "--unified=0", base, "--", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines: dict[str, set[int]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@") and current is not None:
            found = re.search(r"\+(\d+)(?:,(\d+))?", line)
            assert found is not None, line
            start, count = int(found.group(1)), int(found.group(2) or "1")
            lines.setdefault(current, set()).update(range(start, start + count))
    return lines


def mutant_lines(scratch_file: Path, source_file: Path) -> dict[str, Mutant]:
    """Mutant name -> where it changes the source file.

    mutmut writes each mutant as a copy of its function next to the stored original; the
    first line where the two differ, offset from where the function starts in the source,
    is the mutated line.
    """
    spans = json.loads(Path(f"{scratch_file}.spans").read_text())["spans"]
    mutated = scratch_file.read_text().splitlines()
    source = source_file.read_text().splitlines()
    starts = _function_starts(source_file)
    parts = source_file.relative_to(ROOT / "src").with_suffix("").parts
    module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    found: dict[str, Mutant] = {}
    for key, (first, last) in spans.items():
        if key.endswith("__mutmut_orig"):
            continue
        function = key.rsplit("__mutmut_", 1)[0]
        orig = spans.get(f"{function}__mutmut_orig")
        start = starts.get(function)
        if orig is None or start is None:
            continue
        body = _from_def(mutated[first - 1 : last])
        original = _from_def(mutated[orig[0] - 1 : orig[1]])
        offset = next(
            (i for i, (a, b) in enumerate(zip(body[1:], original[1:], strict=False), 1) if a != b),
            0,
        )
        line = start + offset
        before = source[line - 1] if line <= len(source) else ""
        after = body[offset] if offset < len(body) else ""
        found[f"{module}.{key}"] = Mutant(name=key, line=line, before=before, after=after)
    return found


def _from_def(lines: list[str]) -> list[str]:
    """A function's lines from its `def` on (mutmut's spans start at the blank lines before)."""
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("def ", "async def ")):
            return lines[i:]
    return lines


def _function_starts(source_file: Path) -> dict[str, int]:
    """mutmut's mangled function name -> the line of its `def` in the source."""
    tree = ast.parse(source_file.read_text())
    starts: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            starts[f"x_{node.name}"] = node.lineno
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    starts[f"x\u01c1{node.name}\u01c1{item.name}"] = item.lineno
    return starts


def run_changed(modules: list[Module], *, given: str | None, workers: int) -> list[Tally]:
    """The CI mode. Against each module's base (`base_commit`), its changed lines are
    mutated, and a module whose tests changed (a test weakened is a change too) is mutated
    whole. Every mutant must die. A module with no base at all (never verified, and no
    origin/main to compare with) is named and left to a full run: mutating it whole here
    would take CI past its budget."""
    tallies = []
    for module in modules:
        base = base_commit(given, module=module.path)
        if base is None:
            print(
                f"not yet verified, skipped: {module.path} "
                f"(`scripts/mutate --record {module.path}` verifies it)"
            )
            continue
        guarded_by = sorted({t.split("::")[0] for t in module.tests})
        sources = changed_lines(base, [module.path])
        if changed_lines(base, guarded_by):
            tallies.append(run_module(module, workers=workers))
        elif module.path in sources:
            tallies.append(run_module(module, workers=workers, lines=sources[module.path]))
    return tallies


# -- output ---------------------------------------------------------------------------------


def print_table(tallies: list[Tally], *, threshold: float) -> None:
    width = max([len(t.module) for t in tallies] + [6])
    print(f"{'module':<{width}}  made  killed  survived  equivalent  killed%   time")
    for t in tallies:
        mark = "" if t.score >= threshold else "  < goal"
        print(
            f"{t.module:<{width}}  {t.made:>4}  {t.killed:>6}  {t.survived:>8}  "
            f"{t.equivalent:>10}  {t.score:>6.1%}  {t.seconds:>5.0f}s{mark}"
        )
    for t in tallies:
        for name in t.equivalents:
            print(f"equivalent: {name}")
    for t in tallies:
        for name in t.survivors:
            print(f"survived: {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/mutate", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", help="Modules to mutate (default: the critical set).")
    parser.add_argument("--json", action="store_true", help="One JSON object for scripts.")
    parser.add_argument(
        "--changed",
        action="store_true",
        help="Only mutants on lines changed since the merge base; fail on any survivor.",
    )
    parser.add_argument(
        "--base",
        default=None,
        help="What --changed compares with (default: tests/mutation/verified, else origin/main).",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="Record HEAD as verified for each module of the run that met the goal.",
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--threshold", type=float, default=0.9, help="Goal per module (0.9).")
    args = parser.parse_args(argv)

    modules = critical_set()
    if args.paths:
        wanted = {str(Path(p)) for p in args.paths}
        known = {m.path: m for m in modules}
        unknown = wanted - set(known)
        if unknown:
            parser.error(f"not in the critical set (tests/mutation/*.toml): {sorted(unknown)}")
        modules = [known[p] for p in sorted(wanted)]
    started = time.monotonic()
    if args.changed:
        tallies = run_changed(modules, given=args.base, workers=args.workers)
        failed = any(t.survived for t in tallies)
    else:
        tallies = []
        for module in modules:
            tallies.append(run_module(module, workers=args.workers))
            if not args.json and len(modules) > 1:
                # A full run takes an hour or more: each module's row as soon as it is known.
                print(f"done: {json.dumps(asdict(tallies[-1]))}", file=sys.stderr, flush=True)
        failed = any(t.score < args.threshold for t in tallies)
        if args.record:
            for line in record_verified(tallies, modules, threshold=args.threshold):
                print(f"not recorded as verified: {line}", file=sys.stderr)
    elapsed = time.monotonic() - started
    if args.json:
        print(
            json.dumps(
                {
                    "modules": [asdict(t) | {"score": t.score} for t in tallies],
                    "seconds": elapsed,
                    "failed": failed,
                },
                indent=2,
            )
        )
    else:
        if tallies:
            print_table(tallies, threshold=1.0 if args.changed else args.threshold)
        else:
            print("no critical line changed since the base: nothing to mutate")
        print(f"wall time {elapsed:.0f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
