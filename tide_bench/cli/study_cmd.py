"""``tide-bench study``: the paper's grid as one resumable command."""

from __future__ import annotations

from pathlib import Path

import click

from tide_bench.core.extras import require_eval


@click.command("study")
@click.argument("study_file", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Output folder (default: studies-output/<name>). Rerunning into it resumes.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan (cells, stages to run or skip, time and judge cost estimates) and stop.",
)
@click.option("--no-report", is_flag=True, help="Skip the board and the report at the end.")
def study_cmd(study_file: Path, out: Path | None, dry_run: bool, no_report: bool) -> None:
    """Run a study: every model zero-shot and fine-tuned, plus the TIDE reference.

    STUDY_FILE lists models, conditions, data and split, the judge and outputs (schema in
    docs/study.md; studies/pursuit_of_empathy.yaml is the paper's grid). Each cell runs
    finetune -> eval -> judge -> submit; a finished stage is never redone unless something it
    depends on changed, so an interrupted study resumes where it stopped, and a changed LoRA
    setting redoes only the fine-tuned cells. At the end the study's board is built and the
    report written (zero-shot vs fine-tuned gains with paired CIs, gain vs size, per-scenario
    gains, distance to the reference).

    \b
    Examples:
      tide-bench study studies/demo.yaml --dry-run
      tide-bench study studies/pursuit_of_empathy.yaml --out studies-output/poe
    """
    from tide_bench.demo.model import resolve_model
    from tide_bench.study import format_plan, load_study, make_plan, run_study

    spec = load_study(study_file)
    out = out or Path("studies-output") / spec.name
    plan = make_plan(spec, out)
    click.echo(format_plan(plan))
    if dry_run:
        return
    if any(s.stage in ("finetune", "eval") for s in plan.pending()):
        require_eval("tide-bench study (its fine-tuning and generation stages)")
    result = run_study(spec, out, resolve_model=resolve_model, echo=click.echo, report=not no_report)
    click.echo(f"\nstudy {spec.name}: {len(result.ran)} stage(s) run, {len(result.skipped)} already done")
    for cell, message in result.failed.items():
        click.echo(f"FAILED {cell}: {message}", err=True)
    if result.site:
        click.echo(f"board:  {result.site}")
    if result.report:
        click.echo(f"report: {result.report}")
    if result.failed:
        raise SystemExit(1)
