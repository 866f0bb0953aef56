"""`python -m phi.capture`: the hook command, without the `phi` CLI's imports.

The same as `phi capture`, for hosts that run a hook on every tool call: it starts in a
fraction of the time because it loads neither typer nor the rest of the CLI. Unlike
`phi capture` it answers prompts and session starts from the project's memory through the
resident process (`--no-recall`: as `phi capture` does), and stores each event in the
project's own namespace unless `--namespace` or `$PHI_CAPTURE_PROJECT` names one.

When the resident process is up, the event is handed to it by `phi.capture._fast`, and
this process imports nothing else (nor does `phi.capture`'s package module): only when the
resident does not take the event does the full path (`phi.capture._full`) load.
"""

from __future__ import annotations

import sys

from phi.capture._fast import hand_over

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, NoReturn


def main(argv: list[str] | None = None, stdin: BinaryIO | None = None) -> int:
    """Run the hook: through the resident process if it takes the event, else in full."""
    args = sys.argv[1:] if argv is None else argv
    stdin = stdin or sys.stdin.buffer
    code, head, event = hand_over(args, stdin, out=sys.stdout.buffer, err=sys.stderr.buffer)
    if code is not None:
        return code
    from phi.capture._full import full

    return full(args, stdin, head=head, event_id=event)


def run() -> NoReturn:
    """The hook command as the shipped configurations run it,
    `python -c 'from phi.capture.__main__ import run; run()'`: the same as
    `python -m phi.capture`, without `runpy`, which `-m` imports first (with `importlib.util`,
    `contextlib`, `collections` and `functools`: 15-30 ms of a hook's time here)."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
