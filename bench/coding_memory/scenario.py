"""Seeded multi-session coding histories in Claude Code's hook input shape.

`build_history` turns the catalog into sessions: each project gets a first session that makes
its decisions among routine work, a second that needs them (paraphrased) and reverses some,
and a third that needs the current ones; the sessions of different projects interleave as a
developer switches between checkouts. Every prompt and session start is a `Measure`: what it
needs, and which decisions were reversed before it.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from bench.coding_memory.catalog import DECISIONS, PROJECTS, QUIET_PROMPTS, Decision, Project
from bench.coding_memory.metrics import mask_identifiers

__all__ = ["History", "Measure", "Step", "build_history", "check_markers"]

_ROUTINE_PROMPTS: Final = (
    "add type hints to {module}",
    "why is {symbol} slow? look into it",
    "rename the private helper in {module} to something clearer",
    "run the tests and fix whatever fails",
    "add a test for {symbol}",
    "tidy up the imports in {module}",
    "explain what {symbol} does and where it is used",
)
_BASE62: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, kw_only=True)
class Measure:
    """What the context injected at one prompt or session start is judged against."""

    kind: Literal["session_start", "prompt", "need", "quiet"]
    """`need`: a prompt needing `needs`; `quiet`: one needing nothing; else any other."""
    needs: str | None = None
    """The key of the decision the prompt needs."""
    reversed_pairs: tuple[tuple[str, str], ...] = ()
    """(old, new) decision keys of this project reversed before this point."""


@dataclass(frozen=True, kw_only=True)
class Step:
    """One hook call of the host."""

    project: str
    """`Project.key`."""
    session: str
    """The host's session id."""
    payload: dict[str, Any]
    """The hook input, as the host writes it on stdin."""
    transcript: tuple[dict[str, Any], ...] = ()
    """Lines the host appends to the session's transcript before this hook fires."""
    measure: Measure | None = None
    """Set on the prompts and session starts whose injected context is judged."""


@dataclass(frozen=True, kw_only=True)
class History:
    """A whole replay: the projects' checkouts under `home` and the hook calls in order."""

    home: Path
    projects: tuple[Project, ...]
    decisions: dict[str, Decision]
    steps: tuple[Step, ...]
    sessions: dict[str, str] = field(default_factory=dict)
    """Session id -> project key: an entry naming a session is attributed to its project."""


def build_history(home: Path, *, seed: int = 0, routine: int = 3) -> History:
    """The history for checkouts under `home`; `routine` tasks of ordinary work per session."""
    rng = random.Random(seed)
    decisions = {d.key: d for d in DECISIONS}
    queues: dict[str, list[list[Step]]] = {}
    sessions: dict[str, str] = {}
    for project in PROJECTS:
        mine = [d for d in DECISIONS if d.project == project.key]
        first = [d for d in mine if d.replaces is None]
        reversals = [d for d in mine if d.replaces is not None]
        plans: list[list[_Task]] = [
            [("decide", d) for d in first],
            [*(("need", d) for d in first), ("quiet", None), *(("decide", d) for d in reversals)],
            [*(("need", d) for d in _current(mine)), ("quiet", None)],
        ]
        queues[project.key] = []
        reversed_pairs: list[tuple[str, str]] = []
        for number, plan in enumerate(plans):
            session = _Session(rng=rng, home=home, project=project, number=number)
            sessions[session.session_id] = project.key
            tasks = _with_routine(rng, plan, routine)
            queues[project.key].append(list(session.steps(tasks, reversed_pairs)))
    order: list[Step] = []
    while any(queues.values()):
        key = rng.choice(sorted(k for k, v in queues.items() if v))
        order.extend(queues[key].pop(0))
    return History(
        home=home, projects=PROJECTS, decisions=decisions, steps=tuple(order), sessions=sessions
    )


def check_markers(history: History) -> None:
    """Raise `ValueError` if any project's events contain another project's marker: the leak
    count is only exact while each marker belongs to one project's text. Random identifiers
    (session and tool-use ids) are left out, as the leak judge leaves them out."""
    for step in history.steps:
        text = json.dumps([step.payload, step.transcript]).replace(str(history.home), "~")
        text = mask_identifiers(text)
        for other in history.projects:
            if other.key == step.project:
                continue
            for marker in other.markers:
                if marker.lower() in text.lower():
                    raise ValueError(f"{step.project!r} event mentions {marker!r} of {other.key!r}")


_Task = tuple[Literal["decide", "need", "quiet", "routine"], Decision | None]


def _current(decisions: list[Decision]) -> list[Decision]:
    replaced = {d.replaces for d in decisions}
    return [d for d in decisions if d.key not in replaced]


def _with_routine(rng: random.Random, plan: list[_Task], routine: int) -> list[_Task]:
    tasks = list(plan)
    for _ in range(routine):
        tasks.insert(rng.randrange(len(tasks) + 1), ("routine", None))
    # A reversal must come after the prompts that need the decision it reverses.
    return sorted(tasks, key=lambda t: t[0] == "decide" and bool(t[1] and t[1].replaces))


class _Session:
    """Builds one session's hook calls and its transcript lines."""

    def __init__(self, *, rng: random.Random, home: Path, project: Project, number: int) -> None:
        self.rng = rng
        self.project = project
        self.root = home / project.folder
        self.session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        in_subdir = project.subdir is not None and number % 2 == 1
        self.cwd = self.root / project.subdir if in_subdir and project.subdir else self.root
        slug = str(self.root).replace("/", "-")
        self.transcript_path = home / ".claude" / "projects" / slug / f"{self.session_id}.jsonl"

    def steps(self, tasks: list[_Task], reversed_pairs: list[tuple[str, str]]) -> Iterator[Step]:
        yield self._step(
            {"hook_event_name": "SessionStart", "source": "startup"},
            measure=Measure(kind="session_start", reversed_pairs=tuple(reversed_pairs)),
        )
        for kind, decision in tasks:
            if kind == "routine":
                yield from self._routine(reversed_pairs)
            elif kind == "quiet":
                prompt = self.rng.choice(QUIET_PROMPTS)
                measure = Measure(kind="quiet", reversed_pairs=tuple(reversed_pairs))
                yield self._prompt(prompt, measure)
                yield self._stop("Sure — answered above; nothing in the repository changed.")
            elif kind == "need":
                assert decision is not None
                prompt = self.rng.choice(decision.paraphrases)
                measure = Measure(
                    kind="need", needs=decision.key, reversed_pairs=tuple(reversed_pairs)
                )
                yield self._prompt(prompt, measure)
                yield from self._call(
                    "Grep",
                    {"pattern": self.rng.choice(self.project.symbols), "path": str(self.root)},
                    self._grep_result(),
                )
                yield self._stop("I checked the current code; the details are above.")
            else:
                assert decision is not None
                yield from self._decide(decision, reversed_pairs)
                if decision.replaces:
                    reversed_pairs.append((decision.replaces, decision.key))
        yield self._step({"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})

    def _decide(self, d: Decision, reversed_pairs: list[tuple[str, str]]) -> Iterator[Step]:
        yield self._prompt(d.request, Measure(kind="prompt", reversed_pairs=tuple(reversed_pairs)))
        cmd = {"command": d.failing_cmd, "description": "Reproduce the failure"}
        yield from self._call(
            "Bash", cmd, None, error=f"Exit code 1\n{d.failure}", say="Let me reproduce it first."
        )
        path = str(self.root / d.file)
        content = f"{d.before}\n"
        yield from self._call(
            "Read",
            {"file_path": path},
            self._read_result(path, content),
            say="The failure points at the configuration; reading it.",
        )
        edit = {"file_path": path, "old_string": d.before, "new_string": d.after}
        yield from self._call(
            "Edit",
            edit,
            {
                "filePath": path,
                "oldString": d.before,
                "newString": d.after,
                "userModified": False,
                "replaceAll": False,
            },
            say="Changing it, with the reason next to it.",
        )
        yield from self._call(
            "Bash",
            {**cmd, "description": "Run the tests again"},
            {"stdout": "all passed", "stderr": "", "interrupted": False, "isImage": False},
        )
        yield self._stop(d.summary)

    def _routine(self, reversed_pairs: list[tuple[str, str]]) -> Iterator[Step]:
        module = self.rng.choice(self.project.modules)
        symbol = self.rng.choice(self.project.symbols)
        template = self.rng.choice(_ROUTINE_PROMPTS)
        prompt = template.format(module=module, symbol=symbol)
        yield self._prompt(prompt, Measure(kind="prompt", reversed_pairs=tuple(reversed_pairs)))
        path = str(self.root / module)
        for _ in range(self.rng.randint(2, 5)):
            tool = self.rng.choice(("Read", "Read", "Grep", "Bash", "Edit", "Glob"))
            if tool == "Read":
                body = "\n".join(f"{symbol}_{i} = {i}" for i in range(self.rng.randint(5, 40)))
                yield from self._call(tool, {"file_path": path}, self._read_result(path, body))
            elif tool == "Grep":
                yield from self._call(
                    tool, {"pattern": symbol, "path": str(self.root)}, self._grep_result()
                )
            elif tool == "Glob":
                yield from self._call(
                    tool,
                    {"pattern": "**/*" + Path(module).suffix},
                    {
                        "filenames": [str(self.root / m) for m in self.project.modules],
                        "numFiles": len(self.project.modules),
                        "truncated": False,
                    },
                )
            elif tool == "Bash":
                cmd = self.rng.choice(
                    (self.project.test_cmd, "git status --short", "git diff --stat")
                )
                yield from self._call(
                    tool,
                    {"command": cmd, "description": "Check the work"},
                    {
                        "stdout": f"ok ({self.rng.randint(3, 90)} checks)",
                        "stderr": "",
                        "interrupted": False,
                        "isImage": False,
                    },
                )
            else:
                old = f"{symbol}_tmp = None"
                new = f"{symbol}_cache: dict[str, int] = {{}}"
                yield from self._call(
                    tool,
                    {"file_path": path, "old_string": old, "new_string": new},
                    {
                        "filePath": path,
                        "oldString": old,
                        "newString": new,
                        "userModified": False,
                        "replaceAll": False,
                    },
                )
        yield self._stop(f"Done with {module}: the change is small and the checks pass.")

    def _prompt(self, prompt: str, measure: Measure) -> Step:
        line = {"type": "user", "message": {"role": "user", "content": prompt}}
        return self._step(
            {"hook_event_name": "UserPromptSubmit", "prompt": prompt},
            transcript=(line,),
            measure=measure,
        )

    def _call(
        self,
        tool: str,
        args: dict[str, Any],
        response: Any,
        *,
        error: str | None = None,
        say: str | None = None,
    ) -> Iterator[Step]:
        use_id = "toolu_01" + "".join(self.rng.choice(_BASE62) for _ in range(22))
        content: list[dict[str, Any]] = [{"type": "text", "text": say}] if say else []
        content.append({"type": "tool_use", "id": use_id, "name": tool, "input": args})
        line = {"type": "assistant", "message": {"role": "assistant", "content": content}}
        base = {"tool_name": tool, "tool_input": args, "tool_use_id": use_id}
        yield self._step({"hook_event_name": "PreToolUse", **base}, transcript=(line,))
        if error is None:
            yield self._step({"hook_event_name": "PostToolUse", **base, "tool_response": response})
        else:
            yield self._step(
                {
                    "hook_event_name": "PostToolUseFailure",
                    **base,
                    "error": error,
                    "is_interrupt": False,
                }
            )

    def _stop(self, text: str) -> Step:
        line = {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        }
        return self._step(
            {"hook_event_name": "Stop", "stop_hook_active": False}, transcript=(line,)
        )

    def _read_result(self, path: str, content: str) -> dict[str, Any]:
        lines = content.count("\n") + 1
        return {
            "type": "text",
            "file": {
                "filePath": path,
                "content": content,
                "numLines": lines,
                "startLine": 1,
                "totalLines": lines,
            },
        }

    def _grep_result(self) -> dict[str, Any]:
        files = self.rng.sample(self.project.modules, self.rng.randint(1, 2))
        return {
            "mode": "files_with_matches",
            "filenames": [str(self.root / f) for f in files],
            "numFiles": len(files),
        }

    def _step(
        self,
        payload: dict[str, Any],
        *,
        transcript: tuple[dict[str, Any], ...] = (),
        measure: Measure | None = None,
    ) -> Step:
        full = {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript_path),
            "cwd": str(self.cwd),
            "permission_mode": "default",
            **payload,
        }
        lines = tuple(
            {**line, "sessionId": self.session_id, "cwd": str(self.cwd)} for line in transcript
        )
        return Step(
            project=self.project.key,
            session=self.session_id,
            payload=full,
            transcript=lines,
            measure=measure,
        )
