"""Harness overhead: `tide-bench eval` generation vs a plain transformers generate loop.

Same model (the demo model, fp32, CPU), same prompts (read back from the tide-bench run's
samples file, so the chat template is identical), same batch size, greedy decoding, same
maximum new tokens. The tide-bench time is the run's wall time minus its model load (the
plain loop's model load is not timed either); it includes building the tasks and computing
the reference metrics, i.e. everything `tide-bench eval` does per run. Target: ratio <= 1.15.

    python benchmarks/bench_overhead.py [--repeats 3] [--max-gen-toks 64] [--batch-size 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-gen-toks", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tide_bench.demo.model import prepare_demo_model
    from tide_bench.generation import EvalConfig, load_run, run_eval
    from tide_bench.metrics.reference import ReferenceScorer

    torch.set_num_threads(args.threads)
    model_dir = prepare_demo_model()
    ReferenceScorer().score(["warm up"], ["the embedding model"])  # load it once, outside the timings
    work = Path(tempfile.mkdtemp())

    def tide_once() -> tuple[float, list[str]]:
        manifest = run_eval(
            EvalConfig(
                model="hf",
                model_args=f"pretrained={model_dir},dtype=float32",
                output_dir=work / "run",
                data="sample",
                split="test",
                device="cpu",
                batch_size=args.batch_size,
                gen_kwargs={"max_gen_toks": args.max_gen_toks},
                overwrite=True,
            )
        )
        timings = json.loads(manifest.read_text())["timings"]
        prompts = [g.prompt for g in load_run(work / "run").generations]
        return timings["total_s"] - timings["model_load_s"], prompts

    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()

    def plain_once(prompts: list[str]) -> float:
        ordered = sorted(prompts, key=lambda p: -len(tokenizer(p).input_ids))  # lm-eval also sorts longest first
        t0 = time.perf_counter()
        with torch.no_grad():
            for start in range(0, len(ordered), args.batch_size):
                batch = tokenizer(
                    ordered[start : start + args.batch_size],
                    return_tensors="pt",
                    padding=True,
                    add_special_tokens=False,
                )
                out = model.generate(
                    **batch,
                    max_new_tokens=args.max_gen_toks,
                    do_sample=False,
                    pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                )
                tokenizer.batch_decode(out[:, batch.input_ids.shape[1] :], skip_special_tokens=True)
        return time.perf_counter() - t0

    tide_times, plain_times = [], []
    for _ in range(args.repeats):
        t, prompts = tide_once()
        tide_times.append(t)
        plain_times.append(plain_once(prompts))
    tm, pm = statistics.median(tide_times), statistics.median(plain_times)
    print(
        f"machine: {machine()}\nitems: {len(prompts)} (sample test split), batch {args.batch_size}, max_gen_toks "
        f"{args.max_gen_toks}, torch threads {args.threads}, repeats {args.repeats}\n"
    )
    print(
        table(
            ["path", "median wall s", "all runs s"],
            [
                ["tide-bench eval (minus model load)", f"{tm:.1f}", ", ".join(f"{x:.1f}" for x in tide_times)],
                ["plain transformers generate loop", f"{pm:.1f}", ", ".join(f"{x:.1f}" for x in plain_times)],
            ],
        )
    )
    print(f"\nratio tide-bench / plain: {tm / pm:.2f} (target <= 1.15)")


if __name__ == "__main__":
    main()
