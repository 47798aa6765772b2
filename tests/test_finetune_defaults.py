"""Fine-tuning defaults from the device (issue 46): the micro-batch and the dtypes are a function of
the device's facts and the measured rows of tide_bench/core/device_evidence.yaml (one H200)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide_bench.core.errors import ConfigError
from tide_bench.core.evidence import Evidence, load_evidence, shipped_evidence
from tide_bench.finetune.config import FinetuneConfig, plan_steps
from tide_bench.finetune.defaults import (
    HEADROOM,
    choose_training_defaults,
    faster_base_dtype,
    memory_model,
)
from tide_bench.finetune.precision import DeviceFacts

GIB = 2**30
H200 = DeviceFacts("cuda", cuda_bf16=True, name="NVIDIA H200", free_memory_bytes=140 * GIB)
SMALL_GPU = DeviceFacts("cuda", cuda_bf16=True, name="NVIDIA L4", free_memory_bytes=22 * GIB)
Q05, Q3 = 494_032_768, 3_085_938_688  # Qwen2.5-0.5B and -3B without LoRA


def test_on_the_h200_both_measured_sizes_train_at_sixteen_by_one_in_bf16_with_fp32_lora() -> None:
    for params in (Q05, Q3):
        chosen = choose_training_defaults(H200, params=params, seq_tokens=218)
        assert chosen.micro_batch == 16 and chosen.precision.name == "bf16"
        assert (chosen.base_dtype, chosen.lora_dtype) == ("bfloat16", "float32")
        assert "16 x 1" in chosen.reason and chosen.estimated_peak_gb is not None
    card = chosen.card()
    assert card["compute"] == "bf16 autocast" and "device_evidence.yaml" in card["evidence"]
    # the old fp32-base row (4 x 4) is not comparable with any bf16 row: the dtype reason says what is measured
    assert "no comparable measurement" in card["dtype_reason"] and "4,615" not in card["dtype_reason"]
    plan = plan_steps(FinetuneConfig(model="m", out=Path("o")), 7000, "cuda", 1, chosen.micro_batch)
    assert (plan.batch_size, plan.grad_accum) == (16, 1)


def test_the_memory_model_is_fitted_to_the_rows_and_errs_on_the_safe_side() -> None:
    evidence = shipped_evidence()
    model = memory_model(evidence)
    assert 1.4 < model.fp32_factor < 1.6 and 0.15 < model.checkpointing_factor < 0.3
    for row in evidence.training:
        estimate = model.peak_gb(
            float(row["params"]), int(row["max_seq_tokens"]), int(row["micro_batch"]), str(row["base_dtype"]),
            bool(row.get("gradient_checkpointing")),
        )  # fmt: skip
        assert row["peak_reserved_gb"] <= estimate <= 1.5 * row["peak_reserved_gb"], row


def test_a_smaller_gpu_gets_a_micro_batch_that_fits_and_a_cpu_keeps_one() -> None:
    chosen = choose_training_defaults(SMALL_GPU, params=Q3, seq_tokens=1024)
    assert chosen.micro_batch < 16 and chosen.estimated_peak_gb <= HEADROOM * 22
    cpu = choose_training_defaults(DeviceFacts("cpu", cpu_bf16=False), params=Q05, seq_tokens=218)
    assert cpu.micro_batch == 1 and cpu.base_dtype == "float32" and cpu.precision.name == "fp32"
    unknown = choose_training_defaults(DeviceFacts("cuda", cuda_bf16=True, name="X"), params=Q05, seq_tokens=200)
    assert unknown.micro_batch == 4 and "unknown" in unknown.reason


def test_what_the_user_sets_wins() -> None:
    mine = choose_training_defaults(H200, params=Q05, seq_tokens=218, batch_size=2, requested_precision="fp32")
    assert mine.micro_batch == 2 and mine.base_dtype == "float32" and "--batch-size" in mine.reason
    qlora = choose_training_defaults(H200, params=Q3, seq_tokens=218, quantize="4bit")
    assert qlora.base_dtype == "nf4" and qlora.micro_batch == 16


def _with_rows(*rows: dict) -> Evidence:
    shipped = shipped_evidence()
    return Evidence(shipped.training + rows, shipped.generation, "test rows")


FP32_16 = {"device": "NVIDIA H200", "params": Q05, "micro_batch": 16, "grad_accum": 1, "base_dtype": "float32",
           "max_seq_tokens": 218, "peak_allocated_gb": 12.0, "validation": False}  # fmt: skip


def test_a_comparable_faster_measurement_changes_the_base_dtype_and_nothing_else_does() -> None:
    faster = _with_rows(FP32_16 | {"tokens_per_s": 14_000})  # 1.17x the bf16 row at 16 x 1
    chosen = choose_training_defaults(H200, params=Q05, seq_tokens=218, evidence=faster)
    assert chosen.base_dtype == "float32" and chosen.precision.name == "bf16" and "14,000" in chosen.dtype_reason
    for rows in (
        (FP32_16 | {"tokens_per_s": 12_500},),  # within 10 %: noise
        (FP32_16 | {"tokens_per_s": 14_000, "validation": True},),  # not comparable
        (FP32_16 | {"tokens_per_s": 14_000, "device": "NVIDIA A100"},),  # another device
    ):
        kept = choose_training_defaults(H200, params=Q05, seq_tokens=218, evidence=_with_rows(*rows))
        assert kept.base_dtype == "bfloat16", rows
    assert faster_base_dtype(shipped_evidence(), H200, Q05, 4) is None  # the shipped 4 x 4 pair is not comparable
    tight = DeviceFacts("cuda", cuda_bf16=True, name="NVIDIA H200", free_memory_bytes=9 * GIB)
    small = choose_training_defaults(tight, params=Q05, seq_tokens=218, evidence=faster)
    assert small.base_dtype == "bfloat16" or small.estimated_peak_gb <= HEADROOM * 9


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    free=st.integers(1, 200),
    more=st.integers(0, 100),
    params=st.integers(50_000_000, 20_000_000_000),
    tokens=st.integers(16, 4096),
    checkpointing=st.booleans(),
)
def test_more_memory_never_gives_a_smaller_micro_batch_and_the_choice_fits(
    free: int, more: int, params: int, tokens: int, checkpointing: bool
) -> None:
    def chosen(gib: int, seq: int):
        facts = DeviceFacts("cuda", cuda_bf16=True, name="any", free_memory_bytes=gib * GIB)
        return choose_training_defaults(facts, params=params, seq_tokens=seq, gradient_checkpointing=checkpointing)

    a, b = chosen(free, tokens), chosen(free + more, tokens)
    assert a.micro_batch <= b.micro_batch and 16 % a.micro_batch == 0
    assert a.micro_batch == 1 or a.estimated_peak_gb <= HEADROOM * free
    assert chosen(free, tokens * 2).micro_batch <= a.micro_batch


def test_a_malformed_evidence_file_is_refused_with_the_row(tmp_path: Path) -> None:
    path = tmp_path / "evidence.yaml"
    path.write_text("training:\n  - {device: X, params: 1}\ngeneration: []\n")
    with pytest.raises(ConfigError, match="row 1 lacks micro_batch") as err:
        load_evidence(path)
    assert err.value.path == str(path) and err.value.field == "training[0]"
