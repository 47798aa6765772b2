"""The CLI: help texts, exit codes, and no tracebacks for user errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tide_bench.cli.main import cli
from tide_bench.tasks.registry import tasks_path


@pytest.mark.parametrize("command", [[], ["data", "validate"], ["eval"], ["demo"], ["tasks-path"]])
def test_every_command_has_help(command: list[str]) -> None:
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0
    assert ("Usage:" in result.output and len(result.output) > 200) or command == ["tasks-path"]


def test_data_validate_sample() -> None:
    result = CliRunner().invoke(cli, ["data", "validate", "--data", "sample"])
    assert result.exit_code == 0, result.output
    assert "test" in result.output and "12" in result.output and "OK" in result.output


def test_data_validate_json_and_failure_exit(sample_copy: Path) -> None:
    (sample_copy / "conversations" / "1_conversations.json").write_text("{")
    result = CliRunner().invoke(cli, ["data", "validate", "--data", str(sample_copy), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["n_errors"] == 1 and "1_conversations.json:1" in report["problems"][0]["text"]


def test_user_error_has_no_traceback() -> None:
    result = CliRunner().invoke(cli, ["data", "validate"])
    assert result.exit_code == 2
    assert "no TIDE data source chosen" in result.output and "Traceback" not in result.output


def test_tasks_path_points_at_the_yamls() -> None:
    result = CliRunner().invoke(cli, ["tasks-path"])
    assert Path(result.output.strip()) == tasks_path()
    assert (tasks_path() / "tide_empathy" / "tide_empathy.yaml").is_file()
