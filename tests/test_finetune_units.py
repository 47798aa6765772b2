"""Fine-tuning's decision functions, one hand-made case per branch (no model training; seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError
from tide_bench.core.hardware import cpu_has_native_bf16
from tide_bench.finetune.config import FinetuneConfig, check_config, plan_steps
from tide_bench.finetune.lora import ALL_LINEAR, check_quantization, linear_module_names, resolve_targets
from tide_bench.finetune.outputs import CONFIG_FILE, check_output_folder, checkpoint_to_resume, start_output_folder
from tide_bench.finetune.precision import DeviceFacts, choose_precision
from tide_bench.finetune.trainer import keep_reply_logits, report_targets


@pytest.mark.parametrize(
    ("requested", "facts", "expected"),
    [
        ("auto", DeviceFacts("cuda", cuda_bf16=True), "bf16"),
        ("auto", DeviceFacts("cuda", cuda_bf16=False), "fp16"),
        ("fp32", DeviceFacts("cuda", cuda_bf16=True), "fp32"),
        ("auto", DeviceFacts("cpu", cpu_bf16=True), "bf16"),
        ("auto", DeviceFacts("cpu", cpu_bf16=False), "fp32"),
        ("bf16", DeviceFacts("cpu", cpu_bf16=True), "bf16"),
        ("fp32", DeviceFacts("cpu", cpu_bf16=True), "fp32"),
        ("auto", DeviceFacts("mps"), "fp32"),
    ],
)
def test_precision_choice(requested: str, facts: DeviceFacts, expected: str) -> None:
    assert choose_precision(requested, facts).name == expected


@pytest.mark.parametrize(
    ("requested", "facts", "message"),
    [
        ("bf16", DeviceFacts("cpu", cpu_bf16=False), "pathologically slow"),
        ("fp16", DeviceFacts("cpu", cpu_bf16=True), "needs a CUDA GPU"),
        ("bf16", DeviceFacts("cuda", cuda_bf16=False), "does not support bf16"),
    ],
)
def test_precision_refusals(requested: str, facts: DeviceFacts, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        choose_precision(requested, facts)


def test_native_bf16_is_read_from_the_cpu_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu sse2 avx2 fma avx512f\n")
    assert cpu_has_native_bf16(info) is False  # AVX2/AVX512F without BF16: the 13-minute case
    info.write_text("processor : 0\nflags : fpu avx2 avx512f avx512_bf16 amx_tile\n")
    assert cpu_has_native_bf16(info) is True
    info.write_text("processor : 0\nFeatures : fp asimd sve bf16 i8mm\n")  # Arm (Graviton3, Apple)
    assert cpu_has_native_bf16(info) is True
    assert cpu_has_native_bf16(tmp_path / "missing") is False


def test_batch_defaults_keep_sixteen_sequences_per_step_and_the_schedule_matches_trainer() -> None:
    config = FinetuneConfig(model="m", out=Path("o"))
    gpu, cpu = plan_steps(config, 100, "cuda", 1, micro_batch=4), plan_steps(config, 100, "cpu", 1)
    assert (gpu.batch_size, gpu.grad_accum) == (4, 4) and (cpu.batch_size, cpu.grad_accum) == (1, 16)
    assert gpu.steps_per_epoch == 7 and gpu.total_steps == 21 and gpu.eval_steps == 7 and gpu.warmup_steps == 0
    big = plan_steps(config, 100, "cuda", 1)  # a GPU's largest: what the device's memory allows (finetune/defaults.py)
    assert (big.batch_size, big.grad_accum) == (16, 1) and big.total_steps == 21
    accum = plan_steps(FinetuneConfig(model="m", out=Path("o"), grad_accum=4), 100, "cuda", 1)
    assert (accum.batch_size, accum.grad_accum) == (4, 4)  # the user's accumulation: the micro-batch fills 16
    two = plan_steps(FinetuneConfig(model="m", out=Path("o"), batch_size=1, grad_accum=1, max_steps=4), 8, "cpu", 2)
    assert two.steps_per_epoch == 4 and two.total_steps == 4 and two.eval_steps == 4
    mine = plan_steps(
        FinetuneConfig(model="m", out=Path("o"), batch_size=2, eval_steps=50, warmup_steps=3), 10, "cpu", 1
    )
    assert mine.grad_accum == 8 and mine.eval_steps == 3 and mine.warmup_steps == 3  # eval never past the last step


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"split": "test"}, "refusing to train on the test split"),
        ({"split": "validation"}, "validation split is the training split"),
        ({"batch_size": 0}, "batch_size must be a positive"),
        ({"dropout": 1.0}, "dropout must be in"),
        ({"quantize": "8bit"}, "unknown quantization"),
        ({"resume": "latest", "overwrite": True}, "choose one"),
    ],
)
def test_config_refusals(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_config(FinetuneConfig(model="m", out=Path("o"), **changes))


def test_quantization_needs_bitsandbytes_and_cuda_or_its_cpu_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from tide_bench.finetune import lora

    check_quantization(None, "cpu")
    with pytest.raises(ConfigError, match="needs a CUDA GPU; this run is on mps"):
        check_quantization("4bit", "mps")
    monkeypatch.setattr(lora, "_bitsandbytes_version", lambda: (0, 45))
    if importlib.util.find_spec("bitsandbytes") is not None:
        with pytest.raises(ConfigError, match=r"on a CPU needs bitsandbytes >= 0\.50"):
            check_quantization("4bit", "cpu")
        check_quantization("4bit", "cuda")  # any bitsandbytes on CUDA
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "bitsandbytes" else real(name, *a)
    )
    with pytest.raises(ConfigError, match="needs bitsandbytes, which is not installed"):
        check_quantization("4bit", "cuda")
    result = CliRunner().invoke(
        cli, ["finetune", "--model", "m", "--data", "sample", "--out", "o", "--quantize", "4bit"]
    )
    assert result.exit_code == 2 and "bitsandbytes" in result.output and "Traceback" not in result.output


def _tiny(kind: str) -> object:
    from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

    if kind == "gpt2":
        return AutoModelForCausalLM.from_config(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64))
    return AutoModelForCausalLM.from_config(
        LlamaConfig(
            num_hidden_layers=1,
            hidden_size=16,
            intermediate_size=32,
            num_attention_heads=2,
            num_key_value_heads=2,
            vocab_size=64,
        )
    )


def test_lora_targets_accept_gpt2_conv1d_all_linear_and_refuse_unknown_names() -> None:
    gpt2, llama = _tiny("gpt2"), _tiny("llama")
    assert {"c_attn", "c_proj"} <= set(linear_module_names(gpt2))
    assert resolve_targets(gpt2, None) == ["c_attn", "c_proj"]
    assert resolve_targets(llama, None) == ["q_proj", "k_proj", "v_proj", "o_proj"]
    assert resolve_targets(llama, [ALL_LINEAR]) == ALL_LINEAR
    with pytest.raises(ConfigError, match=r"(?s)unknown target module\(s\) c_attn.*q_proj"):
        resolve_targets(llama, ["c_attn"])


def test_logits_only_over_the_reply_give_the_same_loss() -> None:
    import torch

    torch.manual_seed(0)
    model = _tiny("llama").eval()
    ids = torch.randint(0, 64, (3, 12))
    labels = torch.full_like(ids, -100)
    labels[0, 7:10], labels[1, 5:12], labels[2, 9:11] = ids[0, 7:10], ids[1, 5:12], ids[2, 9:11]
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    kept = keep_reply_logits(batch)
    assert kept["logits_to_keep"] == 12 - 5 + 1 and kept["labels"].shape == (3, 8)
    with torch.no_grad():
        assert torch.allclose(model(**batch).loss, model(**kept).loss, atol=1e-6)
    unlabelled = {**batch, "labels": torch.full_like(ids, -100)}
    assert keep_reply_logits(unlabelled) is unlabelled
    early = {**batch, "labels": ids.clone()}  # labels from position 0: nothing to cut
    assert "logits_to_keep" not in keep_reply_logits(early)


def test_output_folder_is_never_mixed_and_resume_checks_it_continues_the_same_run(tmp_path: Path) -> None:
    out = tmp_path / "adapter"
    config = FinetuneConfig(model="m", out=out, max_steps=4)
    check_output_folder(config)
    start_output_folder(config)
    (out / "checkpoint-2").mkdir()
    (out / "checkpoint-2" / "trainer_state.json").write_text("{}")  # complete (Trainer writes it last)
    with pytest.raises(ConfigError, match="is not empty"):
        check_output_folder(config)
    assert (
        checkpoint_to_resume(FinetuneConfig(model="m", out=out, max_steps=4, resume="latest")) == out / "checkpoint-2"
    )
    with pytest.raises(ConfigError, match=r"settings differ: max_steps: 4 -> 8"):
        checkpoint_to_resume(FinetuneConfig(model="m", out=out, max_steps=8, resume="latest"))
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "holiday.jpg").write_bytes(b"x")
    with pytest.raises(ConfigError, match="does not look like a tide-bench adapter folder"):
        check_output_folder(FinetuneConfig(model="m", out=foreign, overwrite=True))
    assert (foreign / "holiday.jpg").exists() and (out / CONFIG_FILE).is_file()
    with pytest.raises(ConfigError, match="nothing to resume"):
        checkpoint_to_resume(FinetuneConfig(model="m", out=tmp_path / "empty", resume="latest"))


def test_reporting_goes_to_installed_trackers_and_wandb_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers.integrations as integrations

    monkeypatch.setattr(integrations, "is_tensorboard_available", lambda: True)
    monkeypatch.setattr(integrations, "is_wandb_available", lambda: True)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    assert report_targets("auto") == ["tensorboard"]  # wandb unconfigured would prompt for a login
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert report_targets("auto") == ["tensorboard", "wandb"]
    monkeypatch.setattr(integrations, "is_tensorboard_available", lambda: False)
    assert report_targets("auto") == ["wandb"] and report_targets("none") == [] and report_targets("wandb") == ["wandb"]


def test_a_damaged_settings_file_stops_resume_with_the_file_named(tmp_path: Path) -> None:
    out = tmp_path / "adapter"
    (out / "checkpoint-2").mkdir(parents=True)
    (out / "checkpoint-2" / "trainer_state.json").write_text("{}")
    (out / CONFIG_FILE).write_text('{"fixed": {"max_steps": 4', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"finetune_config\.json:1.*invalid JSON"):
        checkpoint_to_resume(FinetuneConfig(model="m", out=out, max_steps=4, resume="latest"))
    (out / CONFIG_FILE).unlink()
    with pytest.raises(ConfigError, match=r"holds no finetune_config\.json"):
        checkpoint_to_resume(FinetuneConfig(model="m", out=out, resume="latest"))
    (out / "checkpoint-2" / "trainer_state.json").unlink()
    with pytest.raises(ConfigError, match="not a training checkpoint"):
        checkpoint_to_resume(FinetuneConfig(model="m", out=out, resume=str(out / "checkpoint-2")))
