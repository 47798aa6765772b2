"""`tide-bench eval` end to end with the offline demo model, and its refusals."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import MULTI_EXCHANGE
from tide_bench.cli.main import cli
from tide_bench.data.sources import SAMPLE_DIR
from tide_bench.generation import load_run
from tide_bench.metrics.reference import METRIC_NAMES
from tide_bench.tasks.prompts import prompt_sha256

pytestmark = pytest.mark.slow


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def single_exchange_snapshot(root: Path) -> Path:
    """The sample re-laid-out as the other single-exchange variant TIDE's card allows: files
    named ``N_conversation.json`` holding an object keyed by conversation id, no wrapper."""
    for sub in ("conversations", "metadata"):
        (root / sub).mkdir(parents=True)
    for path in (SAMPLE_DIR / "metadata").glob("*.json"):
        (root / "metadata" / path.name).write_text(path.read_text())
    for path in (SAMPLE_DIR / "conversations").glob("*.json"):
        conversations = json.loads(path.read_text())["conversations"]
        name = path.name.replace("_conversations.json", "_conversation.json")
        (root / "conversations" / name).write_text(json.dumps(conversations, indent=1))
    return root


def _eval(data: str, out: Path, model_dir: Path | str, *extra: str):
    """The whole validation split (one persona, 4 items) with short replies: small, yet a run a
    board on that split accepts (a --limit run is refused). ``model_dir`` "demo": ``pretrained=demo``."""
    return _invoke(
        "eval",
        "--data",
        data,
        "--split",
        "validation",
        "--model",
        "hf",
        "--model-args",
        "pretrained=demo" if model_dir == "demo" else f"pretrained={model_dir},dtype=float32",
        "--device",
        "cpu",
        "--batch-size",
        "4",
        "--gen-kwargs",
        "max_gen_toks=16",
        "--output-dir",
        str(out),
        *extra,
    )


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return single_exchange_snapshot(tmp_path_factory.mktemp("tide") / "TIDE")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory, demo_model_dir: Path, snapshot: Path) -> Path:
    out = tmp_path_factory.mktemp("runs") / "demo"
    result = _eval(str(snapshot), out, demo_model_dir)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def multi_exchange_run(tmp_path_factory: pytest.TempPathFactory, demo_model_dir: Path) -> Path:
    """Also passes lm-eval's own options through (response cache, request cache, four seeds)."""
    out = tmp_path_factory.mktemp("runs") / "multi"
    cache = out.parent / "responses"
    result = _eval(
        str(MULTI_EXCHANGE),
        out,
        demo_model_dir,
        "--use_cache",
        str(cache),
        "--cache_requests",
        "true",
        "--seed",
        "1,2,3,4",
        "--system_instruction",
        "Answer in one sentence.",
    )
    assert result.exit_code == 0, result.output
    assert (out.parent / "responses_rank0.db").is_file()  # lm-eval's CachingLM wrote its sqlite file
    return out


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the no-GPU default is what is tested")
def test_the_readmes_demo_eval_command_runs_on_a_machine_without_a_gpu(tmp_path: Path, demo_model_dir: Path) -> None:
    """The README's command has no --device; lm-eval's hf backend then defaults to "cuda" and
    the model failed to load on a machine without one ("Found no NVIDIA driver" / "Torch not
    compiled with CUDA enabled"; the new-user rerun). Without a GPU, no --device means the CPU."""
    out = tmp_path / "runs" / "demo"
    result = _invoke(
        "eval", "--data", "sample", "--model-args", "pretrained=demo", "--limit", "1",
        "--gen-kwargs", "max_gen_toks=4", "--output-dir", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["generation"]["device"] == "cpu"
    chosen = manifest["generation"]["device_choices"]["batch_size"]  # no --batch-size: auto, 1 on a CPU
    assert chosen["requested"] == "auto" and chosen["chosen"] == manifest["generation"]["batch_size"] == 1
    timings = manifest["timings"]  # issue 46: generation apart from what the harness does around it
    assert 0 < timings["generate_s"] <= timings["evaluate_s"] <= timings["total_s"] - timings["model_load_s"]
    # --device cuda on this machine: the hint says so, not "check the model path or hub id"
    result = _invoke("eval", "--data", "sample", "--model-args", "pretrained=demo", "--device", "cuda",
                     "--limit", "1", "--output-dir", str(tmp_path / "cuda"))  # fmt: skip
    assert result.exit_code == 2 and "hint: there is no CUDA GPU here: pass --device cpu" in result.output
    assert "model path or hub id" not in result.output and not (tmp_path / "cuda").exists()


def test_eval_with_limit_runs_to_completion_on_a_single_exchange_snapshot(
    tmp_path: Path, demo_model_dir: Path, snapshot: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Also: ``pretrained=demo`` is the offline demo model (issue 34.4), the run ends with a results
    table (34.5), and the model is named by its name, not this machine's path to it (34.6)."""
    result = _eval(str(snapshot), tmp_path / "r", "demo", "--limit", "2")
    assert result.exit_code == 0, result.output
    assert not [
        r for r in caplog.records if "Custom kwargs can be passed" in r.getMessage()
    ]  # lm-eval's irrelevant hint
    run = load_run(tmp_path / "r")
    assert [g.turn for g in run.generations] == [1, 1]
    manifest = json.loads((tmp_path / "r" / "run.json").read_text())
    assert manifest["generation"]["limit"] == 2
    # pretrained=demo: the converted demo model from the shared cache, in float32
    assert manifest["model"]["parsed_args"]["pretrained"] == str(demo_model_dir)
    assert manifest["model"]["parsed_args"]["dtype"] == "float32"
    # the results table: every metric with its mean, CI (or why there is none) and n
    table = result.output[: result.output.index("run written:")]
    assert "| metric" in table and "| 95% CI" in table and "SmolLM2-135M-Instruct on " in table
    cosine = next(line for line in table.splitlines() if line.startswith("| cosine similarity"))
    mean, ci, n = (cell.strip() for cell in cosine.strip("|").split("|")[1:])
    assert float(mean) == pytest.approx(manifest["reference_metrics"]["overall"]["cosine_sim"]["mean"], abs=1e-3)
    assert n == "2" and (ci.startswith("[") or ci.startswith("n/a: "))
    assert "--limit 2: a limited run is a test" in table
    # named by its name: run.json, lm-eval's folder, the view page's title
    assert manifest["model"]["name"] == "SmolLM2-135M-Instruct"
    assert [p.name for p in (tmp_path / "r" / "lm_eval").iterdir()] == ["SmolLM2-135M-Instruct"]
    view = _invoke("view", str(tmp_path / "r"), "--out", str(tmp_path / "view.html"))
    assert view.exit_code == 0, view.output
    title = re.search(r"<title>(.*?)</title>", (tmp_path / "view.html").read_text()).group(1)
    assert "SmolLM2-135M-Instruct" in title and str(demo_model_dir) not in title and "/" not in title


def test_single_exchange_run_holds_real_generations_and_metrics(finished_run: Path) -> None:
    run = load_run(finished_run)
    assert len(run.generations) == 4  # the whole validation split of the one task
    assert {g.turn for g in run.generations} == {1} and all(g.history == [] for g in run.generations)
    for gen in run.generations:
        assert len(gen.reply.split()) >= 3, gen.reply  # real text, not an empty stub
        assert "<|im_start|>assistant" in gen.prompt  # the chat template was applied
        assert gen.prompt.count("<|im_start|>user") == 1  # no history: only the client's message
        assert set(METRIC_NAMES) <= set(gen.metrics)
        assert 0.0 <= gen.metrics["rouge_l"] <= 1.0 and -1.0 <= gen.metrics["cosine_sim"] <= 1.0


def test_multi_exchange_run_answers_turn_two_with_history(multi_exchange_run: Path) -> None:
    run = load_run(multi_exchange_run)
    assert {g.turn for g in run.generations} == {1, 2}
    turn2 = next(g for g in run.generations if g.turn == 2)
    assert turn2.prompt.count("<|im_start|>user") == 2  # history + current client turn
    manifest = json.loads((multi_exchange_run / "run.json").read_text())
    assert set(manifest["reference_metrics"]["by_turn"]) == {"1", "2"}
    generation = manifest["generation"]
    assert generation["response_cache_used"] is True and generation["cache_requests"] == "true"
    assert generation["seed"] == [1, 2, 3, 4]
    prompt = manifest["prompt"]  # the extra instruction is part of the hashed prompt
    assert prompt["system_instruction"] == "Answer in one sentence."
    assert (
        prompt["prompt_sha256"]
        == prompt_sha256(prompt["system_prompt"], "Answer in one sentence.")
        != prompt["task_prompt_sha256"]
    )


def test_manifest_records_what_produced_the_run(finished_run: Path, snapshot: Path) -> None:
    m = json.loads((finished_run / "run.json").read_text())
    assert m["data"]["source"] == f"local:{snapshot.resolve()}" and not m["data"]["is_synthetic_sample"]
    assert m["data"]["split"] == "validation" and len(m["data"]["split_sha256"]) == 64
    assert m["prompt"]["prompt_sha256"] == m["prompt"]["task_prompt_sha256"]  # no extra instruction
    assert m["prompt"]["task_version"] == 3.0 and m["prompt"]["condition"] == "neutral"
    assert m["model"]["backend"] == "hf" and m["model"]["num_parameters"] > 100_000_000
    assert m["tasks"] == ["tide_empathy"] and m["subtasks"] == ["tide_empathy"]
    assert m["generation"]["gen_kwargs"]["tide_empathy"]["max_gen_toks"] == 16
    assert m["environment"]["packages"]["lm_eval"].startswith("0.4.")
    assert m["n_generations"] == 4
    cos = m["reference_metrics"]["overall"]["cosine_sim"]
    assert cos["n"] == 4 and cos["n_clusters"] == len({g.persona_id for g in load_run(finished_run).generations})
    if cos["n_clusters"] >= 2:  # the interval resamples personas: one persona cannot give an honest interval
        assert cos["ci_low"] <= cos["mean"] <= cos["ci_high"]
    else:
        assert cos["ci_low"] is None and cos["ci_high"] is None
    assert set(m["reference_metrics"]["by_turn"]) == {"1"}
    # lm-eval's own files are there, as the lm_eval CLI writes them.
    results = json.loads((finished_run / m["files"]["results"]).read_text())
    assert "tide_empathy" in results["results"]
    assert results["config"]["model"] == "hf"


def test_plain_lm_eval_runs_the_task_on_single_exchange_data(
    tmp_path: Path, demo_model_dir: Path, snapshot: Path
) -> None:
    """The older `lm_eval --include_path "$(tide-bench tasks-path)" --tasks tide_empathy` on the
    likely real shape: it keeps working, without "overrides existing task" warnings."""
    include = CliRunner().invoke(cli, ["tasks-path"]).stdout.strip()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lm_eval",
            "--include_path",
            include,
            "--tasks",
            "tide_empathy",
            "--metadata",
            json.dumps({"tide_data": str(snapshot)}),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={demo_model_dir},dtype=float32",
            "--device",
            "cpu",
            "--batch_size",
            "2",
            "--limit",
            "2",
            "--gen_kwargs",
            "max_gen_toks=8",
            "--apply_chat_template",
            "--log_samples",
            "--output_path",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "overrides existing task" not in proc.stderr
    samples = list((tmp_path / "out").rglob("samples_tide_empathy_*.jsonl"))
    assert len(samples) == 1
    docs = [json.loads(line)["doc"] for line in samples[0].read_text().splitlines()]
    assert len(docs) == 2 and {d["turn"] for d in docs} == {1}


def test_a_turn_the_data_lacks_is_refused_before_the_model_loads(tmp_path: Path, snapshot: Path) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "--data",
            str(snapshot),
            "--tasks",
            "tide_empathy_turn2",
            "--model-args",
            f"pretrained={tmp_path}/never-loaded",
            "--output-dir",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "has no turn-2 items" in result.output and "run tide_empathy" in result.output
    assert "model failed to load" not in result.output and not (tmp_path / "r").exists()


def test_finished_run_is_not_overwritten_silently(finished_run: Path) -> None:
    result = CliRunner().invoke(
        cli, ["eval", "--data", "sample", "--model-args", "pretrained=x", "--output-dir", str(finished_run)]
    )
    assert result.exit_code == 2
    assert "already holds a finished run" in result.output


def test_unknown_task_is_refused_before_loading_anything(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["eval", "--data", "sample", "--tasks", "tide_nope", "--output-dir", str(tmp_path / "r")]
    )
    assert result.exit_code == 2
    assert "unknown task(s): tide_nope" in result.output and "tide_empathy_turn1" in result.output
    assert not (tmp_path / "r" / "run.json").exists()


def test_model_that_fails_to_load_leaves_no_manifest(tmp_path: Path) -> None:
    out = tmp_path / "r"
    result = CliRunner().invoke(
        cli,
        ["eval", "--data", "sample", "--model-args", f"pretrained={tmp_path}/missing-model", "--output-dir", str(out)],
    )
    assert result.exit_code == 2
    assert "model failed to load" in result.output
    assert "Traceback" not in result.output
    assert not (out / "run.json").exists()


def test_unknown_backend(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["eval", "--data", "sample", "--model", "nope", "--output-dir", str(tmp_path / "r")]
    )
    assert result.exit_code == 2 and "unknown model backend 'nope'" in result.output


@pytest.mark.parametrize(
    "run_fixture", ["finished_run", "multi_exchange_run"], ids=["single-exchange", "multi-exchange"]
)
def test_the_whole_pipeline_runs_on_both_data_shapes(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_fixture: str
) -> None:
    """eval (the fixture) -> metrics -> judge (fake server) -> annotate -> submit -> leaderboard."""
    from tests.fakes.llm_server import FakeLLMServer
    from tide_bench.annotation import AssignmentOptions, build_annotation
    from tide_bench.judging import judge_run, load_judge
    from tide_bench.leaderboard import build_site, create_submission
    from tide_bench.leaderboard.config import BoardConfig
    from tide_bench.leaderboard.submission.submit import SubmissionRefused

    run_dir = tmp_path / "run"
    shutil.copytree(request.getfixturevalue(run_fixture), run_dir)
    run = load_run(run_dir)
    assert all(set(METRIC_NAMES) <= set(g.metrics) for g in run.generations)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-pipeline-000")
    server = FakeLLMServer().start()
    try:
        result = judge_run(
            run_dir,
            run_dir / "judge",
            load_judge("claude-sonnet", base_url=server.url, overrides={"backoff_base_s": 0.01}),
        )
    finally:
        server.stop()
    assert result.summary["n_scored"] == len(run.generations)
    assert set(result.summary["by_turn"]) == {str(g.turn) for g in run.generations}
    from tide_bench.judging.prompt import user_text

    first_turn = next(g for g in run.generations if not g.history)
    assert "(this is the client's first message)" in user_text(load_judge("claude-sonnet"), first_turn)

    assignment = build_annotation(
        [run_dir], tmp_path / "annotation", AssignmentOptions(per_rater=2, raters=2, overlap=2, repeats=0)
    )
    assert len(assignment["units"]) == 2 and (tmp_path / "annotation" / "rater-1.html").is_file()

    meta = {
        "schema_version": 1,
        "id": "pipeline-model",
        "model_name": "Demo pipeline model",
        "model": {
            "hub_id": "HuggingFaceTB/SmolLM2-135M-Instruct",
            "revision": "main",
        },  # a local folder: tolerated on a demo board
        "parameters": run.manifest["model"]["num_parameters"],
        "condition": "zero-shot",
        "license": "apache-2.0",
        "contact": "dev@example.org",
    }
    (tmp_path / "meta.yaml").write_text(json.dumps(meta))
    # a demo board on the validation split: the sample's items (and copies of them) join demo boards only
    board = BoardConfig(split="validation", demo=True, spot_check_items=0, conversations_per_persona=None)
    prompt = run.manifest["prompt"]
    if prompt.get("system_instruction"):  # the multi-exchange run added one: not the board's prompt, refused ...
        with pytest.raises(SubmissionRefused, match=r"field 'prompt\.prompt_sha256'.*--system-instruction"):
            create_submission(run_dir, tmp_path / "meta.yaml", tmp_path / "submissions", board=board)
        board.prompt_sha256 = {"neutral": prompt["prompt_sha256"]}  # ... unless the board pins exactly that prompt
    create_submission(run_dir, tmp_path / "meta.yaml", tmp_path / "submissions", board=board)
    site = build_site(tmp_path / "submissions", tmp_path / "site", board)
    assert site.accepted == ["pipeline-model"], site.refused
    rows = json.loads((tmp_path / "site" / "leaderboard.json").read_text())["rows"]
    assert rows[0]["n_items"] == len(run.generations)


def test_the_reference_is_a_run_like_any_model(tmp_path: Path) -> None:
    """`--model reference` answers every item with TIDE's reference reply, through lm-eval."""
    result = _invoke("eval", "--data", "sample", "--model", "reference", "--output-dir", str(tmp_path / "ref"))
    assert result.exit_code == 0, result.output
    run = load_run(tmp_path / "ref")
    assert len(run.generations) == 12 and all(g.reply == g.reference_reply for g in run.generations)
    manifest = run.manifest
    assert (
        manifest["model"]["name"] == "sample reference (written for tide-bench)"  # named after its data (34.11)
        and manifest["model"]["is_reference"] is True
    )
    assert "overall" not in manifest["reference_metrics"]  # no cosine 1.0 printed as a result
    assert manifest["reference_metrics"]["not_applicable"].startswith("not applicable")
    # lm-eval's i.i.d. stderr would ignore persona clustering: tide-bench turns it off (and its log lines)
    (results,) = (tmp_path / "ref" / "lm_eval").glob("*/results_*.json")
    block = json.loads(results.read_text())["results"]["tide_empathy"]
    assert block["cosine_sim_stderr,none"] == "N/A" and "bootstrapping for stddev" not in result.output
