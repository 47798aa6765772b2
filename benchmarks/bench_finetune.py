"""LoRA training throughput (tokens/s) with the demo model on the sample's train split.

Runs on whatever device accelerate finds: CPU here; on a GPU machine the same script (or
`benchmarks/gpu_finetune.sh` with a larger --model) gives the GPU figure. tokens/s counts
every token of every training example (prompt + reply, padding excluded), forward and
backward, from the adapter card.

    python benchmarks/bench_finetune.py [--steps 10] [--repeats 2] [--batch-size 4] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="default: the offline demo model")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch

    from tide_bench.demo.model import prepare_demo_model
    from tide_bench.finetune import FinetuneConfig, finetune

    torch.set_num_threads(args.threads)
    model = args.model or str(prepare_demo_model())
    rates, cards = [], []
    for _ in range(args.repeats):
        out = Path(tempfile.mkdtemp()) / "adapter"
        card = finetune(
            FinetuneConfig(
                model=model,
                data="sample",
                out=out,
                max_steps=args.steps,
                batch_size=args.batch_size,
                grad_accum=1,
                max_length=args.max_length,
                validation_split=None,
                patience=100,
            ),
            progress=False,
        )  # type: ignore[arg-type]
        rates.append(card["training"]["tokens_per_second"])
        cards.append(card)
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU, {args.threads} torch threads"
    print(
        f"machine: {machine()}\ndevice: {device}; model {model}; precision {cards[0]['hyperparameters']['precision']}\n"
    )
    print(
        table(
            ["steps x batch", "tokens per run", "tokens/s (median)", "all runs tokens/s"],
            [
                [
                    f"{args.steps} x {args.batch_size}",
                    cards[0]["training"]["tokens"],
                    f"{statistics.median(rates):.0f}",
                    ", ".join(f"{r:.0f}" for r in rates),
                ]
            ],
        )
    )
    print(
        "\nloss:",
        json.dumps([round(h["train_loss"], 3) for h in cards[0]["loss_history"] if h.get("train_loss") is not None]),
    )


if __name__ == "__main__":
    main()
