"""Several study workers sharing one folder: per-cell claims, take-over of a dead worker's cell,
never two writers, and a seeded many-process run in which no cell is run twice and none is lost.

No model here: the stages are stand-ins that sleep and write their outputs, so the scheduling,
claims and records are exercised with real processes (fork) in seconds."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest
import yaml

from tide_bench.study import load_study, make_plan
from tide_bench.study.claims import ClaimLost, ClaimStore
from tide_bench.study.plan import CELL_STAGES, cell_dir
from tide_bench.study.runner import StudyRunner
from tide_bench.study.worker import ExecContext, ExecOptions, work

FAST = {"heartbeat_s": 0.1, "stale_after_s": 1.0}


def test_one_holder_at_a_time_and_a_live_claim_is_never_taken(tmp_path: Path) -> None:
    a, b = ClaimStore(tmp_path, worker="a", **FAST), ClaimStore(tmp_path, worker="b", **FAST)
    held = a.try_claim("cell-1")
    assert held is not None and held.held()
    assert b.try_claim("cell-1") is None  # live: beating in its thread
    time.sleep(1.5)  # longer than stale_after_s: the heartbeat kept it fresh
    assert b.try_claim("cell-1") is None and b.holder("cell-1")["worker"] == "a"
    held.release()
    again = b.try_claim("cell-1")
    assert again is not None and again.content["worker"] == "b"
    again.release()


def test_a_claim_whose_heartbeat_stopped_is_taken_over_and_its_holder_learns_it(tmp_path: Path) -> None:
    a, b = ClaimStore(tmp_path, worker="a", **FAST), ClaimStore(tmp_path, worker="b", **FAST)
    frozen = a.try_claim("cell-1")
    frozen._stop.set()  # a worker frozen (SIGSTOP, a hung file system): no more heartbeats
    frozen._thread.join()
    assert b.try_claim("cell-1") is None
    time.sleep(1.2)
    taker = b.try_claim("cell-1")
    assert taker is not None
    with pytest.raises(ClaimLost):
        frozen.check()  # before writing any record, the frozen worker finds it no longer owns the cell
    assert not frozen.beat() and frozen.lost.is_set()
    frozen.release()  # releasing a claim it lost leaves the new holder's claim in place
    assert taker.held()
    taker.release()


def test_a_dead_process_claim_is_taken_at_once_on_the_same_host(tmp_path: Path) -> None:
    path = ClaimStore(tmp_path).path("cell-1")
    path.parent.mkdir(parents=True)
    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(0,))
    child.start()
    child.join()
    dead = {"token": "t", "worker": "gone", "host": os.uname().nodename, "pid": child.pid, "heartbeat_at": time.time()}
    path.write_text(json.dumps(dead | {"beat": 3}))
    claim = ClaimStore(tmp_path, worker="b", **FAST).try_claim("cell-1")
    assert claim is not None and claim.content["worker"] == "b"
    claim.release()


def test_a_requeued_slurm_job_takes_its_own_cell_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    path = ClaimStore(tmp_path).path("cell-1")
    path.parent.mkdir(parents=True)
    before = {"token": "t", "host": "node-7", "pid": 1, "job": "slurm:4242_3", "heartbeat_at": time.time(), "beat": 9}
    path.write_text(json.dumps(before))  # fresh heartbeat, other host: only the job id says it is ours
    claim = ClaimStore(tmp_path, worker="requeued", **FAST).try_claim("cell-1")
    assert claim is not None
    claim.release()
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "4")  # another task of the array: not its cell
    path.write_text(json.dumps(before))
    assert ClaimStore(tmp_path, worker="other", **FAST).try_claim("cell-1") is None


def _race(root: str, name: str, barrier, results) -> None:
    store = ClaimStore(Path(root), worker=f"p{os.getpid()}", heartbeat_s=5, stale_after_s=1.0)
    barrier.wait()
    claim = store.try_claim(name)
    results.put(claim is not None)
    if claim is not None:
        time.sleep(0.5)  # hold it while the others try
        claim.release()


def test_breaking_a_stale_claim_lets_exactly_one_of_many_racing_processes_in(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    for round_ in range(3):
        path = ClaimStore(tmp_path).path(f"c{round_}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps({"token": f"old{round_}", "host": "elsewhere", "pid": 1, "heartbeat_at": 0, "beat": 0})
        )
        barrier, results = ctx.Barrier(6), ctx.Queue()
        procs = [ctx.Process(target=_race, args=(str(tmp_path), f"c{round_}", barrier, results)) for _ in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(20)
        won = [results.get(timeout=5) for _ in procs]
        assert sum(won) == 1, won


# ---------------------------------------------------------------------- a seeded run of many workers
MODELS = 6


def _study(tmp_path: Path) -> Path:
    study = {
        "name": "claims",
        "data": "sample",
        "split": "validation",
        "models": [{"id": f"m{i}", "model": f"org/model-{i}"} for i in range(MODELS)],
        "conditions": {"zero-shot": {}, "fine-tuned": {"lora": {"max_steps": 1}}},
        "resources": {"gpus_per_cell": 0},
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


def _stand_in_stages(log: Path, seed: int) -> None:
    """Stages that sleep a seeded while, log start and end, and write the files their records hash."""

    def stage(kind: str):
        def run(self: StudyRunner, stage) -> dict:
            rng = random.Random(f"{seed}-{stage.cell.id}-{kind}")
            with log.open("a") as f:
                f.write(json.dumps({"event": "start", "cell": stage.cell.id, "stage": kind, "pid": os.getpid()}) + "\n")
            time.sleep(rng.uniform(0.05, 0.4))
            target = self.path(stage.cell, kind)
            target.mkdir(parents=True, exist_ok=True)
            name = "adapter_config.json" if kind == "finetune" else "run.json"
            (target / name).write_text(json.dumps({"cell": stage.cell.id, "kind": kind}))
            with log.open("a") as f:
                end = {"event": "end", "cell": stage.cell.id, "stage": kind, "pid": os.getpid(), "worker": self.worker}
                f.write(json.dumps(end) + "\n")
            return {"seconds": 0.1}

        return run

    StudyRunner.finetune = stage("finetune")  # type: ignore[method-assign]
    StudyRunner.eval = stage("eval")  # type: ignore[method-assign]


def _worker(study: str, out: str, log: str, seed: int, name: str, run_id: str) -> None:
    _stand_in_stages(Path(log), seed)
    spec = load_study(study)
    options = ExecOptions(heartbeat_s=0.1, stale_after_s=30.0, poll_s=0.05)
    ctx = ExecContext(spec, Path(out), run_id, lambda m: m, lambda _: None, options, worker=name)
    work(ctx, in_process=False)


@pytest.mark.parametrize("seed", [0, 1])
def test_many_workers_with_kills_run_every_cell_once_and_lose_none(tmp_path: Path, seed: int) -> None:
    """Four worker processes; a seeded schedule SIGKILLs some mid-stage and starts new ones. Every
    stage of every cell ends exactly once in a worker that lived to record it (a killed one is taken
    over, never run beside another)."""
    study, out, log = _study(tmp_path), tmp_path / "out", tmp_path / "events.jsonl"
    rng = random.Random(seed)
    ctx = multiprocessing.get_context("fork")
    started: list = []

    def start(i: int):
        p = ctx.Process(target=_worker, args=(str(study), str(out), str(log), seed, f"w{i}", "run-1"))
        p.start()
        started.append(p)
        return p

    load_study(study)  # imports the study check needs, shared by the forked workers: the kills land mid-stage
    live = [start(i) for i in range(4)]
    killed, deadline = [], time.time() + 60
    for n in range(2):
        time.sleep(rng.uniform(0.3, 0.9))
        victim = rng.choice([p for p in live if p.is_alive()] or live)
        if victim.is_alive():
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(victim.pid)
        live = [p for p in live if p is not victim] + [start(10 + n)]
    for p in started:
        p.join(max(1.0, deadline - time.time()))
        assert not p.is_alive(), "a worker hung"

    spec = load_study(study)
    plan = make_plan(spec, out)
    assert [s for s in plan.pending() if s.stage in CELL_STAGES] == []  # none lost
    events = [json.loads(line) for line in log.read_text().splitlines()]
    enders: dict = {}
    for e in events:
        if e["event"] == "end":
            enders.setdefault((e["cell"], e["stage"]), []).append(e["pid"])
    # None run twice to its end, except where the worker that ended it was killed before it could
    # record the stage (its stand-in had logged the end): then the stage is not done, and is run again.
    again = {key: pids for key, pids in enders.items() if len(pids) > 1}
    assert all(pid in killed for pids in again.values() for pid in pids[:-1]), (again, killed)
    assert len(enders) == sum(1 for s in plan.stages if s.stage in CELL_STAGES)
    last = {(e["cell"], e["stage"]): e["worker"] for e in events if e["event"] == "end"}
    for s in plan.stages:  # each stage's record was written by the worker that ended it last
        if s.stage in CELL_STAGES:
            record = json.loads((cell_dir(out, s.cell) / f"{s.stage}.done.json").read_text())
            assert record["by"] == last[(s.cell.id, s.stage)], (s.cell.id, s.stage, record["by"])
    # a stage started twice only because its first worker was killed before finishing it
    open_by: dict = {}
    taken_over = 0
    for e in events:
        key = (e["cell"], e["stage"])
        if e["event"] == "start":
            if key in open_by:
                assert open_by[key] in killed, (key, open_by[key], "two live writers of one stage")
                taken_over += 1
            open_by[key] = e["pid"]
        else:
            assert open_by.pop(key) == e["pid"]
    assert all(pid in killed for pid in open_by.values())
    assert (
        len(killed) == 2 and taken_over >= 1
    )  # the schedule did kill workers mid-stage, and their cells were taken over
    assert not list((out / ".study" / "claims").glob("*.json"))  # every claim released or taken over
