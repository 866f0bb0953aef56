"""Every setting and every file phi reads: garbage in gives one line and exit 2, never a traceback.

The list of settings is read from `Settings` itself, so a setting added later is covered
without anyone remembering this file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from phi.cli import app
from phi.config import Settings

GARBAGE = ["[not json", "{}", "-1", "nan", "x" * 300, "[1, 2", '["a", 3]', "\x7f\x01"]
"""Values a hand-edited environment or `.env` really holds: half JSON, a wrong type, control
characters, a number where a name goes and the reverse."""

SETTINGS = sorted(Settings.model_fields)


def _check_one_line(words: list[str], env: dict[str, str], *, cwd: Path) -> None:
    result = CliRunner().invoke(app, words, env=env, catch_exceptions=True)
    # SystemExit is how typer ends a command; any other exception is a traceback for a user.
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        env,
        repr(result.exception),
    )
    assert result.exit_code in (0, 1, 2), (env, result.output)
    if result.exit_code == 2:
        assert result.output.startswith("error: "), (env, result.output)
        assert result.output.count("\n") == 1, (env, result.output)


@pytest.mark.parametrize("name", SETTINGS)
def test_a_garbage_setting_is_one_line(
    name: str, phi_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for value in GARBAGE:
        env = {f"PHI_{name.upper()}": value}
        if name == "home":
            env["PHI_HOME"] = str(tmp_path / value.replace("/", "_")[:50])
        _check_one_line(["runs", "list"], env, cwd=tmp_path)


def test_a_list_setting_that_is_not_json_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHI_WEB_TRUSTED_HOSTS", "[example.org")
    result = CliRunner().invoke(app, ["runs", "list"])
    assert result.exit_code == 2
    assert result.output.startswith("error: PHI_WEB_TRUSTED_HOSTS='[example.org': not a valid")
    assert result.output.count("\n") == 1


def test_a_comma_separated_list_setting_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHI_WEB_TRUSTED_HOSTS", "phi.example.org, other.example.org")
    assert Settings().web_trusted_hosts == ["phi.example.org", "other.example.org"]


def test_a_dotenv_that_is_not_utf8_is_one_line(
    phi_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_bytes(b"PHI_POLL_SECONDS=5\nPHI_HANDLE=\xff\xfe\n")
    result = CliRunner().invoke(app, ["runs", "list"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    assert ".env" in result.output


def test_a_dotenv_with_a_bad_value_names_the_variable(
    phi_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("PHI_WEB_TRUSTED_HOSTS=[oops\n")
    result = CliRunner().invoke(app, ["runs", "list"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: PHI_WEB_TRUSTED_HOSTS=") and (
        result.output.count("\n") == 1
    )


def test_a_dotenv_that_is_a_folder_is_one_line(
    phi_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").mkdir()
    result = CliRunner().invoke(app, ["runs", "list"])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code in (0, 2), result.output


MCP_FILES = {
    "bad.toml": b"[[servers]\nname=",
    "not-utf8.toml": b"\xff\xfe[[servers]]",
    "shape.json": b'{"servers": [{"name": 3}]}',
    "list.json": b"[1, 2, 3]",
    "deep.json": b"[" * 100_000,
}


@pytest.mark.parametrize("name", sorted(MCP_FILES))
def test_a_broken_mcp_servers_file_is_one_line(name: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    servers = tmp_path / name
    servers.write_bytes(MCP_FILES[name])
    env = {
        **os.environ,
        "PHI_HOME": str(tmp_path / "home"),
        "PHI_MCP_SERVERS": str(servers),
        "PHI_HANDLE": "phi.test",
        "PHI_APP_PASSWORD": "not-used",
        "PHI_PDS_URL": "http://127.0.0.1:9",  # nothing listens: the file must fail first
    }
    phi = str(Path(sys.executable).parent / "phi")
    result = subprocess.run(
        [phi, "run"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(servers) in errors[0], result.stderr


@pytest.mark.parametrize("content", [None, b"\xff\xfe persona", "folder"])
def test_a_broken_personality_file_is_one_line(content: bytes | str | None, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    persona = tmp_path / "persona.md"
    if isinstance(content, bytes):
        persona.write_bytes(content)
    elif content == "folder":
        persona.mkdir()
    env = {
        **os.environ,
        "PHI_HOME": str(tmp_path / "home"),
        "PHI_PERSONALITY_FILE": str(persona),
        "PHI_HANDLE": "phi.test",
        "PHI_APP_PASSWORD": "not-used",
        "PHI_PDS_URL": "http://127.0.0.1:9",
    }
    phi = str(Path(sys.executable).parent / "phi")
    result = subprocess.run(
        [phi, "run"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(persona) in errors[0], result.stderr


def test_an_empty_home_is_refused_not_taken_as_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tmp_path.chmod(0o755)
    monkeypatch.setenv("PHI_HOME", "")
    result = CliRunner().invoke(app, ["runs", "list"])
    assert result.exit_code == 2
    assert result.output.startswith("error: PHI_HOME='': empty") and result.output.count("\n") == 1
    assert tmp_path.stat().st_mode & 0o777 == 0o755


def test_the_setting_named_in_an_error_is_described_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding W5 of the second newcomer walkthrough: the description was cut at the first
    line break of the field's docstring (`... (`*`: any), e.g. its)`)."""
    monkeypatch.setenv("PHI_WEB_TRUSTED_HOSTS", "[1")
    result = CliRunner().invoke(app, ["runs", "list"])
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert result.output.rstrip("\n").endswith(
        "(the setting: `Host` names `phi web` answers besides the loopback names (`*`: any),"
        " e.g. its public name when it binds a non-loopback address.)"
    ), result.output


SEARCH_KEY = "tvly-never-printed-0123456789"

SEARCH_ERRORS = [
    (
        {"PHI_WEB_SEARCH_PROVIDER": "brave"},
        "error: PHI_WEB_SEARCH_PROVIDER='brave': brave needs an API key: set PHI_WEB_SEARCH_KEY",
    ),
    (
        {"PHI_WEB_SEARCH_PROVIDER": "tavily", "PHI_WEB_SEARCH_URL": "http://127.0.0.1:9"},
        "error: PHI_WEB_SEARCH_PROVIDER='tavily': tavily needs an API key: set PHI_WEB_SEARCH_KEY",
    ),
    (
        {"PHI_WEB_SEARCH_PROVIDER": "searxng", "PHI_WEB_SEARCH_KEY": SEARCH_KEY},
        "error: PHI_WEB_SEARCH_PROVIDER='searxng': searxng needs PHI_WEB_SEARCH_URL "
        "(there is no public one)",
    ),
    (
        {"PHI_WEB_SEARCH_PROVIDER": "json"},
        "error: PHI_WEB_SEARCH_PROVIDER='json': json needs PHI_WEB_SEARCH_URL "
        "(there is no public one)",
    ),
    (
        {"PHI_WEB_SEARCH_KEY": SEARCH_KEY},
        "error: PHI_WEB_SEARCH_PROVIDER: unset while PHI_WEB_SEARCH_KEY is set; say which API "
        "the key is for (brave, tavily, searxng or json)",
    ),
    (
        {"PHI_WEB_SEARCH_PROVIDER": "bing", "PHI_WEB_SEARCH_KEY": SEARCH_KEY},
        "error: PHI_WEB_SEARCH_PROVIDER='bing': Input should be 'brave', 'tavily', 'searxng' "
        "or 'json'",
    ),
    (
        {"PHI_WEB_SEARCH_PROVIDER": "searxng", "PHI_WEB_SEARCH_URL": "searx.local:8888"},
        "error: PHI_WEB_SEARCH_URL='searx.local:8888': not an http(s) URL; give one like "
        "https://host/path",
    ),
]


@pytest.mark.parametrize(("env", "starts"), SEARCH_ERRORS)
def test_a_web_search_provider_missing_its_key_or_url_is_one_line(
    env: dict[str, str], starts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["runs", "list"], env=env)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(starts + " (the setting: "), result.output
    assert result.output.count("\n") == 1
    assert SEARCH_KEY not in result.output


def test_an_empty_web_search_setting_is_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text(
        "PHI_WEB_SEARCH_PROVIDER=\nPHI_WEB_SEARCH_KEY=\nPHI_WEB_SEARCH_URL=\n"
    )
    settings = Settings()
    assert (settings.web_search_provider, settings.web_search_key, settings.web_search_url) == (
        None,
        None,
        None,
    )
