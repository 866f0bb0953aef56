"""`scripts/_folder_guard.py`: what a mutant did to a shared folder's mode or ACL is undone
after the run (a mutant of `phi.private` run as root once closed `/` and `/tmp`)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "_folder_guard.py"
_ACL = "system.posix_acl_access"
# user_obj rwx, user 4242 --x, group_obj r-x, mask r-x, other r-x
_AN_ACL = bytes.fromhex(
    "0200000001000700ffffffff020001009210000004000500ffffffff10000500ffffffff20000500ffffffff"
)


@pytest.fixture
def guard() -> ModuleType:
    spec = importlib.util.spec_from_file_location("phi_folder_guard", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_changed_mode_is_put_back(guard: ModuleType, tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    was = guard.state_of(folder)
    folder.chmod(0o700)
    assert guard.restore(folder, was) is True
    assert folder.stat().st_mode & 0o777 == 0o755
    assert guard.restore(folder, was) is False


def test_an_added_acl_is_removed_and_a_removed_one_put_back(
    guard: ModuleType, tmp_path: Path
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o755)
    try:
        os.setxattr(folder, _ACL, _AN_ACL)
    except OSError as exc:
        pytest.fail(f"this file system takes no POSIX ACL, which the guard's test needs: {exc}")
    with_acl = guard.state_of(folder)
    assert with_acl.acl is not None
    os.removexattr(folder, _ACL)
    folder.chmod(0o700)
    assert guard.restore(folder, with_acl) is True
    assert guard.state_of(folder) == with_acl
    os.removexattr(folder, _ACL)
    folder.chmod(0o755)
    bare = guard.state_of(folder)
    assert bare.acl is None
    os.setxattr(folder, _ACL, _AN_ACL)
    assert guard.restore(folder, bare) is True
    assert guard.state_of(folder) == bare


def test_the_shared_folders_include_root_and_the_temporary_folder(guard: ModuleType) -> None:
    folders = guard.shared_folders(Path(__file__).resolve().parent.parent)
    assert Path("/") in folders
    import tempfile

    assert Path(tempfile.gettempdir()).resolve() in folders
