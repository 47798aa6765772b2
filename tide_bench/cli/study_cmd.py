"""``tide-bench study``: the paper's grid as one resumable command."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from tide_bench.cli.options import out_option
from tide_bench.core.extras import require_eval


@click.command("study")
@click.argument("study_file", type=click.Path(path_type=Path))
@out_option("Output folder (default: studies-output/<name>). Rerunning into it resumes.", required=False, default=None)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan (cells, stages to run or skip, time and judge cost estimates) and stop.",
)
@click.option("--no-report", is_flag=True, help="Skip the board and the report at the end.")
@click.option(
    "--executor",
    type=click.Choice(["local", "slurm", "ray"]),
    default="local",
    show_default=True,
    help="Where the cells' fine-tuning and generation run: local (one worker per visible GPU), slurm (one "
    "job array task per cell, through submitit, with the study file's resources), ray (one Ray task per cell).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="--executor local: how many workers (default: one per visible GPU, or one on a CPU).",
)
@click.option(
    "--gpus",
    type=click.IntRange(min=0),
    default=None,
    help="GPUs to use (local) or to plan for (--dry-run's wall time; Slurm: the queue's share). "
    "Default: the visible ones.",
)
@click.option(
    "--rates",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="--dry-run: measured rates, e.g. the results.json of benchmarks/gpu_check.sh (default: this study's "
    "own measurements, then the stated assumptions of studies/rates/assumed.yaml).",
)
@click.option(
    "--no-wait",
    is_flag=True,
    help="--executor slurm: submit the cells and return; rerun the same command to collect them, judge and report.",
)
@click.option(
    "--yes",
    is_flag=True,
    help="Confirm sending the conversations to a hosted judge without a prompt: needed on the first run into --out "
    "when no one is at a terminal (docs/privacy.md).",
)
def study_cmd(
    study_file: Path,
    out: Path | None,
    dry_run: bool,
    no_report: bool,
    executor: str,
    workers: int | None,
    gpus: int | None,
    rates: Path | None,
    no_wait: bool,
    yes: bool,
) -> None:
    """Run a study: every model zero-shot and fine-tuned, plus the TIDE reference.

    STUDY_FILE lists models, conditions, data and split, the judge and outputs (schema in
    docs/study.md; studies/pursuit_of_empathy.yaml is the paper's grid). Each cell runs
    finetune -> eval -> judge -> submit; a finished stage is never redone unless something it
    depends on changed, so an interrupted study resumes where it stopped, and a changed LoRA
    setting redoes only the fine-tuned cells. At the end the study's board is built and the
    report written (zero-shot vs fine-tuned gains with paired CIs, gain vs size, per-scenario
    gains, distance to the reference).

    Several workers, machines or study processes can share one output folder: each cell is
    claimed by one worker at a time (a dead worker's cell is taken over), judging runs once
    over all cells, and fine-tuning resumes from its latest checkpoint (docs/scaling.md).

    A hosted judge receives every conversation it rates: stderr says so before the study starts,
    and the first run into --out must be confirmed (at a terminal, or with --yes).

    \b
    Examples:
      tide-bench study studies/demo.yaml --dry-run
      tide-bench study studies/pursuit_of_empathy.yaml --out studies-output/poe
      tide-bench study studies/pursuit_of_empathy.yaml --dry-run --gpus 8 --rates gpu-check-out/results.json
      tide-bench study studies/pursuit_of_empathy.yaml --executor slurm --out /scratch/$USER/poe
    """
    from tide_bench.demo.model import resolve_model
    from tide_bench.study import format_plan, load_study, make_plan, run_study
    from tide_bench.study.worker import ExecOptions

    spec = load_study(study_file)
    out = out or Path("studies-output") / spec.name
    plan = make_plan(spec, out)
    click.echo(format_plan(plan, executor=executor, gpus=gpus, rates_file=str(rates) if rates else None))
    if dry_run:
        return
    if any(s.stage in ("finetune", "eval") for s in plan.pending()):
        require_eval("tide-bench study (its fine-tuning and generation stages)")
    confirm_judge(plan, out, yes)
    options = ExecOptions(gpus=gpus, cluster=os.environ.get("TIDE_BENCH_SUBMITIT_CLUSTER") or None)
    result = run_study(
        spec,
        out,
        resolve_model=resolve_model,
        echo=click.echo,
        report=not no_report,
        executor=executor,
        workers=workers,
        wait=not no_wait,
        options=options,
    )
    if result.submitted and no_wait:
        click.echo(f"\nsubmitted: {', '.join(result.submitted)}; rerun the same command to collect, judge and report")
        return
    click.echo(f"\nstudy {spec.name}: {len(result.ran)} stage(s) run, {len(result.skipped)} already done")
    for cell, message in result.failed.items():
        click.echo(f"FAILED {cell}: {message}", err=True)
    if result.unfinished:
        click.echo(f"UNFINISHED (rerun to resume): {', '.join(result.unfinished)}", err=True)
    if result.site:
        click.echo(f"board:  {result.site}")
    if result.report:
        click.echo(f"report: {result.report}")
    if result.failed or result.unfinished:
        raise SystemExit(1)


def confirm_judge(plan: Any, out: Path, yes: bool) -> None:
    """The notice before a study's judge stage sends conversations to a hosted judge, and the first
    run's confirmation (:mod:`tide_bench.core.hosted`), before any stage runs."""
    import sys

    from tide_bench.core.hosted import confirm_hosted
    from tide_bench.study.estimate import judge_sends

    for sends in judge_sends(plan):  # one notice (and first-run confirmation) per judge server
        confirm_hosted(
            Path(out),
            **sends,
            yes=yes,
            interactive=sys.stdin.isatty() and sys.stderr.isatty(),
            echo=lambda text: click.echo(text, err=True),
            ask=lambda question: click.confirm(question, err=True),
        )
