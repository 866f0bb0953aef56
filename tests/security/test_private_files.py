"""Issue 23, finding 2: everything phi writes is its owner's alone, whatever the umask.

Every test runs under `umask 000`, the worst case: a file or folder created with the
default mode would then be readable and writable by everyone, so each mode asserted here
is one phi set itself. A secret file others can read is refused with the `chmod` that
fixes it, in one line.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from typer.testing import CliRunner

from phi.agent.control_log import ControlLog
from phi.atproto import ClientConfig, PhiClient
from phi.atproto.sandbox import Sandbox, SandboxConfig, Toolchain
from phi.capture import Spool
from phi.cli import app
from phi.config import Settings
from phi.errors import PhiError
from phi.memory import Memory, MiniLMEmbedder, NewRow
from phi.private import InsecureFile, private_file, private_mkdirs
from phi.runtime.control import control_token, serve_control

PHI = str(Path(sys.executable).parent / "phi")

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """The umask that hides nothing: every mode below is one phi chose."""
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def modes(root: Path) -> dict[str, int]:
    """The mode of every file and folder under `root`, by relative path."""
    return {str(p.relative_to(root)): mode(p) for p in sorted(root.rglob("*"))}


def one_error_line(output: str) -> str:
    assert output.startswith("error: "), output
    assert output.count("\n") == 1, output
    return output


# -- PHI_HOME and the SQLite stores ----------------------------------------------------------


def test_a_command_creates_phi_home_0700_and_closes_an_open_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 23.2: a PHI_HOME phi created was 0755; one left open is now closed."""
    monkeypatch.chdir(tmp_path)
    fresh = tmp_path / "new" / "home"
    done = CliRunner().invoke(app, ["runs", "list"], env={"PHI_HOME": str(fresh)})
    assert done.exit_code == 0, done.output
    assert mode(tmp_path / "new") == 0o700  # a folder phi made on the way
    assert modes(fresh) == {"runs.db": 0o600}
    assert mode(fresh) == 0o700

    fresh.chmod(0o777)
    (fresh / "runs.db").chmod(0o666)  # as an older phi under this umask left them
    done = CliRunner().invoke(app, ["runs", "list"], env={"PHI_HOME": str(fresh)})
    assert done.exit_code == 0, done.output
    assert (mode(fresh), modes(fresh)) == (0o700, {"runs.db": 0o600})


def test_the_store_and_its_wal_are_0600_in_new_folders_0700(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    """Finding 23.2: memory.db and its -wal/-shm were 0644 (0666 under this umask)."""
    users = tmp_path / "users-folder"
    users.mkdir(mode=0o755)  # the user's own: phi leaves it as it is
    path = users / "made" / "by-phi" / "memory.db"

    async def while_open() -> dict[str, int]:
        async with Memory.open(path, embedder=minilm) as memory:
            await memory.remember(NewRow(content="alice likes crows", namespace="notes"))
            return modes(users)

    assert anyio.run(while_open) == {
        "made": 0o700,
        "made/by-phi": 0o700,
        "made/by-phi/memory.db": 0o600,
        "made/by-phi/memory.db-shm": 0o600,
        "made/by-phi/memory.db-wal": 0o600,
    }
    assert mode(users) == 0o755


def test_a_store_an_older_phi_left_open_is_closed_on_open(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    """Finding 23.2: an existing 0644 store is tightened, not only new ones made right."""
    path = tmp_path / "old" / "memory.db"

    async def add(text: str) -> tuple[list[str], dict[str, int]]:
        async with Memory.open(path, embedder=minilm) as memory:
            await memory.remember(NewRow(content=text, namespace="notes"))
            return [r.content async for r in memory.export()], modes(path.parent)

    anyio.run(add, "bob feeds crows")
    path.chmod(0o644)
    assert anyio.run(add, "and so does carol") == (
        ["bob feeds crows", "and so does carol"],
        {"memory.db": 0o600, "memory.db-shm": 0o600, "memory.db-wal": 0o600},
    )


def test_memory_add_with_db_and_export_write_private_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 23.2: a store named by `--db` and an export file are people's words too."""
    monkeypatch.chdir(tmp_path)
    db, out = tmp_path / "stores" / "m.db", tmp_path / "rows.jsonl"
    runner = CliRunner()
    added = runner.invoke(app, ["memory", "add", "carol bakes", "-n", "notes", "--db", str(db)])
    assert added.exit_code == 0, added.output
    exported = runner.invoke(app, ["memory", "export", "--db", str(db), "--output", str(out)])
    assert exported.exit_code == 0, exported.output
    assert "carol bakes" in out.read_text()
    assert (mode(db.parent), mode(db), mode(out)) == (0o700, 0o600, 0o600)


# -- the capture spool, the control API, the session -----------------------------------------


def test_the_capture_hook_writes_only_private_files(tmp_path: Path) -> None:
    """Finding 23.2: spool.jsonl, its offset, lock and drain log, and the store the detached
    drainer makes, from the real hook command (the umask is inherited)."""
    home = tmp_path / "home"
    event = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "hi there"}
    done = subprocess.run(
        [sys.executable, "-m", "phi.capture"],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PHI_HOME": str(home), "PHI_CAPTURE_RESIDENT_IDLE_S": "5"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    spool = Spool(directory=home / "capture")
    deadline = time.monotonic() + 120
    while spool.pending() or not (home / "memory.db").exists():
        assert time.monotonic() < deadline, (home / "capture" / "drain.log").read_text()
        time.sleep(0.2)
    with spool.draining(wait_s=120) as mine:  # the drainer holds it until it has closed
        assert mine
    assert mode(home) == 0o700
    found = modes(home)
    # The prompt's recall starts the resident process (its lock, log and socket, and the
    # store it keeps open with its -wal/-shm): those are private too, and nothing else is made.
    resident = {name for name in found if name.startswith("capture/resident")}
    assert {n for n in resident if n.endswith(".lock")} and "capture/resident.log" in resident
    expected: dict[str, int] = {
        "capture": 0o700,
        "capture/drain.lock": 0o600,
        "capture/spool.jsonl": 0o600,
        "capture/spool.offset": 0o600,
        "memory.db": 0o600,
        **{name: 0o600 for name in resident},
        # Made only when a detached drainer stored the queue, not the resident process.
        **{
            name: 0o600
            for name in ("capture/drain.log", "memory.db-wal", "memory.db-shm")
            if name in found
        },
    }
    assert found == expected


def test_the_control_token_and_log_are_private(tmp_path: Path) -> None:
    """Finding 23.2: control.token in a PHI_HOME made 0700; the control log 0600."""
    home = tmp_path / "home"
    control_token(home, None)
    log = ControlLog(path=home / "control.log")
    anyio.run(lambda: log.record("started"))
    assert (mode(home), modes(home)) == (0o700, {"control.log": 0o600, "control.token": 0o600})
    log.path.chmod(0o666)  # as an older phi left it: closed on the next line written
    anyio.run(lambda: log.record("paused"))
    assert mode(log.path) == 0o600


def test_a_control_token_others_can_read_is_refused(phi_home: Path) -> None:
    """Finding 23.2: a control.token others could read was used without a word."""
    path = phi_home / "control.token"
    path.write_text("a-token-someone-else-may-have-read\n")
    path.chmod(0o640)  # the group alone is enough to refuse it
    with pytest.raises(InsecureFile) as refused:
        control_token(phi_home, None)
    assert f"run `chmod 600 {path}`" in str(refused.value)
    assert "\n" not in str(refused.value)


def _jwt(claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'HS256'})}.{part(claims)}.c2ln"


def _pds() -> FastAPI:
    """Just enough of a PDS to log in to: `createSession` answers one account."""
    pds = FastAPI()
    did = "did:plc:privatefiles"

    @pds.post("/xrpc/com.atproto.server.createSession")
    async def create_session() -> dict[str, str]:
        exp = int(time.time()) + 3600
        return {
            "did": did,
            "handle": "phi.test",
            "accessJwt": _jwt({"sub": did, "exp": exp, "scope": "com.atproto.access"}),
            "refreshJwt": _jwt({"sub": did, "exp": exp, "scope": "com.atproto.refresh"}),
        }

    return pds


async def test_the_session_file_is_0600_and_an_open_one_is_refused(phi_home: Path) -> None:
    """Finding 23.2: the session was written to a 0644 temporary file first, and a session
    file others could read was used."""
    session_file = phi_home / "sessions" / "phi.test.session"
    async with serve_control(_pds(), port=0) as url:
        config = ClientConfig(
            pds_url=url, handle="phi.test", password="app-pass", session_file=session_file
        )
        async with PhiClient(config) as client:
            assert client.me.did == "did:plc:privatefiles"
        assert (mode(session_file.parent), modes(session_file.parent)) == (
            0o700,
            {"phi.test.session": 0o600},
        )
        session_file.chmod(0o644)
        with pytest.raises(InsecureFile, match=r"run `chmod 600 [^`]*phi\.test\.session`"):
            async with PhiClient(config):
                pass


# -- the sandbox's state ---------------------------------------------------------------------

_LAUNCHER = """\
import json, os, pathlib, sys, time
cast = pathlib.Path(os.environ["PHI_SANDBOX_CAST_FILE"])
closed = "http://127.0.0.1:9"  # nothing answers: the network never looks healthy
urls = {f"{name}_url": closed for name in ("plc", "pds", "appview", "hook")}
cast.write_text(json.dumps({**urls, "pid": os.getpid(), "accounts": {}}))
pathlib.Path(os.environ["TMPDIR"], "pds.sqlite").write_text("the PDS's data")
pid = cast.with_name("launcher.pid")
deadline = time.monotonic() + 30
while not pid.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(0.2)  # the pid file is replaced whole, but give the write a moment anyway
for path in (cast, pid, pathlib.Path(os.environ["TMPDIR"], "pds.sqlite")):
    print("MODE", path.name, oct(path.stat().st_mode & 0o777), flush=True)
sys.exit(3)
"""


def _free_base_port() -> int:
    """A port with the three above it free too, for the sandbox's four services."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1])
        if base < 65000 and all(_free(base + n) for n in range(4)):
            return base


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class _LocalLauncher(Sandbox):
    """The real start-up path, with a Python stand-in for the Node launcher (no install)."""

    def __init__(self, config: SandboxConfig, launcher_dir: Path) -> None:
        super().__init__(config)
        self.launcher_dir = launcher_dir

    async def install(self) -> Toolchain:
        return Toolchain(
            node=Path(sys.executable), launcher_dir=self.launcher_dir, installed_now=False
        )


async def test_the_sandbox_state_and_what_its_launcher_writes_are_private(
    tmp_path: Path,
) -> None:
    """Finding 23.2: the launcher's log and pid file were 0644, and the cast file with the
    accounts' app passwords was written with the process's umask."""
    launcher_dir = tmp_path / "launcher"
    launcher_dir.mkdir()
    (launcher_dir / "launcher.mjs").write_text(_LAUNCHER)
    state = tmp_path / "home" / "sandbox"
    config = SandboxConfig(
        cache_dir=tmp_path / "cache", state_dir=state, base_port=_free_base_port()
    )
    with pytest.raises(PhiError, match="exited with code 3") as failed:
        await _LocalLauncher(config, launcher_dir).up()
    reported = [line.split()[1:] for line in str(failed.value).splitlines() if "MODE" in line]
    assert reported == [
        ["cast.json", "0o600"],
        ["launcher.pid", "0o600"],
        ["pds.sqlite", "0o600"],
    ]
    assert (mode(state.parent), mode(state)) == (0o700, 0o700)
    assert modes(state) == {"launcher.log": 0o600, "tmp": 0o700, "tmp/pds.sqlite": 0o600}


# -- secret files others can read are refused ------------------------------------------------


def test_an_mcp_token_file_others_can_read_is_refused_by_the_cli(tmp_path: Path) -> None:
    """Finding 23.2: `phi mcp --http --token-file` served with a 0644 token file."""
    tokens, db = tmp_path / "tokens", tmp_path / "memory.db"
    tokens.write_text(f"team-a- {'t' * 32}\n")
    tokens.chmod(0o644)
    done = subprocess.run(
        [PHI, "mcp", "--http", "--port", "0", "--token-file", str(tokens), "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=30,  # a refusal is immediate; the old code served until killed here
        check=False,
    )
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr)
    assert f"(mode 0644); run `chmod 600 {tokens}` and try again" in line
    assert not db.exists()  # refused before anything was opened


SECRET_SETTINGS = sorted(
    f"PHI_{name.upper()}"
    for name, field in Settings.model_fields.items()
    if field.annotation is not None and SecretStr in getattr(field.annotation, "__args__", ())
)
SECRET_NEEDS = {"PHI_WEB_SEARCH_KEY": "PHI_WEB_SEARCH_PROVIDER=brave\n"}
"""What a secret setting needs beside it to be valid (a search key alone names no API)."""


@pytest.mark.parametrize(
    "line",
    [f"{SECRET_NEEDS.get(name, '')}{name}=s3cret-value" for name in SECRET_SETTINGS]
    + ["OPENAI_API_KEY=sk-abc", "export PHI_MEMORY_URL='postgresql://phi:pw@db.example/phi'"],
)
def test_a_dotenv_with_a_secret_others_can_read_is_refused(
    line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 23.2 (`.env`, decided: refused when it holds a secret): a 0644 `.env` with
    a password, token, key or a URL with a password stops every command, in one line."""
    assert len(SECRET_SETTINGS) >= 4  # app password, web, control, embedder key
    monkeypatch.chdir(tmp_path)
    env = tmp_path / ".env"
    env.write_text(f"PHI_HANDLE=phi.test\n{line}\n")
    env.chmod(0o644)
    done = CliRunner().invoke(app, ["runs", "list"])
    assert done.exit_code == 2, done.output
    assert "run `chmod 600 " in one_error_line(done.output)
    env.chmod(0o600)
    assert CliRunner().invoke(app, ["runs", "list"]).exit_code == 0


def test_a_dotenv_without_secrets_may_stay_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = tmp_path / ".env"
    env.write_text("# PHI_APP_PASSWORD=x\nPHI_HANDLE=phi.test\nPHI_APP_PASSWORD=\nPHI_PORT=1\n")
    env.chmod(0o644)
    done = CliRunner().invoke(app, ["runs", "list"])
    assert done.exit_code == 0, done.output


# -- the primitives ----------------------------------------------------------------------------


def test_private_file_creates_0600_and_closes_an_existing_file(tmp_path: Path) -> None:
    made = private_file(tmp_path / "a" / "new.db")
    assert (mode(made.parent), mode(made), made.read_bytes()) == (0o700, 0o600, b"")
    old = tmp_path / "old.db"
    old.write_bytes(b"kept")
    Path(f"{old}-wal").write_bytes(b"")
    private_file(old)
    assert (old.read_bytes(), mode(old), mode(Path(f"{old}-wal"))) == (b"kept", 0o600, 0o600)


def test_private_mkdirs_leaves_existing_folders_alone(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    private_mkdirs(tmp_path / "x" / "y")
    assert (mode(tmp_path), mode(tmp_path / "x"), mode(tmp_path / "x" / "y")) == (
        0o755,
        0o700,
        0o700,
    )


def test_the_chmod_in_the_refusal_survives_a_path_with_a_space(tmp_path: Path) -> None:
    message = str(InsecureFile(tmp_path / "my tokens", 0o644))
    assert f"run `chmod 600 '{tmp_path}/my tokens'`" in message
