"""Imports go one way: the memory engine depends on nothing else in phi but its errors and
the two leaf modules every layer shares (private files, redaction)."""

from __future__ import annotations

import ast
from pathlib import Path

from phi.memory import USER_NAMESPACE_PREFIX

SRC = Path(__file__).parent.parent / "src" / "phi"
ALLOWED_FOR_MEMORY = {"phi.errors", "phi.private", "phi.redact"}


def _package(path: Path, root: Path) -> str:
    """The package a module's relative imports start from (`phi.memory` for both
    `phi/memory/__init__.py` and `phi/memory/ingest.py`)."""
    return ".".join(path.relative_to(root).with_suffix("").parts[:-1])


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module an `from ... import` names, its leading dots resolved against `package`."""
    if node.level == 0:
        return node.module or ""
    parts = package.split(".")
    assert node.level <= len(parts), f"line {node.lineno}: the import climbs out of {package!r}"
    up = parts[: len(parts) - (node.level - 1)]
    return ".".join([*up, *([node.module] if node.module else [])])


def imported_modules(path: Path, *, root: Path = SRC.parent) -> set[str]:
    """Every module `path` imports, relative imports resolved (`from .. import agent` in
    `phi.memory` is `phi.agent`): a dot must not hide a forbidden import."""
    tree = ast.parse(path.read_text())
    package = _package(path, root)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            # `from . import x` imports the module `x` of the package (or a name in it).
            found |= {f"{base}.{a.name}" for a in node.names} if node.module is None else {base}
    return found


def memory_offenders(src: Path) -> dict[str, list[str]]:
    """Modules of `src/memory` importing from phi outside `phi.memory` and the allowed
    leaves, with what they import (`src` is the `phi` package folder)."""
    offenders = {}
    for path in sorted((src / "memory").rglob("*.py")):
        bad = {
            m
            for m in imported_modules(path, root=src.parent)
            if m.startswith("phi.")
            and not (m == "phi.memory" or m.startswith("phi.memory."))
            and m not in ALLOWED_FOR_MEMORY
        }
        if bad:
            offenders[str(path.relative_to(src))] = sorted(bad)
    return offenders


def test_memory_imports_nothing_else_from_phi() -> None:
    assert memory_offenders(SRC) == {}


def test_a_relative_import_out_of_memory_is_caught(tmp_path: Path) -> None:
    """Issue 24: relative imports were skipped, so `from ..agent import x` in the engine
    passed the check above."""
    files = {
        "phi/__init__.py": "",
        "phi/memory/__init__.py": "from .model import Row\nfrom . import store\n",
        "phi/memory/model.py": "from ..errors import UserError\nfrom ..memory import store\n",
        "phi/memory/sneak.py": "from ..agent import build_agent\n",
        "phi/memory/store/__init__.py": "from .. import model\nfrom ... import redact\n",
        "phi/memory/store/deep.py": "def f():\n    from ...runtime.poller import PhiRuntime\n",
        "phi/memory/store/dotted.py": "from ... import agent, private\n",
        "phi/memory/lookalike.py": "from ..memoryless import x\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert memory_offenders(tmp_path / "phi") == {
        "memory/lookalike.py": ["phi.memoryless"],
        "memory/sneak.py": ["phi.agent"],
        "memory/store/deep.py": ["phi.runtime.poller"],
        "memory/store/dotted.py": ["phi.agent"],
    }


ABOVE_THE_AGENT = ("phi.runtime", "phi.web", "phi.cli")
"""What runs the agent: the agent (and `phi.services`, below both) never imports it."""


def upward_offenders(src: Path) -> dict[str, list[str]]:
    """Modules of `src/agent` and `src/services.py` importing a layer that runs the agent."""
    paths = [*sorted((src / "agent").rglob("*.py")), src / "services.py"]
    offenders = {}
    for path in paths:
        if not path.exists():
            continue
        bad = {
            m
            for m in imported_modules(path, root=src.parent)
            if any(m == layer or m.startswith(f"{layer}.") for layer in ABOVE_THE_AGENT)
        }
        if bad:
            offenders[str(path.relative_to(src))] = sorted(bad)
    return offenders


def test_the_agent_never_imports_what_runs_it() -> None:
    assert upward_offenders(SRC) == {}


def test_the_old_upward_import_is_caught(tmp_path: Path) -> None:
    """Issue 28: the `check_service` tool imported the check from the runtime's schedules."""
    files = {
        "phi/__init__.py": "",
        "phi/agent/__init__.py": "",
        "phi/agent/tools/services.py": "from phi.runtime.schedules import check_services\n",
        "phi/agent/prompt/day.py": "from ...services import last_check\n",
        "phi/services.py": "def f():\n    from .runtime import poller\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert upward_offenders(tmp_path / "phi") == {
        "agent/tools/services.py": ["phi.runtime.schedules"],
        "services.py": ["phi.runtime"],
    }


def test_nothing_imports_the_cli() -> None:
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if "cli" not in p.parts and any(m.startswith("phi.cli") for m in imported_modules(p))
    ]
    assert offenders == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    # Imports under `if TYPE_CHECKING:` never run, so they make no cycle.
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(sub) for sub in ast.walk(node)}
    return skipped


def import_graph() -> dict[str, set[str]]:
    """Module -> the phi modules it imports, function-level imports included (they run
    when the function does, and a cycle through them is a cycle all the same)."""
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        package = _package(path, SRC.parent)
        skipped = _type_checking_nodes(tree)
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, package)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    found.add(sub if sub in modules else base)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_in_phi() -> None:
    assert cycles(import_graph()) == []


def test_only_phi_memory_touches_a_store() -> None:
    """`Memory` and its facades are the one door: no module outside `phi.memory` imports
    a store module or reaches for a `.store` attribute."""
    offenders: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        if path.relative_to(SRC).parts[0] == "memory":
            continue
        tree = ast.parse(path.read_text())
        bad = sorted(
            {m for m in imported_modules(path) if m.startswith("phi.memory.store")}
            | {
                f"line {node.lineno}: .store"
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and node.attr == "store"
            }
            | {
                f"line {node.lineno}: import store"
                for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom)
                and node.module == "phi.memory"
                and any(a.name == "store" for a in node.names)
            }
        )
        if bad:
            offenders[str(path.relative_to(SRC))] = bad
    assert offenders == {}


def test_the_user_namespace_prefix_is_spelled_once() -> None:
    """`phi.memory.model.USER_NAMESPACE_PREFIX` is the one spelling in code (help texts
    may show an example namespace)."""
    spelled = [
        f"{path.relative_to(SRC)}"
        for path in sorted(SRC.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value == "phi-users-"
    ]
    assert spelled == ["memory/model.py"]
    script = (SRC / "web" / "static" / "memory.js").read_text()
    assert script.count("phi-users-") == 1
    assert f'const USER_NAMESPACE_PREFIX = "{USER_NAMESPACE_PREFIX}";' in script


def test_run_deps_are_not_set_after_they_are_built() -> None:
    """A run's `PhiDeps` is complete when built (`PhiRuntime.deps(...)` takes every field):
    no code assigns to one of its fields afterwards."""
    assigned = sorted(
        f"{path.relative_to(SRC)}:{node.lineno}"
        for path in SRC.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for part in (target.elts if isinstance(target, ast.Tuple) else [target])
        if isinstance(part, ast.Attribute)
        and (
            (isinstance(part.value, ast.Name) and part.value.id == "deps")
            or (isinstance(part.value, ast.Attribute) and part.value.attr == "deps")
        )
    )
    assert assigned == []
