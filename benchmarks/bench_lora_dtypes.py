"""The base and LoRA dtypes of a LoRA step, compared on a CPU by what bounds a launch-bound GPU step.

On one H200 a LoRA step of Qwen2.5-0.5B at micro-batch 4 is bound by kernel launches, not by
arithmetic (a 3B model, six times the work, took only 1.35x as long). Each aten operator is one
kernel launch on a GPU, so the number of operators one micro-batch dispatches (forward and
backward) is what the dtype setup changes there; it does not depend on the device, so a CPU can
count it. The model is a Qwen2 with the 0.5B's 24 layers and a tiny width (64): the operator count
is the real one, and the CPU time is dominated by per-operator overhead, as on the GPU.

    python benchmarks/bench_lora_dtypes.py [--repeats 7] [--layers 24]

Setups: today's (bf16 base, fp32 LoRA weights, bf16 autocast), the old one (fp32 base under bf16
autocast), bf16 base with fp32 LoRA and no autocast, and an all-bf16 one (LoRA weights bf16: fewer
casts, but bf16 master weights round small Adam updates away). CPU autocast's operator lists are
close to, not the same as, CUDA's.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, table

SETUPS = {  # name: (base dtype, LoRA weights fp32 (peft's autocast_adapter_dtype), bf16 autocast)
    "bf16 base, fp32 LoRA, bf16 autocast (the default)": ("bfloat16", True, True),
    "fp32 base, fp32 LoRA, bf16 autocast (before 2026-12)": ("float32", True, True),
    "bf16 base, fp32 LoRA, no autocast": ("bfloat16", True, False),
    "bf16 base, bf16 LoRA, bf16 autocast": ("bfloat16", False, True),
}


def build(base: str, lora_fp32: bool, layers: int) -> Any:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        hidden_size=64, intermediate_size=128, num_hidden_layers=layers, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=1000, tie_word_embeddings=True,
    )  # fmt: skip
    model = Qwen2ForCausalLM(config).to(getattr(torch, base))
    model.config.use_cache = False
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    return get_peft_model(model, lora, autocast_adapter_dtype=lora_fp32).train()


def measure(name: str, layers: int, repeats: int) -> list[object]:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: collections.Counter[str] = collections.Counter()

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            self.ops[str(func.overloadpacket)] += 1
            return func(*args, **(kwargs or {}))

    base, lora_fp32, autocast = SETUPS[name]
    model = build(base, lora_fp32, layers)
    ids = torch.randint(0, 1000, (4, 128))
    mask = torch.ones_like(ids)
    mask[0, :20] = 0  # one left-padded row, as in a length-grouped micro-batch
    labels = ids.clone()
    labels[:, :64] = -100

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()

    step()
    counter = Count()
    with counter:
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    total = sum(counter.ops.values())
    return [name, f"{total:,}", f"{counter.ops['aten._to_copy']:,}", f"{1000 * statistics.median(times):.0f}"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    rows = [measure(name, args.layers, args.repeats) for name in SETUPS]
    print(f"machine: {machine()}\n{args.layers} layers, width 64, micro-batch 4 x 128 tokens, LoRA r=16 on q/k/v/o\n")
    print(table(["setup", "aten operators per micro-batch", "casts (_to_copy)", "CPU ms (median)"], rows))


if __name__ == "__main__":
    main()
