"""Bad input to `judge` and `annotate` gets one error line and exit status 2, never a traceback.

The inputs are drawn by hypothesis (seeded) from what users actually type wrong: a file where
a folder belongs, a folder that does not exist, a pattern that matches nothing, numbers out of
range or not numbers, a judge that does not exist, half of a price pair.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.helpers import make_run
from tide_bench.annotation import AssignmentOptions, build_annotation
from tide_bench.cli.main import cli

SETTINGS = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("places")
    run = make_run(root / "run")
    other = make_run(root / "other", "Other reply.")
    empty = root / "empty"
    empty.mkdir()
    broken = root / "broken"
    broken.mkdir()
    (broken / "run.json").write_text("{not json")
    bad_yaml = root / "judge.yaml"
    bad_yaml.write_text("provider: [unclosed\n")
    ann = root / "ann"
    build_annotation([run, other], ann, AssignmentOptions(per_rater=2, raters=2, overlap=2, repeats=0))
    (ann / "returns").mkdir()
    (ann / "returns" / "garbage.json").write_text("{ratings: oops")
    return {
        "run": run,
        "run.json": run / "run.json",
        "missing": root / "missing",
        "empty": empty,
        "broken": broken,
        "bad_yaml": bad_yaml,
        "ann": ann,
        "assignment": ann / "assignment.json",
        "garbage": ann / "returns" / "garbage.json",
        "pattern": root / "nothing" / "*.json",
        "root": root,
    }


def assert_clean(result: Result, allowed: tuple[int, ...] = (0, 2)) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)  # no traceback
    assert result.exit_code in allowed, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        errors = [line for line in result.output.splitlines() if line.lower().startswith("error")]
        assert len(errors) == 1, result.output  # one line says what is wrong (a hint may follow)


NUMBER = st.sampled_from(["-1", "0", "1", "2.5", "abc", "nan", "inf", "1e400", ""])


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _int(text: str) -> int | None:
    return int(text) if text.lstrip("-").isdigit() else None


@SETTINGS
@given(
    target=st.sampled_from(["run", "run", "run.json", "missing", "empty", "broken", None]),
    judge=st.sampled_from(["claude-sonnet", "claude-sonnet", "nope", "bad_yaml", "local", "openai-gpt"]),
    max_cost=st.none() | NUMBER,
    concurrency=st.none() | NUMBER,
    price_in=st.none() | NUMBER,
    mode=st.sampled_from(["sync", "batch", "fast"]),
    probes=st.booleans(),
)
def test_judge_bad_input(
    places: dict[str, Path],
    target: str | None,
    judge: str,
    max_cost: str | None,
    concurrency: str | None,
    price_in: str | None,
    mode: str,
    probes: bool,
) -> None:
    args = [
        "judge",
        "--out",
        str(places["root"] / "j"),
        "--dry-run",
        "--mode",
        mode,
        "--judge",
        str(places[judge]) if judge in places else judge,
    ]
    args += [str(places[target])] if target else []
    for flag, value in (("--max-cost", max_cost), ("--concurrency", concurrency), ("--price-in", price_in)):
        args += [flag, value] if value is not None else []
    args += ["--probes"] if probes else []
    cost = None if max_cost is None else _float(max_cost)
    bad = (
        (max_cost is not None and (cost is None or not cost >= 0))
        or (concurrency is not None and ((_int(concurrency) or 0) < 1))
        or price_in is not None  # half of a price pair
        or mode == "fast"
        or judge in ("nope", "bad_yaml", "local")  # unknown, malformed, or missing its --model
        or (not probes and target != "run")
    )
    result = CliRunner().invoke(cli, args, env={"ANTHROPIC_API_KEY": ""})
    assert_clean(result)
    assert result.exit_code == (2 if bad else 0), (args, result.output)


def test_judge_refuses_a_run_json_path_with_a_hint(places: dict[str, Path]) -> None:
    result = CliRunner().invoke(
        cli, ["judge", str(places["run.json"]), "--out", str(places["root"] / "j"), "--dry-run"]
    )
    assert (
        result.exit_code == 2
        and "is a file, not a run directory" in result.output
        and str(places["run"]) in result.output
    )


def test_judge_refuses_a_negative_budget(places: dict[str, Path]) -> None:
    result = CliRunner().invoke(
        cli,
        ["judge", str(places["run"]), "--out", str(places["root"] / "jn"), "--max-cost", "-1"],
        env={"ANTHROPIC_API_KEY": "sk-x-0123456789"},
    )
    assert result.exit_code == 2 and "--max-cost must be a non-negative" in result.output


@SETTINGS
@example(runs=["run"], numbers=["0", "2", "2", "0"])  # zero items per rater
@example(runs=["run"], numbers=["2", "2", "2", "-1"])  # negative repeats
@given(
    runs=st.lists(
        st.sampled_from(["run", "run", "run", "run.json", "missing", "empty", "broken"]), min_size=1, max_size=2
    ),
    numbers=st.lists(st.sampled_from(["-2", "0", "1", "2", "3", "7", "50", "x"]), min_size=4, max_size=4),
)
def test_annotate_build_bad_input(places: dict[str, Path], runs: list[str], numbers: list[str]) -> None:
    args = ["annotate", "build", *(str(places[r]) for r in runs), "--out", str(places["root"] / "build")]
    for flag, value in zip(("--per-rater", "--raters", "--overlap", "--repeats"), numbers, strict=True):
        args += [flag, value]
    result = CliRunner().invoke(cli, args)
    assert_clean(result)
    per_rater, raters, overlap, repeats = (_int(n) or -99 if n != "0" else 0 for n in numbers)  # "x" -> -99: never sane
    sane = per_rater >= 1 and raters >= 1 and 1 <= overlap <= raters and 0 <= repeats <= per_rater
    if result.exit_code == 0:  # a plan is written only from sane numbers and real runs
        assert sane and set(runs) == {"run"}, (numbers, runs)


@SETTINGS
@given(
    files=st.lists(
        st.sampled_from(["missing", "empty", "garbage", "pattern", "ann", "run.json", "assignment"]),
        min_size=1,
        max_size=3,
    ),
    assignment=st.sampled_from([None, "assignment", "missing", "garbage", "run.json"]),
)
def test_annotate_collect_bad_input(places: dict[str, Path], files: list[str], assignment: str | None) -> None:
    args = ["annotate", "collect", *(str(places[f]) for f in files), "--out", str(places["root"] / "collected.csv")]
    args += ["--assignment", str(places[assignment])] if assignment else []
    assert_clean(CliRunner().invoke(cli, args), allowed=(0, 1, 2))


def test_collect_of_a_non_assignment_is_one_clear_error(places: dict[str, Path]) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "annotate",
            "collect",
            str(places["garbage"]),
            "--assignment",
            str(places["run.json"]),
            "--out",
            str(places["root"] / "c.csv"),
        ],
    )
    assert result.exit_code == 2 and "not an assignment.json written by" in result.output
    assert json.loads(places["run.json"].read_text())["kind"] == "tide-bench-run"  # read, never changed
