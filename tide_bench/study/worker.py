"""A study worker: claims cells one at a time, most expensive first, and runs their GPU stages.

Every executor runs this same code: the local executor in this process (one worker) or in one
subprocess per GPU (``python -m tide_bench.study.worker SNAPSHOT --worker w1``), a Slurm array
task or a Ray task for exactly one cell (:func:`run_one_cell`). What a worker runs is read
from the study's *snapshot* (``<out>/.study/runs/<run id>.json``: the checked study file, the
resolved model folders and the timing settings, written by the study process), so every
worker of one invocation runs the same study whatever happens to the YAML meanwhile.

A worker stops when every cell's GPU stages are done, or failed in this invocation; while
cells it cannot take are held by live workers it waits, so that a worker that dies has its
cell taken over (:mod:`.claims`).
"""

from __future__ import annotations

import _thread
import argparse
import dataclasses
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.study.claims import HEARTBEAT_S, STALE_AFTER_S, Claim, ClaimLost, ClaimStore
from tide_bench.study.plan import CELL_STAGES, Cell, StudyPlan, make_plan
from tide_bench.study.resources import Resources
from tide_bench.study.spec import ModelSpec, StudySpec

RUNS_DIR = Path(".study") / "runs"
Echo = Callable[[str], None]


@dataclass
class ExecOptions:
    """Timing and placement settings of one invocation (tests shorten the timings)."""

    heartbeat_s: float = HEARTBEAT_S
    stale_after_s: float = STALE_AFTER_S
    poll_s: float = 2.0
    threads: int | None = None  # torch CPU threads per worker (None: the executor decides)
    cluster: str | None = None  # submitit's cluster: None (Slurm when sbatch is on PATH), "local", "debug"
    gpus: int | None = None  # GPUs to plan for / use (None: the visible ones)


@dataclass
class ExecContext:
    spec: StudySpec
    out: Path
    run_id: str
    resolve_model: Callable[[str], str]
    echo: Echo
    options: ExecOptions
    worker: str = "main"
    resolved: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(
        cls, spec: StudySpec, out: Path, resolve_model: Callable[[str], str], echo: Echo, options: Any = None
    ) -> ExecContext:
        run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        return cls(
            spec, Path(out), run_id, resolve_model, echo, options or ExecOptions(), worker=f"study-{os.getpid()}"
        )

    @property
    def store(self) -> ClaimStore:
        return ClaimStore(
            self.out,
            worker=self.worker,
            heartbeat_s=self.options.heartbeat_s,
            stale_after_s=self.options.stale_after_s,
            echo=self.echo,
        )

    def resolve(self, name: str) -> str:
        if name not in self.resolved:
            self.resolved[name] = self.resolve_model(name)
        return self.resolved[name]

    def write_snapshot(self, plan: StudyPlan) -> Path:
        """The study as every worker of this invocation will run it (models resolved here, once)."""
        for cell in plan.cells:
            if cell.model is not None:
                self.resolve(cell.model.model)
        path = self.out / RUNS_DIR / f"{self.run_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "run_id": self.run_id,
            "spec": spec_to_dict(self.spec),
            "resolved": self.resolved,
            "options": dataclasses.asdict(self.options),
        }
        path.write_text(json.dumps(record, indent=1), encoding="utf-8")
        return path


def spec_to_dict(spec: StudySpec) -> dict[str, Any]:
    raw = dataclasses.asdict(spec)
    raw["source"] = str(spec.source) if spec.source else None
    return raw


def spec_from_dict(raw: dict[str, Any]) -> StudySpec:
    return StudySpec(
        **{
            **raw,
            "models": [ModelSpec(**m) for m in raw["models"]],
            "resources": Resources(**raw["resources"]),
            "source": Path(raw["source"]) if raw.get("source") else None,
        }
    )


def load_snapshot(path: Path, worker: str, echo: Echo = print) -> ExecContext:
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    out = Path(path).resolve().parent.parent.parent
    resolved = dict(record["resolved"])
    return ExecContext(
        spec=spec_from_dict(record["spec"]),
        out=out,
        run_id=record["run_id"],
        resolve_model=lambda name: resolved.get(name, name),
        echo=echo,
        options=ExecOptions(**record["options"]),
        worker=worker,
        resolved=resolved,
    )


def pending_cells(
    plan: StudyPlan, ctx: ExecContext, only: set[str] | None = None, costs: dict[str, float] | None = None
) -> list[Cell]:
    """Cells with GPU stages to run, not failed in this invocation, most expensive first
    (``costs``: :func:`cell_costs`, computed once per worker)."""
    from tide_bench.study.runner import read_failure

    costs = costs if costs is not None else cell_costs(plan)
    todo = {s.cell.id: s.cell for s in plan.pending() if s.stage in CELL_STAGES}
    cells = [c for c in todo.values() if (only is None or c.id in only) and not read_failure(ctx.out, c, ctx.run_id)]
    order = {c.id: i for i, c in enumerate(plan.cells)}
    return sorted(cells, key=lambda c: (-costs.get(c.id, 0.0), order[c.id]))


def cell_costs(plan: StudyPlan) -> dict[str, float]:
    """Each cell's estimated cost (:func:`tide_bench.study.estimate.cell_cost`), for scheduling."""
    from tide_bench.study.estimate import cell_cost

    return {cell.id: cell_cost(plan, cell) for cell in plan.cells}


def _lost_handler(in_process: bool) -> Callable[[Claim], None]:
    def lost(claim: Claim) -> None:
        sys.stderr.write(f"[study] the claim on {claim.name} was taken over: stopping this worker\n")
        if in_process:
            _thread.interrupt_main()  # the stage's main thread gets KeyboardInterrupt
        else:
            os._exit(75)  # a worker process: stop writing at once

    return lost


def work(
    ctx: ExecContext, *, only: set[str] | None = None, wait_for_others: bool = True, in_process: bool = True
) -> list[str]:
    """Claim and run cells until none is left; returns the stage labels this worker ran."""
    from tide_bench.study.runner import StudyRunner, record_failure

    store, ran = ctx.store, []
    costs: dict[str, float] | None = None
    while True:
        plan = make_plan(ctx.spec, ctx.out)
        costs = costs if costs is not None else cell_costs(plan)
        cells = pending_cells(plan, ctx, only, costs)
        if not cells:
            return ran
        claim = None
        for cell in cells:
            claim = store.try_claim(cell.id, on_lost=_lost_handler(in_process))
            if claim is not None:
                break
        if claim is None:
            if not wait_for_others:
                held = ", ".join(f"{c.id} ({(store.holder(c.id) or {}).get('worker')})" for c in cells)
                ctx.echo(f"[study] {ctx.worker}: held by live workers, left to them: {held}")
                return ran
            time.sleep(ctx.options.poll_s)
            continue
        try:
            plan = make_plan(ctx.spec, ctx.out)  # after the claim: another worker may have finished it just now
            runner = StudyRunner(ctx.spec, ctx.out, ctx.resolve, ctx.echo, worker=ctx.worker, claim=claim)
            ran += runner.run_cell(plan, next(c for c in plan.cells if c.id == cell.id), ctx.run_id)
        except ClaimLost as exc:
            ctx.echo(f"[study] {ctx.worker}: {exc}")
            return ran
        except Exception as exc:  # a bug or out of memory in a worker process: this cell fails, the others go on
            if in_process:
                raise
            import traceback

            traceback.print_exc()
            record_failure(ctx.out, cell, ctx.run_id, "worker", f"{type(exc).__name__}: {exc}", ctx.worker)
        finally:
            claim.release()


def run_one_cell(snapshot: str, cell_id: str, worker: str | None = None) -> list[str]:
    """A Slurm array task's or a Ray task's work: this one cell (if no live worker holds it)."""
    _set_threads()
    ctx = load_snapshot(Path(snapshot), worker or _job_worker_name(cell_id))
    return work(ctx, only={cell_id}, wait_for_others=False, in_process=False)


def _job_worker_name(cell_id: str) -> str:
    from tide_bench.study.claims import job_identity

    return f"{job_identity() or 'job'}:{cell_id}:{os.getpid()}"


def _set_threads() -> None:
    threads = os.environ.get("TIDE_BENCH_THREADS")
    if threads and threads.isdigit():
        import torch

        torch.set_num_threads(int(threads))


def main(argv: list[str] | None = None) -> int:
    """``python -m tide_bench.study.worker SNAPSHOT --worker NAME``: one local worker process."""
    import signal

    parser = argparse.ArgumentParser(prog="python -m tide_bench.study.worker")
    parser.add_argument("snapshot")
    parser.add_argument("--worker", required=True)
    args = parser.parse_args(argv)

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # releases the claim on the way out

    signal.signal(signal.SIGTERM, stop)
    _set_threads()
    ctx = load_snapshot(Path(args.snapshot), args.worker, echo=lambda line: print(line, flush=True))
    try:
        work(ctx, in_process=False)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
