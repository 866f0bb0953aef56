from typer.testing import CliRunner

from phi.cli import app


def test_help_lists_the_command_groups() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "memory" in result.output
    assert "bench" in result.output
