"""Stage records are verified before they are trusted, and no study output lands outside --out
(issue 32, N8); the study file's resources; what --dry-run estimates (issue 29 M6, issue 34.7);
how executors place workers and jobs. No model is loaded: seconds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import write_study
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError
from tide_bench.study import load_study, make_plan
from tide_bench.study.executors import CellJob, slurm_parameters, worker_slots
from tide_bench.study.plan import CELL_STAGES, mark_done
from tide_bench.study.runner import StudyRunner
from tide_bench.study.worker import ExecContext, ExecOptions, spec_from_dict, spec_to_dict, work

STUDY = {
    "name": "rec",
    "data": "sample",
    "split": "validation",
    "models": [{"id": "m", "model": "org/model-0.5B"}],
    "conditions": {"zero-shot": {}, "fine-tuned": {"lora": {"max_steps": 1}}},
    "resources": {"gpus_per_cell": 0},
}


def _fake_stages(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def stage(kind: str):
        def run(self: StudyRunner, stage) -> dict:
            calls.append(f"{stage.cell.id}/{kind}")
            target = self.path(stage.cell, kind)
            target.mkdir(parents=True, exist_ok=True)
            (target / ("adapter_config.json" if kind == "finetune" else "run.json")).write_text(json.dumps(kind))
            return {}

        return run

    monkeypatch.setattr(StudyRunner, "finetune", stage("finetune"))
    monkeypatch.setattr(StudyRunner, "eval", stage("eval"))
    return calls


def _run_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, study: dict = STUDY) -> tuple[object, Path, list]:
    calls = _fake_stages(monkeypatch)
    spec, out = load_study(write_study(tmp_path, study)), tmp_path / "out"
    out.mkdir(exist_ok=True)
    work(ExecContext(spec, out, "r1", lambda m: m, lambda _: None, ExecOptions(poll_s=0.01)))
    return spec, out, calls


def test_records_hash_themselves_and_their_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, out, calls = _run_cells(tmp_path, monkeypatch)
    assert sorted(calls) == ["m-fine-tuned/eval", "m-fine-tuned/finetune", "m-zero-shot/eval", "reference/eval"]
    plan = make_plan(spec, out)
    assert all(s.done for s in plan.stages if s.stage in CELL_STAGES)
    record = json.loads((out / "cells/m-fine-tuned/finetune.done.json").read_text())
    assert record["outputs"] == {"adapter": "cells/m-fine-tuned/adapter"} and len(record["record_sha256"]) == 64
    assert list(record["artifacts"]) == ["cells/m-fine-tuned/adapter"]
    # an output changed after its record was written: the record is not trusted, the chain reruns
    (out / "cells/m-fine-tuned/adapter/adapter_config.json").write_text('"replaced"')
    plan = make_plan(spec, out)
    stages = {s.stage: s for s in plan.for_cell("m-fine-tuned")}
    assert not stages["finetune"].done and "outputs changed" in stages["finetune"].distrusted
    assert not stages["eval"].done  # every later stage of the cell runs again too
    assert next(s for s in plan.for_cell("m-zero-shot") if s.stage == "eval").done


def test_an_edited_record_pointing_outside_out_is_not_trusted_and_nothing_is_written_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, out, _ = _run_cells(tmp_path, monkeypatch)
    path = out / "cells/m-zero-shot/eval.done.json"
    record = json.loads(path.read_text())
    elsewhere = tmp_path / "elsewhere"
    record["outputs"] = {"run": str(elsewhere)}
    from tide_bench.study.plan import record_digest

    record["record_sha256"] = record_digest(record)  # even a consistently re-hashed edit
    path.write_text(json.dumps(record))
    stage = next(s for s in make_plan(spec, out).for_cell("m-zero-shot") if s.stage == "eval")
    assert not stage.done and "names outputs" in stage.distrusted
    calls = _fake_stages(monkeypatch)
    work(ExecContext(spec, out, "r2", lambda m: m, lambda _: None, ExecOptions(poll_s=0.01)))
    assert calls == ["m-zero-shot/eval"] and not elsewhere.exists()


def test_a_cell_folder_linked_outside_out_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_stages(monkeypatch)
    spec, out = load_study(write_study(tmp_path, STUDY)), tmp_path / "out"
    (out / "cells").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    (out / "cells" / "m-zero-shot").symlink_to(victim, target_is_directory=True)
    work(ExecContext(spec, out, "r1", lambda m: m, lambda _: None, ExecOptions(poll_s=0.01)))
    assert "m-zero-shot/eval" not in calls and list(victim.iterdir()) == []  # nothing written through the link
    assert "outside the study folder" in json.loads((out / ".study/failed/m-zero-shot.json").read_text())["reason"]


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from(["fingerprint", "outputs", "artifacts", "stage", "cell", "measured", "record_sha256", "junk"]),
    value=st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=30),
        st.lists(st.text(max_size=5), max_size=3),
        st.dictionaries(st.text(max_size=8), st.text(max_size=40), max_size=3),
    ),
    rehash=st.booleans(),
)
def test_any_edit_of_a_record_is_a_clear_distrust_never_a_traceback(tmp_path_factory, key, value, rehash) -> None:
    from tide_bench.study.plan import record_digest

    tmp = tmp_path_factory.mktemp("fuzz")
    spec, out = load_study(write_study(tmp, STUDY)), tmp / "out"
    plan = make_plan(spec, out)
    stage = next(s for s in plan.stages if s.stage == "eval" and s.cell.id == "m-zero-shot")
    run = out / "cells/m-zero-shot/run"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    mark_done(out, spec, stage, {})
    path = out / "cells/m-zero-shot/eval.done.json"
    record = json.loads(path.read_text())
    changed = key not in record or record[key] != value
    record[key] = value
    if rehash:
        record["record_sha256"] = record_digest(record)
    path.write_text(json.dumps(record))
    again = next(s for s in make_plan(spec, out).stages if s.stage == "eval" and s.cell.id == "m-zero-shot")
    harmless = key in ("measured", "junk", "record_sha256") and rehash  # re-hashed: content unchanged where it matters
    assert again.done == (harmless or not changed), (key, value, rehash, again.distrusted)


def test_the_study_file_resources_are_checked_and_a_model_may_override_them(tmp_path: Path) -> None:
    spec = load_study(
        write_study(
            tmp_path,
            STUDY
            | {"resources": {"gpus_per_cell": 1, "time_min": 60, "partition": "gpu", "setup": ["module load cuda"]}}
            | {"models": [{"id": "m", "model": "org/m-3B", "resources": {"time_min": 600, "mem_gb": 80}}]},
        )
    )
    res = spec.resources_for(spec.models[0])
    assert (res.gpus_per_cell, res.time_min, res.mem_gb, res.partition) == (1, 600, 80, "gpu")
    assert spec.resources_for(None).gpus_per_cell == 0  # the reference needs no GPU
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(spec)))) == spec  # the workers' snapshot round-trips
    for bad, where, message in (
        ({"resources": {"gpus": 1}}, "resources.gpus", "unknown key 'gpus'"),
        ({"resources": {"time_min": "4h"}}, "resources.time_min", "time_min must be a whole number"),
        ({"resources": {"cpus_per_cell": 0}}, "resources.cpus_per_cell", "at least 1"),
        (
            {"models": [{"id": "m", "model": "x", "resources": {"mem_gb": True}}]},
            "models[0].resources.mem_gb",
            "mem_gb",
        ),
        ({"eval": {"backend": "local-chat-completions"}}, "eval.backend", "needs a backend that loads LoRA adapters"),
    ):
        with pytest.raises(ConfigError) as err:
            load_study(write_study(tmp_path, STUDY | bad))
        assert re.search(rf"study\.yaml:\d+, field '{re.escape(where)}'", str(err.value)) and message in str(err.value)


def test_local_workers_get_their_own_gpus(tmp_path: Path) -> None:
    spec = load_study(write_study(tmp_path, STUDY | {"resources": {"gpus_per_cell": 2}}))
    assert worker_slots(spec, [str(i) for i in range(8)], None) == ["0,1", "2,3", "4,5", "6,7"]
    assert worker_slots(spec, ["3", "5", "6", "7"], 1) == ["3,5"]
    one = load_study(write_study(tmp_path, STUDY | {"resources": {"gpus_per_cell": 1}}))
    assert worker_slots(one, [], None) == [""] and worker_slots(one, [], 2) == ["", ""]  # CPU workers
    with pytest.raises(ConfigError, match="only 2 worker"):
        worker_slots(one, ["0", "1"], 3)


def test_slurm_jobs_take_the_study_files_resources_and_requeue_their_own_cell() -> None:
    from tide_bench.study.resources import Resources

    params = slurm_parameters(
        Resources(
            gpus_per_cell=1,
            cpus_per_cell=8,
            mem_gb=64,
            time_min=240,
            partition="gpu",
            account="lab",
            max_parallel=4,
            setup=["module load cuda"],
            slurm={"exclude": "node3"},
        ),
        "tide-x",
    )
    assert params == {
        "name": "tide-x", "timeout_min": 240, "nodes": 1, "tasks_per_node": 1, "cpus_per_task": 8, "gpus_per_node": 1,
        "mem_gb": 64, "slurm_partition": "gpu", "slurm_account": "lab", "slurm_array_parallelism": 4,
        "slurm_setup": ["module load cuda"], "slurm_additional_parameters": {"exclude": "node3"},
    }  # fmt: skip
    pytest.importorskip("submitit")
    again = CellJob("/study/.study/runs/r.json").checkpoint("qwen-fine-tuned")
    assert again.function.snapshot == "/study/.study/runs/r.json" and again.args == ("qwen-fine-tuned",)


def test_the_papers_dry_run_estimates_every_stage_from_stated_assumptions(tmp_path: Path) -> None:
    """Issue 34.7: no "0.0 min"; fine-tuning included (M6); the rates' source named."""
    root = Path(__file__).resolve().parents[2] / "studies" / "pursuit_of_empathy.yaml"
    result = CliRunner().invoke(cli, ["study", str(root), "--dry-run", "--out", str(tmp_path / "o"), "--gpus", "8"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "0.0 min" not in text and "unknown" not in text
    assert re.search(r"GPU time still to run: fine-tuning [\d.]+ h \+ generation [\d.]+ h = [\d.]+ GPU-hours", text)
    assert re.search(r"wall time on 8 GPU\(s\), 1 per cell \(--executor local\): about [\d.]+ h", text)
    assert "assumed (not measured)" in text and "7000 training items x 3 epochs" in text
    row = next(line for line in text.splitlines() if line.startswith("qwen2.5-3b-fine-tuned"))
    assert re.search(r"to run\s+to run\s+to run\s+to run\s+[\d.]+ (h|min)\s+[\d.]+ (h|min)", row), row


def test_measured_rates_replace_assumptions_and_a_size_nobody_gave_is_unknown(tmp_path: Path) -> None:
    rates = tmp_path / "results.json"
    rates.write_text(
        json.dumps(
            {
                "rates": {
                    "source": "GPU check 2026-12-02 on H200",
                    "devices": {
                        "cuda": {
                            "machine": "NVIDIA H200",
                            "finetune_tokens_per_s": {"0.5": 10000, "3.0": 2500},
                            "generate_tokens_per_s": {"hf": {"0.5": 1000}},
                        }
                    },
                }
            }
        )
    )
    study = STUDY | {
        "models": [{"id": "small", "model": "org/model-0.5B"}, {"id": "nameless", "model": "org/mystery"}],
        "eval": {"device": "cuda:0", "max_gen_toks": 100},
    }
    path = write_study(tmp_path, study)
    result = CliRunner().invoke(
        cli, ["study", str(path), "--dry-run", "--out", str(tmp_path / "o"), "--rates", str(rates)]
    )
    assert result.exit_code == 0, result.output
    text = result.output
    assert "rates: GPU check 2026-12-02 on H200 for cuda finetune; cuda generate (hf); the rest assumed" in text
    assert "on NVIDIA H200" in text
    row = next(line for line in text.splitlines() if line.startswith("small-zero-shot"))
    assert row.rstrip().endswith("0.4 s")  # 4 items x 100 tokens at 1000 tokens/s
    assert "unknown in total: 2 cell(s) without an estimate (nameless-zero-shot, nameless-fine-tuned)" in text
    assert "0.0 min" not in text


def test_an_interrupted_studys_fine_tuning_resumes_from_its_latest_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M5: the study passed overwrite=True on every rerun, deleting the checkpoints."""
    import tide_bench.finetune as finetune_pkg
    from tide_bench.finetune import FinetuneConfig
    from tide_bench.finetune.outputs import start_output_folder

    spec = load_study(write_study(tmp_path, STUDY))
    out = tmp_path / "out"
    stage = next(s for s in make_plan(spec, out).stages if s.stage == "finetune")
    seen: list = []

    def fake_finetune(config: FinetuneConfig, **kwargs) -> dict:
        seen.append((config.resume, config.overwrite))
        return {"training": {"tokens_per_second": 10.0}}

    monkeypatch.setattr(finetune_pkg, "finetune", fake_finetune)
    runner = StudyRunner(spec, out)
    adapter = runner.path(stage.cell, "finetune")
    settings = {"model": "org/model-0.5B", "data": "sample", "out": adapter, "prompt": "neutral"} | spec.lora()
    start_output_folder(FinetuneConfig(**settings))  # an earlier run of the same settings...
    (adapter / "checkpoint-1").mkdir()
    (adapter / "checkpoint-1" / "trainer_state.json").write_text("{}")  # ...interrupted after its first checkpoint
    runner.finetune(stage)
    assert seen[-1] == ("latest", False)
    (adapter / "adapter_card.json").write_text(json.dumps({"training": {"tokens_per_second": 5.0}}))
    measured = runner.finetune(stage)  # finished before the interruption: kept, not trained again
    assert len(seen) == 1 and measured["adapter"].startswith("kept") and measured["tokens_per_second"] == 5.0
    changed = StudyRunner(
        load_study(write_study(tmp_path, STUDY | {"conditions": {"fine-tuned": {"lora": {"max_steps": 2}}}})), out
    )
    changed.finetune(next(s for s in make_plan(changed.spec, out).stages if s.stage == "finetune"))
    assert seen[-1] == (None, True)  # other settings: trained afresh
