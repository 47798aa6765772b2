"""`tide-bench study` on one CUDA GPU: wall time per cell and stage, generation and training rates.

A one-model study on the built-in sample's test split (full split: the board refuses partial
runs): zero-shot and LoRA fine-tuned (``--steps`` optimizer steps), plus the TIDE reference row,
without a judge (the judge's speed is the API's; see bench_judge.py). Every stage's measured
seconds and rate come from the study's own ``<cell>/<stage>.done.json`` records, the same
figures ``tide-bench study --dry-run`` uses to estimate a larger grid.

Model: ``--model`` (a local folder or a hub id: downloads are allowed then), else a randomly
initialised ~0.5B Llama-shaped model with the demo tokenizer (generation and training run as
fast as a real model's; the replies and the report's numbers mean nothing).

    benchmarks/gpu_study.sh [--model Qwen/Qwen2.5-0.5B-Instruct] [--steps 100] [--batch-size 32]
    python benchmarks/gpu_study.py --cpu-dry-run      # checks the script end to end on a CPU (demo model)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, table


def study_file(work: Path, model: str, args: argparse.Namespace, device: str) -> Path:
    lora = {
        "max_steps": args.steps,
        "eval_steps": args.steps,
        "batch_size": 4 if device != "cpu" else 1,
        "grad_accum": 4 if device != "cpu" else 1,
        "max_length": 1024 if device != "cpu" else 384,
    }
    spec = {
        "name": "gpu-study-benchmark",
        "data": "sample",
        "split": "test",
        "prompt": "neutral",
        "reference": True,
        "models": [
            {"id": "bench", "model": model, "model_args": {"dtype": "bfloat16" if device != "cpu" else "float32"}}
        ],
        "conditions": {"zero-shot": {}, "fine-tuned": {"lora": lora}},
        "eval": {"backend": "hf", "device": device, "batch_size": args.batch_size, "max_gen_toks": args.max_gen_toks},
        "judge": None,
    }
    path = work / "study.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="local folder or hub id (default: a random ~0.5B model)")
    parser.add_argument("--steps", type=int, default=100, help="LoRA optimizer steps for the fine-tuned cell")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-gen-toks", type=int, default=128)
    parser.add_argument("--cpu-dry-run", action="store_true", help="the demo model on CPU, 2 steps, 16 tokens")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = parser.parse_args()

    import torch

    from tide_bench.demo.model import resolve_model
    from tide_bench.study import load_study, make_plan, run_study

    work = Path(tempfile.mkdtemp(prefix="gpu-study-"))
    if args.cpu_dry_run:
        device, model = "cpu", "demo"
        args.steps, args.batch_size, args.max_gen_toks = 2, 4, 16
    else:
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device: this benchmark needs a GPU (or --cpu-dry-run)")
        from gpu_eval import build_random_model

        device, model = "cuda:0", args.model or str(build_random_model(work / "random-0.5b"))
    spec = load_study(study_file(work, model, args, device))
    out = work / "out"
    started = time.perf_counter()
    result = run_study(
        spec, out, resolve_model=resolve_model, echo=lambda line: print(line, flush=True), progress=False
    )
    wall = time.perf_counter() - started
    rows, records = [], []
    for stage in make_plan(spec, out).stages:
        measured = (stage.record or {}).get("measured") or {}
        records.append({"cell": stage.cell.id, "stage": stage.stage, **measured})
        rate = measured.get("tokens_per_second") or measured.get("items_per_second")
        unit = "tokens/s" if measured.get("tokens_per_second") else "items/s" if rate else ""
        rows.append(
            [
                stage.cell.id,
                stage.stage,
                measured.get("items", ""),
                measured.get("seconds", ""),
                f"{rate} {unit}".strip() if rate else "",
            ]
        )
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(
        f"\nmachine: {machine()}, GPU {gpu}\nmodel: {args.model or model}; LoRA steps {args.steps}; "
        f"eval batch {args.batch_size}, max_gen_toks {args.max_gen_toks}; failed cells: {result.failed or 'none'}; "
        f"study wall time {wall:.0f} s\n"
    )
    print(table(["cell", "stage", "items", "seconds", "rate"], rows))
    if args.json:
        args.json.write_text(json.dumps({"wall_s": wall, "stages": records}, indent=2))


if __name__ == "__main__":
    main()
