"""`tide-bench annotate plan`: the alt-test's power for an annotation design, by seeded simulation."""

from __future__ import annotations

from click.testing import CliRunner

from tide_bench.annotation.assign import AssignmentOptions
from tide_bench.annotation.plan import PlanOptions, simulate
from tide_bench.cli.main import cli


def test_the_default_design_passes_a_human_like_judge_at_least_80_percent_of_the_time() -> None:
    result = simulate(PlanOptions(replications=200))
    assert (result["raters"], result["items_per_rater"]) == (AssignmentOptions.raters, AssignmentOptions.per_rater)
    assert result["pass_rate"] >= 0.8 and result["meets_target"]


def test_the_old_default_of_40_items_per_rater_is_underpowered() -> None:
    result = simulate(PlanOptions(per_rater=40, replications=200))
    assert result["pass_rate"] < 0.4 and not result["meets_target"]  # the statistics review's 22.5 %
    noisy = simulate(PlanOptions(judge_sd=1.2, replications=50))
    assert noisy["pass_rate"] < 0.1  # a judge much noisier than a person does not pass


def test_cli_plan_reports_the_rate_with_its_error() -> None:
    out = CliRunner().invoke(cli, ["annotate", "plan", "--raters", "5", "--items", "40", "--replications", "50"])
    assert out.exit_code == 0, out.output
    assert "5 raters x 40 items" in out.output and "MC se" in out.output and "below the 80 % target" in out.output
    bad = CliRunner().invoke(cli, ["annotate", "plan", "--raters", "3", "--overlap", "4"])
    assert bad.exit_code == 2 and "overlap" in bad.output


def test_a_plan_no_panel_could_rate_is_refused_before_it_is_simulated() -> None:
    """Found attacking the calibration protocol's planning (issue 43, item 7): 100,000 raters or
    100,000,000 items asked for tens of GB (a traceback) or ran for ever."""
    for args in (
        ["--raters", "100000", "--items", "1"],
        ["--items", "100000000"],
        ["--raters", "2000", "--items", "2000"],
    ):
        out = CliRunner().invoke(cli, ["annotate", "plan", *args, "--replications", "10"])
        assert out.exit_code != 0 and "simulated ratings per study" in out.output, out.output
        assert "Traceback" not in out.output and not isinstance(out.exception, MemoryError)
