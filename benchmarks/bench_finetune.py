"""LoRA training on CPU with the demo model: tokens/s and peak memory, new defaults against today's.

Every variant trains the same 16 sequences per optimizer step on the sample's train split
(validation off, so only training is timed), each run in a fresh process so that its peak
RSS is its own. Variants run interleaved (A, B, C, A, B, C, ...) and the table gives medians
and the ratios to "today" measured in this same run (the machine is shared and noisy).

* this code with today's settings: micro-batch 4 x accumulation 4, fp32 (the defaults
  before issue 20), to show what the code changes alone give;
* this code's new defaults: what `tide-bench finetune` now picks on this CPU (micro-batch
  1 x 16, bf16 only where the CPU has native bf16; logits over the reply only, length grouping);
* the new defaults in fp32, to separate the precision's effect from the batch shape's.

With ``--baseline-code REF`` the code at git REF (the commit before issue 20) runs its own
defaults from a temporary worktree, and the ratios are taken against it: that is "today".
Otherwise they are taken against this code with today's settings.

tokens/s counts the non-padding tokens of the training sequences, prompt and reply, over
the optimizer steps only (no model load, no evaluation, no saving).

    python benchmarks/bench_finetune.py [--steps 1] [--repeats 3] [--threads 2] [--baseline-code REF] [--demo-steps 10]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, table

TODAY = {"batch_size": 4, "grad_accum": 4, "precision": "fp32"}
VARIANTS = {
    "this code, today's settings (4 x 4, fp32)": TODAY,
    "this code, new defaults": {},
    "this code, new defaults in fp32": {"precision": "fp32"},
}


def child(spec: dict) -> None:
    """Run one training in this process and print its figures as one JSON line."""
    import time

    import torch

    torch.set_num_threads(spec.pop("threads"))
    from tide_bench.finetune import FinetuneConfig, finetune

    started = time.perf_counter()
    if "demo_steps" in spec:  # the demo's own settings, validation included
        from tide_bench.demo.pipeline import demo_finetune_config

        config = demo_finetune_config(spec["model"], Path(spec["out"]), spec["demo_steps"])
    else:
        config = FinetuneConfig(**spec, validation_split=None, patience=100)
    card = finetune(config, progress=False)
    wall = time.perf_counter() - started
    training = card["training"]
    seconds = training.get("train_seconds") or training.get("seconds")
    print(
        "RESULT "
        + json.dumps(
            {
                "tokens_per_second": training["tokens"] / seconds,
                "tokens": training["tokens"],
                "seconds": seconds,
                "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
                "wall_seconds": wall,
                "precision": card["hyperparameters"]["precision"],
                "shape": f"{card['hyperparameters']['batch_size']} x {card['hyperparameters']['grad_accum']}",
            }
        ),
        flush=True,
    )


def run_variant(settings: dict, common: dict, code_root: Path) -> dict:
    out = Path(tempfile.mkdtemp()) / "adapter"
    spec = common | settings | {"out": str(out)}
    env = os.environ | {"PYTHONPATH": str(code_root), "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True, env=env, cwd=code_root
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"variant {settings} failed:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1].removeprefix("RESULT "))


def baseline_worktree(ref: str) -> Path:
    folder = Path(tempfile.mkdtemp()) / "baseline"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(folder), ref], check=True, capture_output=True
    )
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--model", default=None, help="default: the offline demo model")
    parser.add_argument("--steps", type=int, default=1, help="optimizer steps of 16 sequences per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--demo-steps", type=int, default=10, help="also time `demo --finetune N`'s stage (0: skip)")
    parser.add_argument(
        "--baseline-code", metavar="REF", default=None, help="also run today's defaults on the code at this git ref"
    )
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return

    from tide_bench.demo.model import prepare_demo_model
    from tide_bench.finetune.precision import device_facts

    model = args.model or str(prepare_demo_model())
    common = {"model": model, "data": "sample", "max_steps": args.steps, "threads": args.threads}
    variants = [(name, settings, ROOT) for name, settings in VARIANTS.items()]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the baseline worktree is removed on kill
    worktree = baseline_worktree(args.baseline_code) if args.baseline_code else None
    if worktree:  # the real "today": ratios are taken against it
        variants.insert(0, (f"code at {args.baseline_code}, its defaults (4 x 4, fp32)", TODAY, worktree))
    results: dict[str, list[dict]] = {name: [] for name, _, _ in variants}
    demo: list[dict] = []
    try:
        for repeat in range(args.repeats):
            for name, settings, code in variants:
                results[name].append(run_variant(settings, common, code))
                print(f"repeat {repeat + 1}: {name}: {results[name][-1]}", file=sys.stderr, flush=True)
            if args.demo_steps:
                demo.append(run_variant({"demo_steps": args.demo_steps}, common, ROOT))
                print(f"repeat {repeat + 1}: demo stage: {demo[-1]}", file=sys.stderr, flush=True)
    finally:
        if worktree:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False)

    today = variants[0][0]
    base_rate = statistics.median(r["tokens_per_second"] for r in results[today])
    base_rss = statistics.median(r["peak_rss_gb"] for r in results[today])
    rows = []
    for name, runs in results.items():
        rate = statistics.median(r["tokens_per_second"] for r in runs)
        rss = statistics.median(r["peak_rss_gb"] for r in runs)
        rows.append(
            [
                name,
                runs[0]["shape"],
                runs[0]["precision"],
                f"{rate:.0f}",
                ", ".join(f"{r['tokens_per_second']:.0f}" for r in runs),
                f"{rate / base_rate:.2f}x",
                f"{rss:.2f}",
                f"{rss / base_rss:.2f}x",
            ]
        )
    facts = device_facts()
    print(
        f"machine: {machine()}; native CPU bf16: {facts.cpu_bf16}; {args.threads} torch threads; load average "
        f"{os.getloadavg()[0]:.1f} at the end\nmodel {model}; {args.steps} optimizer steps x 16 sequences per run, "
        f"{args.repeats} runs per variant, interleaved\n"
    )
    print(
        table(
            [
                "variant",
                "micro-batch x accumulation",
                "precision",
                "tokens/s (median)",
                "all runs",
                "speed vs today",
                "peak RSS GB (median)",
                "memory vs today",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
