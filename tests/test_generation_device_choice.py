"""``--batch-size auto`` and the attention implementation are chosen from the device (issue 46): a
function of the device's facts, the model's shape and the measured rows, testable without a GPU."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import LlamaConfig, Qwen2Config

from tide_bench.core.evidence import shipped_evidence
from tide_bench.generation.device_choice import (
    HEADROOM,
    GenerationDevice,
    choose_attention,
    choose_batch_size,
    device_choices,
    generation_device,
    largest_measured_batch,
    model_shape,
    sequence_bytes,
)
from tide_bench.generation.runner import EvalConfig

GIB = 2**30
QWEN05 = model_shape(
    Qwen2Config(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                num_key_value_heads=2, vocab_size=151936),
    params=494_032_768,
)  # fmt: skip
LLAMA8 = model_shape(
    LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                num_key_value_heads=8, vocab_size=128256),
)  # fmt: skip
H200 = GenerationDevice("cuda", "NVIDIA H200", 140 * GIB, (9, 0), flash_attn=False)


def test_on_the_h200_auto_is_the_fastest_measured_batch_and_a_smaller_gpu_gets_what_fits() -> None:
    assert largest_measured_batch(shipped_evidence()) == 128  # 9.64 items/s at 128 against 5.84 at 64
    chosen = choose_batch_size("auto", "hf", H200, QWEN05, 600, 256)
    assert chosen.value == 128 and "fastest measured batch" in chosen.reason
    small = GenerationDevice("cuda", "NVIDIA L4", 22 * GIB, (8, 9))
    fits = choose_batch_size("auto", "hf", small, LLAMA8, 600, 256)
    room = HEADROOM * 22 * GIB - LLAMA8.params * 2
    assert 1 <= fits.value < 128 and fits.value * sequence_bytes(LLAMA8, 600, 256) <= room
    assert LLAMA8.params == pytest.approx(7.5e9, rel=0.05)  # the shape's own count, near Llama-3-8B's


def test_auto_elsewhere_and_what_the_user_sets() -> None:
    cpu = GenerationDevice("cpu")
    assert choose_batch_size("auto", "hf", cpu, QWEN05, 600, 256).value == 1
    assert choose_batch_size("auto", "vllm", H200, QWEN05, 600, 256).value == "auto"
    assert choose_batch_size("auto", "local-chat-completions", cpu, None, 600, 256).value == 1
    assert choose_batch_size(8, "hf", H200, QWEN05, 600, 256).value == 8
    assert choose_batch_size("auto:4", "hf", H200, QWEN05, 600, 256).value == "auto:4"  # lm-eval's own probing
    unknown = choose_batch_size("auto", "hf", GenerationDevice("cuda", "X"), QWEN05, 600, 256)
    assert unknown.value == 16 and "unknown" in unknown.reason


def test_flash_attention_where_the_device_and_the_dtype_allow_and_the_users_choice_wins() -> None:
    flash = GenerationDevice("cuda", "NVIDIA H200", 140 * GIB, (9, 0), flash_attn=True)
    assert choose_attention("hf", flash, "bfloat16", {}).value == "flash_attention_2"
    assert choose_attention("hf", H200, "bfloat16", {}).value is None  # flash_attn not installed: sdpa
    assert "not installed" in choose_attention("hf", H200, "bfloat16", {}).reason
    assert choose_attention("hf", flash, "float32", {}).value is None
    old = GenerationDevice("cuda", "Tesla V100", 30 * GIB, (7, 0), flash_attn=True)
    assert choose_attention("hf", old, "float16", {}).value is None
    assert choose_attention("hf", flash, "bfloat16", {"attn_implementation": "eager"}).value is None
    assert choose_attention("vllm", flash, "bfloat16", {}).value is None


@settings(max_examples=60, deadline=None, derandomize=True)
@given(free=st.integers(1, 200), more=st.integers(0, 100), context=st.integers(16, 8000), new=st.integers(1, 1024))
def test_more_memory_never_gives_a_smaller_batch_and_it_fits(free: int, more: int, context: int, new: int) -> None:
    def batch(gib: int) -> int:
        device = GenerationDevice("cuda", "any", gib * GIB, (8, 0))
        return int(choose_batch_size("auto", "hf", device, LLAMA8, context, new).value)

    a, b = batch(free), batch(free + more)
    assert a <= b <= 128 and a & (a - 1) == 0  # a power of two
    assert a == 1 or a * sequence_bytes(LLAMA8, context, new) <= HEADROOM * free * GIB - LLAMA8.params * 2


def test_the_facts_of_this_machine_and_the_run_settings() -> None:
    assert generation_device("cpu").kind == "cpu"
    chosen = device_choices("hf", "auto", None, "cpu", {"pretrained": "x"}, 600, 256)
    assert chosen["batch_size"].value == 1 and chosen["attention"].value is None
    assert EvalConfig().batch_size == "auto"
    assert model_shape(object()) is None  # a configuration without the usual fields: shape unknown


def test_the_reference_metrics_run_on_the_generation_device() -> None:
    from lm_eval.tasks import get_task_dict

    from tide_bench.tasks.registry import task_manager

    config = EvalConfig(device="cuda:1", data="sample")
    assert config.metadata()["embedding_device"] == "cuda:1"
    assert "embedding_device" not in EvalConfig(device="cpu", data="sample").metadata()
    task = get_task_dict(["tide_empathy"], task_manager(config.metadata()))["tide_empathy"]
    assert task._scorer.device == "cuda:1"  # the encoder loads there, after generation, in one batch
