"""Where a study's cells run: ``local`` (this machine's GPUs), ``slurm`` (submitit) or ``ray``.

Each executor only decides *where* workers run; what a worker does is :mod:`.worker` (claim a
cell, run its fine-tuning and generation, record them), so the three paths share one piece
of code and one folder discipline. Judging, submissions, the board and the report run
afterwards in the study process (:func:`tide_bench.study.invoke.run_study`).

- **local**: one worker per visible GPU (``gpus_per_cell`` GPUs each, ``CUDA_VISIBLE_DEVICES``
  set per worker), or ``workers`` on a CPU. One worker runs in this process; more run as
  subprocesses (``python -m tide_bench.study.worker``), logs in ``<out>/.study/logs/``.
- **slurm**: one job array task per cell (cells that need no GPU, the reference, run here),
  through submitit, with the study file's ``resources`` (partition, account, time, GPUs...). A
  task is requeue-safe: on preemption or time-out submitit requeues it and the new task
  resumes its cell (fine-tuning from the latest checkpoint). Job logs in ``<out>/.study/slurm/``.
- **ray**: one Ray task per cell (``num_gpus`` = ``gpus_per_cell``), on the cluster at
  ``resources.ray_address`` or ``RAY_ADDRESS``, else a Ray started on this machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.study.plan import CELL_STAGES, Cell, StudyPlan, make_plan
from tide_bench.study.resources import Resources, visible_gpus
from tide_bench.study.worker import ExecContext, ExecOptions, pending_cells, run_one_cell, work

EXECUTORS = ("local", "slurm", "ray")
# More executors, by name: ``run(ctx, plan)`` runs every pending cell's stages somewhere
# (:func:`register_executor`); the built-in three are above.
ADDED_EXECUTORS: dict[str, Callable[[ExecContext, StudyPlan], None]] = {}
LOGS_DIR = Path(".study") / "logs"
SLURM_DIR = Path(".study") / "slurm"
JOBS_FILE = Path(".study") / "jobs.json"

__all__ = [
    "EXECUTORS",
    "ExecContext",
    "ExecOptions",
    "register_executor",
    "run_cells",
    "run_one_cell",
    "visible_gpus",
    "worker_slots",
]


def worker_slots(spec: Any, gpus: list[str], workers: int | None) -> list[str]:
    """``CUDA_VISIBLE_DEVICES`` of each local worker: ``gpus_per_cell`` GPUs each, one worker per
    group; on a machine without GPUs, ``workers`` CPU workers (default one)."""
    per = max([spec.resources_for(m).gpus_per_cell for m in spec.models] or [1])
    if not gpus or per == 0:
        return [""] * (workers or 1)
    if per > len(gpus):
        raise ConfigError(
            f"a cell needs {per} GPUs (resources.gpus_per_cell) and {len(gpus)} are visible",
            hint="lower gpus_per_cell, or run on a machine with more GPUs (--executor slurm)",
        )
    slots = [",".join(gpus[i * per : (i + 1) * per]) for i in range(len(gpus) // per)]
    if workers is not None:
        if workers > len(slots):
            raise ConfigError(
                f"--workers {workers}: only {len(slots)} worker(s) fit on {len(gpus)} GPU(s) at {per} per cell"
            )
        slots = slots[:workers]
    return slots


def run_cells(
    ctx: ExecContext,
    plan: StudyPlan,
    executor: str,
    *,
    workers: int | None = None,
    wait: bool = True,
    progress: bool = True,
    result: Any = None,
) -> None:
    """Run every cell's pending GPU stages on ``executor``."""
    if executor in ADDED_EXECUTORS:
        ADDED_EXECUTORS[executor](ctx, plan)
        return
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}", hint=", ".join([*EXECUTORS, *ADDED_EXECUTORS]))
    if executor == "local":
        gpus = visible_gpus()
        if ctx.options.gpus is not None:
            gpus = gpus[: ctx.options.gpus]
        slots = worker_slots(ctx.spec, gpus, workers)
        if len(slots) == 1:
            for cell in plan.cells:
                if cell.model is not None:
                    ctx.resolve(cell.model.model)
            with _torch_threads(ctx.options.threads):
                work(ctx, in_process=True)
        else:
            _local_processes(ctx, plan, slots)
    elif executor == "slurm":
        _slurm(ctx, plan, wait, result)
    else:
        _ray(ctx, plan)


def register_executor(name: str, run: Callable[[ExecContext, StudyPlan], None]) -> None:
    """Add an executor: ``run(ctx, plan)`` writes the study's snapshot
    (``ctx.write_snapshot(plan)``) and has every cell of ``pending_cells(plan, ctx)`` run
    ``run_one_cell(str(snapshot), cell.id, worker=NAME)`` wherever it runs cells (a queue, a
    cloud batch service...), returning once they are done. Claims, resumption and the records
    are the worker's (:mod:`.worker`), as for the built-in three; judging, the board and the
    report then run in the study process. ``run_study(..., executor=name)`` uses it."""
    if name in EXECUTORS:
        raise ConfigError(f"{name!r} is a built-in executor", hint="choose another name")
    ADDED_EXECUTORS[name] = run


# ------------------------------------------------------------------ shared
@contextlib.contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """``threads`` torch CPU threads while the in-process worker runs (None: unchanged)."""
    if not threads:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _done(plan: StudyPlan) -> set[str]:
    return {f"{s.cell.id}/{s.stage}" for s in plan.stages if s.done}


class _Watch:
    """Says which stages finished since the last look (the workers write the records)."""

    def __init__(self, ctx: ExecContext) -> None:
        self.ctx, self.seen = ctx, _done(make_plan(ctx.spec, ctx.out))

    def poll(self) -> None:
        plan = make_plan(self.ctx.spec, self.ctx.out)
        for stage in plan.stages:
            label = f"{stage.cell.id}/{stage.stage}"
            if stage.done and label not in self.seen and stage.stage in CELL_STAGES:
                by = (stage.record or {}).get("by")
                self.ctx.echo(f"[study] {label}: done ({by})")
                self.seen.add(label)


def _wait_for_held(ctx: ExecContext, watch: _Watch) -> None:
    """Wait while cells still to run are held by live workers elsewhere (another study process, a job)."""
    store = ctx.store
    while True:
        plan = make_plan(ctx.spec, ctx.out)
        held = [c for c in pending_cells(plan, ctx, costs={}) if store.holder(c.id)]
        if not held:
            return
        watch.poll()
        time.sleep(ctx.options.poll_s)


# ------------------------------------------------------------------ local
def _local_processes(ctx: ExecContext, plan: StudyPlan, slots: list[str]) -> None:
    snapshot = ctx.write_snapshot(plan)
    logs = ctx.out / LOGS_DIR / ctx.run_id
    logs.mkdir(parents=True, exist_ok=True)
    cpus = os.cpu_count() or 1
    threads = ctx.options.threads or max(1, cpus // len(slots))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    for i, devices in enumerate(slots, start=1):
        name = f"w{i}"
        env = os.environ | {"CUDA_VISIBLE_DEVICES": devices, "PYTHONUNBUFFERED": "1"}
        if not devices:
            env |= {"TIDE_BENCH_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
        with (logs / f"{name}.log").open("wb") as log:
            procs[name] = subprocess.Popen(
                [sys.executable, "-m", "tide_bench.study.worker", str(snapshot), "--worker", name],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    where = ", ".join(f"{n}: {'GPU ' + d if d else 'CPU'}" for n, d in zip(procs, slots, strict=True))
    ctx.echo(f"[study] {len(procs)} local workers ({where}); logs in {logs}")
    watch = _Watch(ctx)
    try:
        while any(p.poll() is None for p in procs.values()):
            watch.poll()
            time.sleep(ctx.options.poll_s)
    except KeyboardInterrupt:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        raise
    watch.poll()
    for name, p in procs.items():
        if p.returncode not in (0, None):
            ctx.echo(f"[study] worker {name} exited with status {p.returncode} (log: {logs / (name + '.log')})")
    _wait_for_held(ctx, watch)


# ------------------------------------------------------------------ slurm
def _submitit() -> Any:
    try:
        import submitit
    except ImportError:
        raise ConfigError(
            "--executor slurm needs submitit, which is not installed", hint="pip install 'tide-bench[slurm]'"
        ) from None
    return submitit


class CellJob:
    """The callable a Slurm array task runs: one cell of the snapshot. On preemption or time-out
    submitit calls :meth:`checkpoint`, which requeues the same cell; the requeued task takes the
    cell back (its claim carries the job id) and resumes it."""

    def __init__(self, snapshot: str) -> None:
        self.snapshot = snapshot

    def __call__(self, cell_id: str) -> list[str]:
        from tide_bench.study.worker import run_one_cell

        return run_one_cell(self.snapshot, cell_id)

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        submitit = _submitit()
        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


def slurm_parameters(resources: Resources, name: str) -> dict[str, Any]:
    """submitit parameters of one cell's job, from the study file's ``resources``."""
    params: dict[str, Any] = {
        "name": name,
        "timeout_min": resources.time_min,
        "nodes": 1,
        "tasks_per_node": 1,
        "cpus_per_task": resources.cpus_per_cell,
        "gpus_per_node": resources.gpus_per_cell,
    }
    if resources.mem_gb:
        params["mem_gb"] = resources.mem_gb
    for key in ("partition", "account", "qos", "constraint"):
        if getattr(resources, key):
            params[f"slurm_{key}"] = getattr(resources, key)
    if resources.max_parallel:
        params["slurm_array_parallelism"] = resources.max_parallel
    if resources.setup:
        params["slurm_setup"] = list(resources.setup)
    if resources.slurm:
        params["slurm_additional_parameters"] = dict(resources.slurm)
    return params


def _queued_jobs(ctx: ExecContext, submitit: Any) -> dict[str, str]:
    """Cells whose Slurm job from an earlier invocation is still queued or running (not resubmitted)."""
    path = ctx.out / JOBS_FILE
    try:
        jobs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # none, or damaged: every cell is submitted (claims still guard)
        return {}
    if ctx.options.cluster not in (None, "slurm") or not isinstance(jobs, dict):
        return {}
    live = {}
    for cell, job_id in jobs.items():
        try:
            state = submitit.SlurmJob(folder=ctx.out / SLURM_DIR / "%j", job_id=str(job_id)).state
        except Exception:  # sacct unavailable: assume finished (the claims still prevent a second writer)
            continue
        if state in ("PENDING", "RUNNING", "REQUEUED", "CONFIGURING", "COMPLETING", "SUSPENDED"):
            live[cell] = str(job_id)
    return live


def _slurm(ctx: ExecContext, plan: StudyPlan, wait: bool, result: Any) -> None:
    submitit = _submitit()
    snapshot = ctx.write_snapshot(plan)
    store = ctx.store
    cells = pending_cells(plan, ctx)
    here = [c for c in cells if ctx.spec.resources_for(c.model).gpus_per_cell == 0 and c.model is None]
    queued = _queued_jobs(ctx, submitit)
    to_submit = [c for c in cells if c not in here and c.id not in queued and not store.holder(c.id)]
    for cell_id, job_id in queued.items():
        ctx.echo(f"[study] {cell_id}: job {job_id} from an earlier run is still queued or running; not resubmitted")
    groups: dict[str, list[Cell]] = {}
    for cell in to_submit:
        groups.setdefault(json.dumps(ctx.spec.resources_for(cell.model).__dict__, sort_keys=True), []).append(cell)
    jobs: list[tuple[Cell, Any]] = []
    for key, group in groups.items():
        executor = submitit.AutoExecutor(folder=ctx.out / SLURM_DIR / "%j", cluster=ctx.options.cluster)
        executor.update_parameters(**slurm_parameters(_resources(key), f"tide-{ctx.spec.name}"))
        submitted = executor.map_array(CellJob(str(snapshot)), [c.id for c in group])
        jobs += list(zip(group, submitted, strict=True))
    if jobs:
        record = queued | {cell.id: str(job.job_id) for cell, job in jobs}
        (ctx.out / JOBS_FILE).write_text(json.dumps(record, indent=1), encoding="utf-8")
        ctx.echo(
            f"[study] submitted {len(jobs)} cell(s) ({executor.cluster}): "
            + ", ".join(f"{cell.id}={job.job_id}" for cell, job in jobs)
            + f"; logs in {ctx.out / SLURM_DIR}"
        )
    if here:
        work(ctx, only={c.id for c in here}, wait_for_others=False, in_process=True)
    if not wait:
        if result is not None:
            result.submitted = [str(job.job_id) for _, job in jobs] + list(queued.values())
        return
    watch = _Watch(ctx)
    pending = list(jobs)
    while pending:
        watch.poll()
        still = []
        for cell, job in pending:
            if not job.done():
                still.append((cell, job))
                continue
            try:
                job.result()
            except Exception as exc:  # the job died (out of memory, node failure); the cell is retried on the next run
                ctx.echo(f"[study] {cell.id}: job {job.job_id} failed: {str(exc).strip().splitlines()[-1][:300]}")
        pending = still
        if pending:
            time.sleep(ctx.options.poll_s)
    watch.poll()
    _wait_for_held(ctx, watch)


def _resources(key: str) -> Resources:
    return Resources(**json.loads(key))


# ------------------------------------------------------------------ ray
def _ray_cell(snapshot: str, cell_id: str) -> list[str]:
    from tide_bench.study.worker import run_one_cell

    return run_one_cell(snapshot, cell_id, worker=f"ray:{cell_id}:{os.getpid()}")


def _ray(ctx: ExecContext, plan: StudyPlan) -> None:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs ray, which is not installed", hint="pip install 'tide-bench[ray]'"
        ) from None
    snapshot = ctx.write_snapshot(plan)
    address = ctx.spec.resources.ray_address or os.environ.get("RAY_ADDRESS") or None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        total_cpus = float(ray.cluster_resources().get("CPU", 1))
        cells = pending_cells(plan, ctx)
        remote: Callable[..., Any] = ray.remote(_ray_cell)
        refs = {}
        for cell in cells:
            res = ctx.spec.resources_for(cell.model)
            options = {
                "num_gpus": res.gpus_per_cell,
                "num_cpus": min(float(res.cpus_per_cell), total_cpus),
                "max_retries": 3,
            }
            refs[remote.options(**options).remote(str(snapshot), cell.id)] = cell  # type: ignore[attr-defined]
        ctx.echo(f"[study] {len(refs)} Ray task(s) on {address or 'a local Ray'}")
        watch = _Watch(ctx)
        waiting = list(refs)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1, timeout=ctx.options.poll_s)
            for ref in ready:
                try:
                    ray.get(ref)
                except Exception as exc:
                    ctx.echo(f"[study] {refs[ref].id}: Ray task failed: {str(exc).strip().splitlines()[-1][:300]}")
            watch.poll()
        _wait_for_held(ctx, watch)
    finally:
        if started:
            ray.shutdown()
