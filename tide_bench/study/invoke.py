"""``run_study``: one invocation of a study, from the plan to the board.

The GPU stages of every cell go to an executor's workers (:mod:`.executors`, :mod:`.worker`),
which carry them out with :class:`~tide_bench.study.runner.StudyRunner`; the study-level stages
(the judges, the submissions, the board and the report) then run here, in one study process at a
time. Kept apart from :mod:`.runner` so that the workers, which import the runner, are not
imported by it (no import cycle inside the package: tests/project/test_layering.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tide_bench.study.plan import CELL_STAGES, inside, make_plan
from tide_bench.study.runner import FINISH_CLAIM, Echo, StudyResult, StudyRunner, identity, read_failure
from tide_bench.study.spec import StudySpec


def run_study(
    spec: StudySpec,
    out: str | Path,
    *,
    resolve_model: Callable[[str], str] = identity,
    echo: Echo = print,
    report: bool = True,
    progress: bool = True,
    executor: str = "local",
    workers: int | None = None,
    wait: bool = True,
    options: Any = None,
) -> StudyResult:
    """Run every pending stage of the study in ``out`` on ``executor``, then judge, submit, and
    build its board and report.

    ``executor``: ``local`` (default; one worker per visible GPU, ``workers`` to choose; one
    worker runs in this process), ``slurm`` (one job array task per cell, through submitit) or
    ``ray``. Several study processes may share ``out``: cells are claimed one at a time
    (:mod:`.claims`), and the final stages run in one process at a time. ``wait=False``
    (Slurm, Ray) submits the cells and returns; rerunning the same call collects them."""
    from tide_bench.study.executors import run_cells
    from tide_bench.study.worker import ExecContext

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    inside(out, out / "cells")
    ctx = ExecContext.create(spec, out, resolve_model, echo, options)
    for warning in spec.warnings():
        echo(f"[study] {warning}")
    plan = make_plan(spec, out)
    before = {f"{s.cell.id}/{s.stage}" for s in plan.stages if s.done}
    result = StudyResult(plan)
    if any(s.stage in CELL_STAGES for s in plan.pending()):
        run_cells(ctx, plan, executor, workers=workers, wait=wait, progress=progress, result=result)
        if result.submitted and not wait:
            return result
    with ctx.store.waiting(FINISH_CLAIM, on_wait=lambda h: echo(f"[study] waiting for {h.get('worker')} to finish")):
        plan = make_plan(spec, out)
        for cell in plan.cells:
            why = read_failure(out, cell, ctx.run_id)
            if why:
                result.failed[cell.id] = why
        result.plan = plan
        runner = StudyRunner(spec, out, resolve_model, echo, worker=ctx.worker)
        runner.finish(plan, result, report=report)
    done_now = {f"{s.cell.id}/{s.stage}" for s in make_plan(spec, out).stages if s.done}
    result.skipped = sorted(before)
    result.ran = [label for label in (f"{s.cell.id}/{s.stage}" for s in plan.stages) if label in done_now - before]
    result.unfinished = sorted(
        {s.cell.id for s in result.plan.stages if not s.done and s.stage in CELL_STAGES} - set(result.failed)
    )
    return result
