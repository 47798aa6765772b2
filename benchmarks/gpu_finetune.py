"""LoRA fine-tuning on one CUDA GPU: tokens/s and peak memory for a ~0.5B model over several hundred steps.

Each variant is one `tide_bench.finetune.finetune` run on the built-in sample (16 sequences
per optimizer step, the sample's train split repeated, validation every 100 steps):

* base in bf16, micro-batch 4 x 4 (what `tide-bench finetune` does now);
* base in fp32 under bf16 autocast (what it did before issue 20: the weights' bf16 copies
  are made again on every forward and kept for the backward);
* base in bf16 with gradient checkpointing;
* base in 4-bit NF4 (QLoRA), when bitsandbytes is installed.

tokens/s counts non-padding tokens over the optimizer steps after the warm-up (the first
``--warmup`` steps, CUDA synchronised at every step boundary; evaluation and saving are not
timed). Memory is torch's peak allocated and reserved CUDA memory for the variant.

Model: ``--model`` (a local folder or a hub id: downloads are allowed then), else a
randomly initialised model with Qwen2.5-0.5B's shape (24 layers, hidden 896, vocabulary
151,936) and the tokenizer of ``--tokenizer`` or of the demo model. Random weights train as
fast as real ones; the loss means nothing.

    benchmarks/gpu_finetune.sh [--steps 300] [--warmup 20] [--model Qwen/Qwen2.5-0.5B-Instruct] [--json FILE]
    python benchmarks/gpu_finetune.py --cpu-dry-run      # checks the script end to end on a CPU, tiny model
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if sys.version_info < (3, 11):  # noqa: UP036 - said plainly, before an import fails obscurely
    raise SystemExit(f"tide-bench needs Python >= 3.11; this is {sys.version.split()[0]}")

from transformers import TrainerCallback

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, table

QWEN2_5_0_5B = {
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}
TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 49152,
    "tie_word_embeddings": True,
}


def build_random_model(target: Path, tokenizer_dir: str, shape: dict[str, Any]) -> Path:
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = Qwen2Config(
        **shape, max_position_embeddings=4096, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id
    )
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


class StepClock(TrainerCallback):
    """Times each optimizer step (CUDA synchronised at both ends) and counts its tokens."""

    def __init__(self, cuda: bool) -> None:
        self.cuda = cuda
        self.begin: tuple[float, int] = (0.0, 0)
        self.steps: list[tuple[float, int]] = []

    def _sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._sync()
        self.begin = (time.perf_counter(), state.num_input_tokens_seen)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._sync()
        t0, tokens0 = self.begin
        self.steps.append((time.perf_counter() - t0, state.num_input_tokens_seen - tokens0))

    def rate(self, warmup: int) -> tuple[float, int, float]:
        timed = self.steps[warmup:]
        seconds, tokens = sum(s for s, _ in timed), sum(n for _, n in timed)
        return tokens / seconds, tokens, seconds


@contextlib.contextmanager
def base_in_fp32() -> Iterator[None]:
    """The behaviour before issue 20: the frozen base loaded in fp32 whatever the training precision."""
    import tide_bench.finetune.train as train

    original = train.load_base_model
    train.load_base_model = lambda *a, **k: original(*a, **k).float()
    try:
        yield
    finally:
        train.load_base_model = original


def variants(cuda: bool) -> list[tuple[str, dict[str, Any], bool]]:
    """(name, FinetuneConfig changes, base in fp32)."""
    import importlib.util

    found = [
        ("base bf16, 4 x 4 (new)", {}, False),
        ("base fp32 + bf16 autocast, 4 x 4 (before)", {}, True),
        ("base bf16, 4 x 4, gradient checkpointing", {"gradient_checkpointing": True}, False),
    ]
    if cuda and importlib.util.find_spec("bitsandbytes") is not None:
        found.append(("base 4-bit NF4 (QLoRA), 4 x 4", {"quantize": "4bit"}, False))
    return found


def measure(
    name: str, model: str, changes: dict[str, Any], fp32_base: bool, args: argparse.Namespace, cuda: bool
) -> dict[str, Any]:
    import torch

    from tide_bench.finetune import FinetuneConfig, finetune

    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    clock = StepClock(cuda)
    config = FinetuneConfig(
        model=model,
        data=args.data,
        out=Path(tempfile.mkdtemp()) / "adapter",
        max_steps=args.steps,
        batch_size=4,
        grad_accum=4,
        eval_steps=args.eval_steps,
        precision="bf16" if cuda else "fp32",
        max_length=args.max_length,
        report_to="none",
        **changes,
    )
    started = time.perf_counter()
    with base_in_fp32() if fp32_base else contextlib.nullcontext():
        card = finetune(config, progress=False, callbacks=[clock])
    rate, tokens, seconds = clock.rate(args.warmup)
    memory = (
        {
            "peak_allocated_gb": torch.cuda.max_memory_allocated() / 1024**3,
            "peak_reserved_gb": torch.cuda.max_memory_reserved() / 1024**3,
        }
        if cuda
        else {"peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2}
    )
    result = {
        "variant": name,
        "tokens_per_second": rate,
        "timed_steps": len(clock.steps) - args.warmup,
        "timed_tokens": tokens,
        "timed_seconds": seconds,
        "wall_seconds": time.perf_counter() - started,
        "steps": card["training"]["steps"],
        "best_step": card["training"]["best_step"],
        "val_loss": card["training"]["best_val_loss"],
        **memory,
    }
    print(json.dumps(result), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--model", default=None, help="local folder or hub id (default: random-init Qwen2.5-0.5B shape)"
    )
    parser.add_argument("--tokenizer", default=None, help="tokenizer folder for the random model (default: demo model)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20, help="first steps left out of tokens/s")
    parser.add_argument("--eval-steps", type=int, default=100)
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--data", default="sample")
    parser.add_argument("--json", default=None, help="also write the results here (default: $OUT/gpu_finetune.json)")
    parser.add_argument("--cpu-dry-run", action="store_true", help="tiny model, few steps, on CPU: checks the script")
    args = parser.parse_args()

    import torch

    cuda = torch.cuda.is_available()
    if args.cpu_dry_run:
        args.steps, args.warmup, args.eval_steps = min(args.steps, 6), min(args.warmup, 2), min(args.eval_steps, 3)
    elif not cuda:
        raise SystemExit("no CUDA device: this benchmark needs a GPU (or pass --cpu-dry-run to check the script)")
    work = Path(tempfile.mkdtemp())
    model = args.model
    if model is None:
        tokenizer = args.tokenizer
        if tokenizer is None:
            from tide_bench.demo.model import prepare_demo_model

            tokenizer = str(prepare_demo_model())
        model = str(
            build_random_model(work / "random-qwen2.5-0.5b", tokenizer, TINY if args.cpu_dry_run else QWEN2_5_0_5B)
        )
    from transformers import AutoConfig

    n_params = None
    with contextlib.suppress(Exception):
        from accelerate import init_empty_weights
        from transformers import AutoModelForCausalLM

        with init_empty_weights():
            n_params = sum(
                p.numel() for p in AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model)).parameters()
            )
    results = [measure(name, model, changes, fp32_base, args, cuda) for name, changes, fp32_base in variants(cuda)]

    device = torch.cuda.get_device_name(0) if cuda else "CPU (dry run)"
    print(f"\nmachine: {machine()}; device {device}; torch {torch.__version__} (CUDA {torch.version.cuda})")
    print(
        f"model: {args.model or 'random-init, Qwen2.5-0.5B shape'} ({(n_params or 0) / 1e6:.0f}M parameters); "
        f"{args.steps} steps x 16 sequences, first {args.warmup} not timed; sample data, max length {args.max_length}\n"
    )
    memory = ["peak allocated GB", "peak reserved GB"] if cuda else ["peak RSS GB", ""]
    rows = [
        [
            r["variant"],
            f"{r['tokens_per_second']:.0f}",
            r["timed_steps"],
            f"{r.get('peak_allocated_gb', r.get('peak_rss_gb', 0)):.2f}",
            f"{r.get('peak_reserved_gb', 0):.2f}",
            f"{r['wall_seconds']:.0f}",
        ]
        for r in results
    ]
    print(table(["variant", "tokens/s", "timed steps", *memory, "wall s"], rows))
    target = args.json or (str(Path(os.environ["OUT"]) / "gpu_finetune.json") if os.environ.get("OUT") else None)
    if target:
        Path(target).write_text(json.dumps({"machine": machine(), "device": device, "results": results}, indent=1))


if __name__ == "__main__":
    main()
