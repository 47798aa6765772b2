"""The CLI: help texts, exit codes, and no tracebacks for user errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tide_bench.cli.main import cli
from tide_bench.tasks.registry import tasks_path

# every command's --help: tests/cli/test_help_and_first_run.py walks the click group (all commands, not a list)


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


def test_tasks_path_yamls_points_at_the_yamls() -> None:
    result = CliRunner().invoke(cli, ["tasks-path", "--yamls"])
    assert Path(result.output.strip()) == tasks_path()
    assert (tasks_path() / "tide_empathy" / "tide_empathy.yaml").is_file()


def test_normalize_maps_lm_eval_spellings_to_the_command_s_own() -> None:
    from tide_bench.cli.eval_cmd import eval_cmd
    from tide_bench.cli.spellings import normalize

    args = [
        "--model_args",
        "pretrained=x",
        "--output_path=/tmp/o",
        "--batch_size",
        "4",
        "--apply_chat_template",
        "--no-chat-template",
        "--unknown_flag",
        "plain_value",
        "--",
        "--model_args",
    ]
    assert normalize(eval_cmd, args) == [
        "--model-args",
        "pretrained=x",
        "--output-dir=/tmp/o",
        "--batch-size",
        "4",
        "--chat-template",
        "--no-chat-template",
        "--unknown_flag",
        "plain_value",
        "--",
        "--model_args",
    ]


def test_lm_eval_spellings_work_in_every_command(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "--data",
            "sample",
            "--tasks",
            "tide_empathy_turn2",
            "--model_args",
            "pretrained=never-loaded",
            "--output_path",
            str(tmp_path / "r"),
            "--batch_size",
            "2",
            "--gen_kwargs",
            "max_gen_toks=4",
            "--system_instruction",
            "Be brief.",
        ],
    )
    assert result.exit_code == 2 and "has no turn-2 items" in result.output  # parsed, then refused on the data
    assert "No such option" not in result.output
    nested = CliRunner().invoke(cli, ["annotate", "build", "--per_rater", "x"])
    assert "No such option" not in nested.output and "'x' is not a valid integer" in nested.output


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--hf-hub-log-args", "push_samples_to_hub=True,public_repo=True"], "would publish TIDE dialogue"),
        (["--hf_hub_log_args", "token=hf_abc"], "unknown --hf-hub-log-args key(s): token"),
        (["--wandb-args", "project=tide"], "needs the wandb package"),
        (["--seed", "1,2"], "give one integer or four values"),
    ],
)
def test_lm_eval_pass_through_options_are_checked_before_anything_loads(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    if "wandb" in args[0] and importlib.util.find_spec("wandb"):
        pytest.skip("wandb is installed here: the missing-package message cannot be shown")
    out = tmp_path / "r"
    result = CliRunner().invoke(
        cli, ["eval", "--data", "sample", "--model-args", "pretrained=never-loaded", "--output-dir", str(out), *args]
    )
    assert result.exit_code == 2, result.output
    assert expected in result.output and "model failed to load" not in result.output
    assert not out.exists()
