"""The fine-tuning and GPU review's findings (2026-12-01, finetune-gpu.md), one test each where a
CPU can show it: multi-GPU logic with simulated device counts, QLoRA on bitsandbytes' CPU
backend with a tiny model, vLLM adapter provenance from the arguments vLLM would get."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from tide_bench.core.errors import ConfigError
from tide_bench.finetune.config import FinetuneConfig, plan_steps
from tide_bench.finetune.outputs import checkpoint_to_resume, start_output_folder
from tide_bench.finetune.precision import Precision
from tide_bench.generation.manifest import adapter_block, build_manifest
from tide_bench.generation.runner import check_adapter_args, place_system_prompts
from tide_bench.tasks.placement import probe_placement
from tide_bench.tasks.prompts import prompt_sha256


# ---------------------------------------------------------------- M1
@pytest.mark.parametrize(
    ("processes", "device", "step"),
    [(1, "cuda", (16, 1)), (2, "cuda", (8, 1)), (4, "cuda", (4, 1)), (8, "cuda", (2, 1)), (16, "cuda", (1, 1)),
     (2, "cpu", (1, 8))],
)  # fmt: skip
def test_every_step_sees_sixteen_sequences_whatever_the_process_count(processes: int, device: str, step) -> None:
    """M1: epoch mode on N processes used to run N times fewer steps of 16*N sequences."""
    plan = plan_steps(FinetuneConfig(model="m", out=Path("o")), 7000, device, processes)
    assert (plan.batch_size, plan.grad_accum) == step and plan.batch_size * plan.grad_accum * processes == 16
    one = plan_steps(FinetuneConfig(model="m", out=Path("o")), 7000, device, 1)
    assert abs(plan.total_steps - one.total_steps) <= 3 and plan.note is None  # same schedule (rounding per shard)


def test_a_process_count_that_cannot_cut_sixteen_says_so() -> None:
    plan = plan_steps(FinetuneConfig(model="m", out=Path("o")), 700, "cuda", 3)
    assert plan.batch_size * plan.grad_accum * 3 != 16 and "cannot be cut evenly" in plan.note


# ---------------------------------------------------------------- H2, L2, L3
def _fake_gpus(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)


def test_one_process_on_eight_gpus_trains_on_one_never_data_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """H2: Trainer would wrap the model in nn.DataParallel and multiply the micro-batch by 8."""
    from tide_bench.finetune.trainer import training_arguments

    config = FinetuneConfig(model="m", out=Path("o"), report_to="none")
    plan = plan_steps(config, 64, "cuda", 1)
    _fake_gpus(monkeypatch, 8)
    args = training_arguments(config, plan, Precision("fp32", "test"), "cuda", True)
    assert args.n_gpu == 1 and args.train_batch_size == plan.batch_size == 16
    assert str(args.device) == "cuda:0"
    # L3: DDP is told every parameter gets a gradient; L2: a resumed run does not re-evaluate its checkpoint
    assert args.ddp_find_unused_parameters is False and args.eval_on_start is True
    resumed = training_arguments(config, plan, Precision("fp32", "test"), "cuda", True, resuming=True)
    assert resumed.eval_on_start is False and resumed.restore_callback_states_from_checkpoint is True


def test_the_card_says_how_many_gpus_were_visible_and_used(monkeypatch: pytest.MonkeyPatch) -> None:
    from tide_bench.finetune.precision import DeviceFacts
    from tide_bench.finetune.train import gpu_use

    _fake_gpus(monkeypatch, 8)
    use = gpu_use(DeviceFacts("cuda", cuda_bf16=True), processes=1)
    assert use["visible_gpus"] == 8 and use["gpus_per_process"] == 1 and "accelerate launch" in use["note"]
    assert gpu_use(DeviceFacts("cuda"), processes=8)["note"] is None
    assert gpu_use(DeviceFacts("cpu"), processes=1) == {"visible_gpus": 0, "gpus_per_process": 0, "note": None}


# ---------------------------------------------------------------- L1
def test_resume_skips_a_checkpoint_whose_save_was_cut_short(tmp_path: Path) -> None:
    config = FinetuneConfig(model="m", out=tmp_path / "a", max_steps=4)
    start_output_folder(config)
    for step, complete in ((2, True), (4, False)):
        (tmp_path / "a" / f"checkpoint-{step}").mkdir()
        if complete:
            (tmp_path / "a" / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    resumed = FinetuneConfig(model="m", out=tmp_path / "a", max_steps=4, resume="latest")
    assert checkpoint_to_resume(resumed) == tmp_path / "a" / "checkpoint-2"


# ---------------------------------------------------------------- H3, M3, L6
def _adapter(folder: Path, rank: int = 16) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": rank, "base_model_name_or_path": "base"}))
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    (folder / "adapter_card.json").write_text(json.dumps({"base_model": "base", "training": {"steps": 3}}))
    return folder


def test_an_adapter_is_recorded_alike_through_peft_vllm_and_merged_weights(tmp_path: Path) -> None:
    """H3: lora_local_path= runs and merged weights recorded `adapter: null`."""
    adapter = _adapter(tmp_path / "adapter")
    hf = adapter_block({"pretrained": "base", "peft": str(adapter)})
    vllm = adapter_block({"pretrained": "base", "lora_local_path": str(adapter)})
    assert hf["sha256"] and len(hf["sha256"]) == 64 and hf["card"]["training"] == {"steps": 3}
    assert {k: v for k, v in hf.items() if k != "loaded_via"} == {k: v for k, v in vllm.items() if k != "loaded_via"}
    assert (hf["loaded_via"], vllm["loaded_via"]) == ("peft", "lora_local_path")
    merged = tmp_path / "merged"
    merged.mkdir()
    (merged / "merge_card.json").write_text(
        json.dumps({"adapter": str(adapter.resolve()), "adapter_sha256": hf["sha256"], "adapter_card": hf["card"]})
    )
    block = adapter_block({"pretrained": str(merged)})
    assert block["loaded_via"] == "merged" and block["sha256"] == hf["sha256"] and block["path"] == hf["path"]
    assert adapter_block({"pretrained": "base"}) is None


def test_vllm_gets_adapters_its_own_way_or_a_clear_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = _adapter(tmp_path / "adapter", rank=20)
    with pytest.raises(ConfigError, match="loads a LoRA adapter with lora_local_path=ADAPTER, not peft="):
        check_adapter_args("vllm", f"pretrained=base,peft={adapter}")
    with pytest.raises(ConfigError, match="the hf backend does not read it"):
        check_adapter_args("hf", f"pretrained=base,lora_local_path={adapter}")
    args = check_adapter_args("vllm", f"pretrained=base,lora_local_path={adapter}")
    assert args.endswith(",max_lora_rank=32")  # rank 20 rounded up to a rank vLLM accepts (its default 16 fails)
    assert check_adapter_args("vllm", f"pretrained=b,lora_local_path={adapter},max_lora_rank=64").endswith("=64")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ConfigError, match=r"needs ray|runs through ray") as err:
        check_adapter_args("vllm", "pretrained=b,data_parallel_size=2")
    assert "tide-bench[vllm]" in err.value.hint


def test_the_study_gives_a_vllm_cell_its_adapter_as_vllm_loads_it(tmp_path: Path) -> None:
    from dataclasses import replace

    from tide_bench.study.plan import Cell, StagePlan
    from tide_bench.study.runner import _model_args
    from tide_bench.study.spec import ModelSpec, StudySpec

    model = ModelSpec(id="q", model="Qwen/Qwen2.5-0.5B-Instruct", model_args={"dtype": "bfloat16"})
    spec = StudySpec(name="s", models=[model], conditions={"fine-tuned": {}}, eval={"backend": "vllm"})
    stage = StagePlan(Cell("q-fine-tuned", "fine-tuned", model), "eval", "f", {})
    args = _model_args(spec, stage, str, tmp_path / "adapter")
    assert args == f"pretrained=Qwen/Qwen2.5-0.5B-Instruct,dtype=bfloat16,lora_local_path={tmp_path / 'adapter'}"
    hf = _model_args(replace(spec, eval={"backend": "hf"}), stage, str, tmp_path / "adapter")
    assert hf.endswith(f",peft={tmp_path / 'adapter'}")


# ---------------------------------------------------------------- L4
def test_a_fine_tuned_entry_whose_adapter_never_beat_the_base_says_so(tmp_path: Path) -> None:
    """L4: the untrained model is never a candidate for "best"; a study cell whose adapter never beat
    it became a plain "fine-tuned" entry. Its submission now says so, and carries the card's verdict."""
    from tide_bench.study.plan import Cell, StagePlan
    from tide_bench.study.runner import StudyRunner
    from tide_bench.study.spec import ModelSpec, StudySpec

    model = ModelSpec(id="q", model="Qwen/Qwen2.5-0.5B-Instruct")
    spec = StudySpec(name="s", models=[model], conditions={"fine-tuned": {}})
    stage = StagePlan(Cell("q-fine-tuned", "fine-tuned", model), "submit", "f", {})

    def meta(beats_base: bool | None) -> dict[str, Any]:
        card = {"base_model": model.model, "training": {"beats_base": beats_base, "steps": 3}}
        adapter = {"path": str(tmp_path / "adapter"), "sha256": "0" * 64, "card": card}
        return StudyRunner(spec, tmp_path).meta(stage, SimpleNamespace(manifest={"model": {"adapter": adapter}}))

    worse, better, unknown = meta(False), meta(True), meta(None)
    assert "did not beat the untrained model's" in worse["notes"] and "least bad adapter" in worse["notes"]
    assert "did not beat" not in better["notes"] and "did not beat" not in unknown["notes"]
    assert worse["condition"] == "fine-tuned" and worse["adapter"]["card"]["training"]["beats_base"] is False


# ---------------------------------------------------------------- M2
NO_SYSTEM_ROLE = (
    "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</{{ m['role'] }}>{% endfor %}<model>"
)
IGNORES_SYSTEM = (
    "{% for m in messages %}{% if m['role'] != 'system' %}<{{ m['role'] }}>{{ m['content'] }}{% endif %}{% endfor %}"
)


def _render(template: str):
    import jinja2

    env = jinja2.Environment()

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    compiled = env.from_string(template)
    return lambda messages: compiled.render(messages=messages)


def test_where_the_system_prompt_can_go_is_probed_through_the_renderer() -> None:
    assert (
        probe_placement(_render("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}")) == "system"
    )
    assert probe_placement(_render(NO_SYSTEM_ROLE)) == "first_user_turn"
    assert probe_placement(_render(IGNORES_SYSTEM)) == "first_user_turn"  # silently left out: folded too
    assert probe_placement(_render("{{ raise_exception('no') }}{% set raise_exception = 1 %}")) == "dropped"


def test_tide_bench_eval_folds_the_system_prompt_for_such_templates_and_records_it() -> None:
    """M2: lm-eval dropped the instruction and run.json kept the usual prompt hash."""
    render = _render(NO_SYSTEM_ROLE)
    import jinja2

    def lm_eval_style(history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        try:  # lm-eval 0.4.13's HFLM.apply_chat_template: on a TemplateError, drop the system message
            return render(history)
        except jinja2.exceptions.TemplateError:
            return render([m for m in history if m["role"] != "system"])

    lm = SimpleNamespace(apply_chat_template=lm_eval_style)
    assert place_system_prompts(lm) == "first_user_turn"
    text = lm.apply_chat_template([{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}])
    assert text == "<user>Be kind.\n\nHi</user><model>"

    def manifest(placement: str) -> dict[str, Any]:
        config = {"model": "hf", "model_args": "pretrained=x", "tasks": ["tide_empathy"], "apply_chat_template": True,
                  "system_prompt_placement": placement}  # fmt: skip
        results = {
            "configs": {"tide_empathy": {"description": "Be kind.", "metadata": {"prompt_condition": "neutral"}}}
        }
        return build_manifest(
            config=config, results=results, files={}, provenance={}, reference_metrics={}, n_generations=0,
            started_at="t", finished_at="t", timings={}, command=None, environment={"packages": {}},
        )["prompt"]  # fmt: skip

    kept, folded, dropped = manifest("system"), manifest("first_user_turn"), manifest("dropped")
    assert kept["prompt_sha256"] == prompt_sha256("Be kind.")  # the usual placement keeps the usual hash
    assert len({kept["prompt_sha256"], folded["prompt_sha256"], dropped["prompt_sha256"]}) == 3
    assert (folded["system_prompt_placement"], dropped["system_prompt_placement"]) == ("first_user_turn", "dropped")


def test_boards_accept_a_folded_prompt_and_refuse_a_dropped_one(tmp_path: Path) -> None:
    from tide_bench.generation.run_manifest import RunManifest
    from tide_bench.leaderboard.config import BoardConfig
    from tide_bench.leaderboard.submission.checks import _prompt_checks
    from tide_bench.leaderboard.submission.prompt_check import installed_prompt_hash
    from tide_bench.leaderboard.submission.result import CheckResult

    board = BoardConfig(name="b", split="test")

    def check(placement: str, digest: str) -> list[str]:
        raw = {"prompt": {"system_prompt_placement": placement}}
        run = SimpleNamespace(
            raw=raw, prompt_condition="neutral", prompt_sha256=digest, model=SimpleNamespace(is_reference=False)
        )
        result = CheckResult("entry", tmp_path)
        _prompt_checks(run, board, result)  # type: ignore[arg-type]
        return [str(e) for e in result.errors]

    assert RunManifest  # the reader is untouched: placement is read from the raw prompt block
    assert check("system", installed_prompt_hash("neutral")) == []
    assert check("first_user_turn", installed_prompt_hash("neutral", "first_user_turn")) == []
    assert check("first_user_turn", installed_prompt_hash("neutral")) != []  # a folded run cannot claim the plain hash
    refused = check("dropped", installed_prompt_hash("neutral", "dropped"))
    assert refused and "never saw the task's system prompt" in refused[0]


# ---------------------------------------------------------------- M4, L5, L6
@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, demo_model_dir: Path) -> Path:
    """A random two-layer Llama with the demo model's tokenizer and chat template (seconds to train)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(demo_model_dir)
    config = LlamaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=len(tok), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, max_position_embeddings=1024,
    )  # fmt: skip
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny") / "model"
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_qlora_trains_merges_and_is_recorded_on_a_cpu(tmp_path: Path, tiny_model: Path) -> None:
    """M4: the 4-bit path (NF4 base, prepare_model_for_kbit_training, LoRA on Linear4bit, the card,
    merging into an unquantized base) run end to end, on bitsandbytes' CPU backend."""
    pytest.importorskip("bitsandbytes")
    from transformers import TrainerCallback

    from tide_bench.finetune import finetune, merge_adapter

    class Probe(TrainerCallback):
        facts: ClassVar[dict[str, Any]] = {}

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            weights = dict(model.named_parameters())
            base = next(p for n, p in weights.items() if n.endswith("q_proj.base_layer.weight"))
            lora = next(p for n, p in weights.items() if "lora_A" in n)
            Probe.facts = {"base": type(base).__name__, "lora": str(lora.dtype), "n_gpu": args.n_gpu}

    out = tmp_path / "qlora"
    config = FinetuneConfig(
        model=str(tiny_model), data="sample", out=out, quantize="4bit", max_steps=2, eval_steps=2, batch_size=1,
        grad_accum=1, max_length=512, limit_examples=2, report_to="none", learning_rate=0.01,
    )  # fmt: skip
    card = finetune(config, progress=False, callbacks=[Probe()])
    assert Probe.facts == {"base": "Params4bit", "lora": "torch.float32", "n_gpu": 0}
    dtype = {"bf16": "bfloat16", "fp32": "float32"}[card["hyperparameters"]["precision"]]
    assert card["quantization"]["bits"] == 4 and card["quantization"]["compute_dtype"] == dtype  # the training dtype
    assert "unquantized base" in card["quantization"]["evaluation"]  # L5: said in the card
    assert card["training"]["steps"] == 2 and (out / "adapter_model.safetensors").is_file()
    merged = merge_adapter(out, tmp_path / "merged")
    merge_card = json.loads((merged / "merge_card.json").read_text())
    assert merge_card["adapter"] == str(out.resolve())  # L6: resolved, not as typed
    block = adapter_block({"pretrained": str(merged)})
    assert block["sha256"] == adapter_block({"peft": str(out)})["sha256"] and block["card"]["quantization"]
