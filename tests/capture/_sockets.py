"""A short temporary folder for the tests that put a resident's unix socket in it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from phi.capture.project import PROJECT_ENV


@contextmanager
def short_tmpdir(monkeypatch: pytest.MonkeyPatch, *, prefix: str) -> Iterator[Path]:
    """A private folder of `/tmp` that is also `$TMPDIR`, with this user's socket folder
    (`phi-<uid>`) in it, and no project named by the environment.

    Why `/tmp` and not pytest's `tmp_path`: a unix socket path must fit `sun_path` (108
    bytes), and pytest's folders are deep enough to pass it.
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    (folder / f"phi-{os.getuid()}").mkdir(mode=0o700)
    for name in ("TEMP", "TMP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.delenv(PROJECT_ENV, raising=False)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
