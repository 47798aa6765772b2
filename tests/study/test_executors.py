"""The demo study grid on each executor gives the same bytes of results (issue 29, "done when").

One baseline (one worker, in this process), then: ``--executor local`` with two worker
processes; ``--executor slurm`` through submitit's local executor (the same pickled job, the
same ``python -m submitit.core._submit`` entry a Slurm node runs); and two local workers with
one SIGKILLed in the middle of fine-tuning, its cell taken over by the other. Each compares
its results with the baseline: adapter weights, every reply, every judgment, the report and
the board's rows (timestamps aside). The demo model on the sample's validation split with the
smallest settings; each run takes about 1-2 minutes on 2 cores, hence ``slow``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.fakes.llm_server import FakeLLMServer
from tests.study.test_study import STUDY as MINI
from tide_bench.demo.model import resolve_model
from tide_bench.study import load_study, run_study
from tide_bench.study.worker import ExecOptions

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def grid(judge_url: str) -> dict:
    """The demo study's grid (the demo model zero-shot and fine-tuned, and the reference), smallest settings."""
    demo = yaml.safe_load((ROOT / "studies" / "demo.yaml").read_text())
    return demo | {
        "name": "grid",
        "split": "validation",  # one persona, four items
        "conditions": {
            "zero-shot": {},
            "fine-tuned": {"lora": MINI["conditions"]["fine-tuned"]["lora"] | {"limit_examples": 4}},
        },
        "eval": {"backend": "hf", "device": "cpu", "batch_size": 4, "max_gen_toks": 4},
        "judge": {"name": "local", "model": "fake-judge", "base_url": judge_url + "/v1"},
        "board": {"spot_check_items": 0},
        "resources": {"gpus_per_cell": 0, "cpus_per_cell": 1},
    }


def results(out: Path) -> dict[str, str]:
    """sha256 of every result, keyed by cell and kind (file names carry dates and paths; contents must not)."""
    found: dict[str, str] = {}

    def put(key: str, data: bytes) -> None:
        found[key] = hashlib.sha256(data).hexdigest()

    for cell in sorted((out / "cells").iterdir()):
        for path in cell.glob("adapter/adapter_model.safetensors"):
            put(f"{cell.name}/adapter", path.read_bytes())
        for path in cell.glob("run/lm_eval/*/samples_*.jsonl"):
            put(f"{cell.name}/replies", path.read_bytes())
        for path in cell.glob("run/judge/judgments.jsonl"):
            put(f"{cell.name}/judgments", path.read_bytes())
    for name in ("report.json", "report.md"):
        put(f"report/{name}", (out / "report" / name).read_bytes())
    board = json.loads((out / "site" / "leaderboard.json").read_text())
    board.pop("built_at", None)
    put("board/rows", json.dumps(board, sort_keys=True).encode())
    return found


@pytest.fixture(scope="module")
def judge() -> FakeLLMServer:
    server = FakeLLMServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def study_file(tmp_path_factory: pytest.TempPathFactory, judge: FakeLLMServer) -> Path:
    path = tmp_path_factory.mktemp("study") / "grid.yaml"
    path.write_text(yaml.safe_dump(grid(judge.url)))
    return path


@pytest.fixture(scope="module")
def baseline(study_file: Path, tmp_path_factory: pytest.TempPathFactory, demo_model_dir: Path) -> dict[str, str]:
    out = tmp_path_factory.mktemp("baseline") / "out"
    result = run_study(
        load_study(study_file), out, resolve_model=resolve_model, echo=lambda _: None, progress=False,
        options=ExecOptions(threads=1),
    )  # fmt: skip
    assert result.failed == {} and result.unfinished == []
    found = results(out)
    assert {"smollm2-135m-fine-tuned/adapter", "reference/judgments", "board/rows"} <= set(found) and len(found) == 10
    return found


def _cli_env() -> dict[str, str]:
    return os.environ | {"PYTHONPATH": str(ROOT), "TIDE_BENCH_THREADS": "1", "OMP_NUM_THREADS": "1"}


def test_two_local_workers_give_the_same_results(study_file: Path, tmp_path: Path, baseline: dict) -> None:
    out = tmp_path / "out"
    result = run_study(
        load_study(study_file), out, resolve_model=resolve_model, echo=lambda _: None, progress=False,
        workers=2, options=ExecOptions(threads=1, poll_s=0.5),
    )  # fmt: skip
    assert result.failed == {} and result.unfinished == []
    assert results(out) == baseline
    logs = sorted((out / ".study" / "logs").glob("*/w*.log"))
    assert [p.name for p in logs] == ["w1.log", "w2.log"]
    done_by = {json.loads(p.read_text())["by"] for p in out.glob("cells/*/eval.done.json")}
    assert done_by == {"w1", "w2"}  # both workers took cells
    assert not list((out / ".study" / "claims").glob("*.json"))


def test_slurm_through_submitits_local_executor_gives_the_same_results(
    study_file: Path, tmp_path: Path, baseline: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("submitit")
    for key, value in _cli_env().items():
        monkeypatch.setenv(key, value)  # the job processes inherit this environment
    out = tmp_path / "out"
    lines: list[str] = []
    result = run_study(
        load_study(study_file), out, resolve_model=resolve_model, echo=lines.append, progress=False,
        executor="slurm", options=ExecOptions(cluster="local", poll_s=0.5),
    )  # fmt: skip
    assert result.failed == {} and result.unfinished == [], lines
    assert results(out) == baseline
    submitted = next(line for line in lines if line.startswith("[study] submitted"))
    assert "smollm2-135m-fine-tuned=" in submitted and "smollm2-135m-zero-shot=" in submitted
    jobs = json.loads((out / ".study" / "jobs.json").read_text())
    assert set(jobs) == {"smollm2-135m-fine-tuned", "smollm2-135m-zero-shot"}  # the reference ran here: no GPU
    by = {json.loads((out / "cells" / c / "eval.done.json").read_text())["by"] for c in jobs}
    assert all(re.match(r"(job|slurm:\S+):smollm2-135m-", name) for name in by), by


def test_a_worker_killed_mid_cell_is_taken_over_with_the_same_results(
    study_file: Path, tmp_path: Path, baseline: dict
) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "tide_bench", "study", str(study_file), "--out", str(out), "--workers", "2"]
    driver = subprocess.Popen(cmd, env=_cli_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    claim = out / ".study" / "claims" / "smollm2-135m-fine-tuned.json"
    started = out / "cells" / "smollm2-135m-fine-tuned" / "adapter" / "finetune_config.json"
    deadline, victim = time.time() + 400, None
    while time.time() < deadline and driver.poll() is None:
        if started.is_file() and claim.is_file():
            victim = json.loads(claim.read_text())
            os.kill(victim["pid"], signal.SIGKILL)  # mid fine-tuning: its model is loaded, training under way
            break
        time.sleep(0.2)
    output, _ = driver.communicate(timeout=600)
    assert victim is not None, output
    assert driver.returncode == 0, output
    assert f"worker {victim['worker']} exited with status -9" in output
    record = json.loads((out / "cells" / "smollm2-135m-fine-tuned" / "finetune.done.json").read_text())
    assert record["by"] != victim["worker"]  # the other worker took the cell over
    assert results(out) == baseline


@pytest.mark.skipif(
    os.environ.get("TIDE_BENCH_RAY_TESTS") != "1", reason="a local Ray instance: `tox -e ray` (TIDE_BENCH_RAY_TESTS=1)"
)
def test_ray_on_a_local_instance_gives_the_same_results(
    study_file: Path, tmp_path: Path, baseline: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ray")
    for key, value in _cli_env().items():
        monkeypatch.setenv(key, value)  # the Ray workers start with this environment
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    out = tmp_path / "out"
    lines: list[str] = []
    result = run_study(
        load_study(study_file), out, resolve_model=resolve_model, echo=lines.append, progress=False,
        executor="ray", options=ExecOptions(poll_s=0.5),
    )  # fmt: skip
    assert result.failed == {} and result.unfinished == [], lines
    assert any("Ray task(s) on a local Ray" in line for line in lines)
    assert results(out) == baseline
    by = {json.loads(p.read_text())["by"] for p in out.glob("cells/*/eval.done.json")}
    assert all(name.startswith("ray:") for name in by), by
