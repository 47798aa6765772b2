"""Harness overhead: `tide-bench eval` against raw transformers `generate` at the same prompts,
batch and new tokens, and where the difference goes.

Each measurement is a fresh process, as a user runs it: `python -m tide_bench eval` (the hf
backend) and a raw loop (this script's `--worker`) that loads the same model, sorts the exact
prompts the harness built (read back from its samples file) longest first as lm-eval does, and
generates greedily in the same batches (one warm-up batch first, as the H200 check's rawgen.py
did). Compared, as on the H200: the harness's run time minus its model load (generation, the
reference metrics, lm-eval's bookkeeping, the files) against the raw loop's generation time.
run.json's timings split the harness's time into the backend's own generate calls, the rest of
lm-eval's evaluation (requests, reference metrics) and the files. Two sizes separate the fixed
cost (paid once a run) from the cost per item: the per-item ratio is what a 2,000-item cell sees.

    python benchmarks/bench_harness.py [--repeats 3] [--items 4,12] [--batch-size 4] [--max-gen-toks 16]
    python benchmarks/bench_harness.py --cpu-time [--items 12] ...

``--cpu-time`` measures the same split in one process by CPU seconds (``time.process_time``, one
torch thread), which a machine shared with other jobs disturbs far less than wall time: lm-eval's
``generate_until`` (its request handling, stop-sequence checks, decoding) against the raw loop on
one model object, then the reference metrics' first call (importing and loading the encoder,
encoding, ROUGE-L) and a second call (encoding only).

Defaults suit a CPU and the offline demo model (SmolLM2-135M, fp32). On a GPU pass
`--model-args pretrained=PATH,dtype=bfloat16 --device cuda:0 --batch-size 64 --max-gen-toks 256`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, machine, table


def harness(args: argparse.Namespace, items: int, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "tide_bench", "eval", "--data", "sample", "--split", "all", "--limit", str(items),
           "--model", "hf", "--model-args", args.model_args, "--device", args.device,
           "--batch-size", str(args.batch_size), "--gen-kwargs", f"max_gen_toks={args.max_gen_toks}",
           "--output-dir", str(out), "--overwrite"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)})
    from tide_bench.generation import load_run

    timings = json.loads((out / "run.json").read_text())["timings"]
    prompts = [g.prompt for g in load_run(out).generations]
    return timings | {"after_load_s": timings["total_s"] - timings["model_load_s"], "prompts": prompts}


def raw(args: argparse.Namespace, prompts: list[str], work: Path) -> float:
    path = work / "prompts.json"
    path.write_text(json.dumps(prompts))
    cmd = [sys.executable, __file__, "--worker", str(path), "--model-args", args.model_args, "--device", args.device,
           "--batch-size", str(args.batch_size), "--max-gen-toks", str(args.max_gen_toks)]  # fmt: skip
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)})
    return float(json.loads(done.stdout.strip().splitlines()[-1])["generate_s"])


def worker(args: argparse.Namespace) -> None:
    """The raw loop: load, warm up on one batch, then generate every prompt in lm-eval's order."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tide_bench.generation.manifest import parse_model_args

    parsed = parse_model_args(args.model_args)
    tokenizer = AutoTokenizer.from_pretrained(parsed["pretrained"], padding_side="left")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = getattr(torch, parsed.get("dtype", "float32"))
    model = AutoModelForCausalLM.from_pretrained(parsed["pretrained"], dtype=dtype).to(args.device).eval()
    prompts = json.loads(Path(args.worker).read_text())
    ordered = sorted(prompts, key=lambda p: -len(tokenizer(p, add_special_tokens=False).input_ids))

    def run(batch_prompts: list[str]) -> None:
        for start in range(0, len(batch_prompts), args.batch_size):
            batch = tokenizer(batch_prompts[start : start + args.batch_size], return_tensors="pt", padding=True,
                              add_special_tokens=False).to(args.device)  # fmt: skip
            with torch.no_grad():
                out = model.generate(**batch, max_new_tokens=args.max_gen_toks, do_sample=False,
                                     pad_token_id=tokenizer.pad_token_id)  # fmt: skip
            tokenizer.batch_decode(out[:, batch.input_ids.shape[1] :], skip_special_tokens=True)

    run(ordered[: args.batch_size])  # warm-up, not timed
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    sync()
    t0 = time.perf_counter()
    run(ordered)
    sync()
    print(json.dumps({"generate_s": time.perf_counter() - t0}))


def cpu_time(args: argparse.Namespace, items: int) -> None:
    """lm-eval's generate_until against the raw loop, and the reference metrics, in CPU seconds."""
    import torch
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tide_bench.data import load_dataset
    from tide_bench.finetune.examples import system_prompt
    from tide_bench.generation.manifest import parse_model_args
    from tide_bench.tasks.prompts import build_messages

    torch.set_num_threads(1)
    parsed = parse_model_args(args.model_args)
    tok = AutoTokenizer.from_pretrained(parsed["pretrained"], padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(parsed["pretrained"], dtype=torch.float32).eval()
    lm = HFLM(pretrained=model, tokenizer=tok, batch_size=args.batch_size, device="cpu")
    data = load_dataset("sample").items_for("all")[:items]
    prompts = [lm.apply_chat_template(build_messages(i.to_doc(), system_prompt())) for i in data]
    kwargs = {"until": ["\nClient:"], "max_gen_toks": args.max_gen_toks, "do_sample": False}
    requests = [Instance("generate_until", {}, (p, dict(kwargs)), k) for k, p in enumerate(prompts)]
    ordered = sorted(prompts, key=lambda p: -len(tok(p, add_special_tokens=False).input_ids))

    def raw_loop() -> None:
        for s in range(0, len(ordered), args.batch_size):
            batch = tok(ordered[s : s + args.batch_size], return_tensors="pt", padding=True, add_special_tokens=False)
            with torch.no_grad():
                model.generate(**batch, max_new_tokens=args.max_gen_toks, do_sample=False,
                               pad_token_id=tok.pad_token_id)  # fmt: skip

    found: dict[str, list[float]] = {"lm-eval generate_until": [], "raw generate loop": []}
    replies: list[str] = []
    for _ in range(args.repeats):  # interleaved
        t = time.process_time()
        replies = lm.generate_until(requests, disable_tqdm=True)
        found["lm-eval generate_until"].append(time.process_time() - t)
        t = time.process_time()
        raw_loop()
        found["raw generate loop"].append(time.process_time() - t)
    from tide_bench.metrics.reference import ReferenceScorer

    references = [i.reference_reply for i in data]
    for label in ("reference metrics, first call (import, load, encode)", "reference metrics, again (encode)"):
        t = time.process_time()
        ReferenceScorer().score(replies, references)
        found[label] = [time.process_time() - t]
    print(f"machine: {machine()}\n{items} items, batch {args.batch_size}, {args.max_gen_toks} new tokens, one torch "
          f"thread, CPU seconds (median of {args.repeats} for the generation rows)\n")  # fmt: skip
    rows = [[k, f"{statistics.median(v):.2f}", ", ".join(f"{x:.2f}" for x in v)] for k, v in found.items()]
    print(table(["what", "CPU s", "runs"], rows))
    lm_s, raw_s = statistics.median(found["lm-eval generate_until"]), statistics.median(found["raw generate loop"])
    print(f"\nlm-eval's generation path at {raw_s / lm_s:.2f}x the raw loop's speed (CPU time)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--items", default="4,12", help="two item counts: fixed cost and cost per item")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-gen-toks", type=int, default=16)
    parser.add_argument("--model-args", default=None, help="default: the demo model, fp32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cpu-time", action="store_true", help="the split in CPU seconds, in one process")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.model_args is None:
        from tide_bench.demo.model import prepare_demo_model

        args.model_args = f"pretrained={prepare_demo_model()},dtype=float32"
    if args.cpu_time:
        cpu_time(args, int(args.items.split(",")[-1]))
        return
    sizes = [int(n) for n in args.items.split(",")]
    work = Path(tempfile.mkdtemp())
    found: dict[int, dict[str, list[float]]] = {n: {} for n in sizes}
    for _ in range(args.repeats):
        for n in sizes:  # interleaved: the machine's load hits both paths alike
            h = harness(args, n, work / "run")
            r = raw(args, h["prompts"], work)
            for key, value in (("harness", h["after_load_s"]), ("generate", h["generate_s"]),
                               ("evaluate", h["evaluate_s"]), ("raw", r)):  # fmt: skip
                found[n].setdefault(key, []).append(value)
    report(args, sizes, found)


def report(args: argparse.Namespace, sizes: list[int], found: dict[int, dict[str, list[float]]]) -> None:
    med = {n: {k: statistics.median(v) for k, v in found[n].items()} for n in sizes}
    rows = []
    for n in sizes:
        m = med[n]
        rows.append([n, f"{m['harness']:.1f}", f"{m['generate']:.1f}", f"{m['evaluate'] - m['generate']:.1f}",
                     f"{m['harness'] - m['evaluate']:.1f}", f"{m['raw']:.1f}", f"{m['raw'] / m['harness']:.2f}x",
                     ", ".join(f"{x:.1f}" for x in found[n]["harness"]) + " / "
                     + ", ".join(f"{x:.1f}" for x in found[n]["raw"])])  # fmt: skip
    a, b = sizes[0], sizes[-1]
    raw_more, harness_more = med[b]["raw"] - med[a]["raw"], med[b]["harness"] - med[a]["harness"]
    print(f"machine: {machine()}\n{args.model_args.split(',')[0].rsplit('/', 1)[-1]}, {args.device}, batch "
          f"{args.batch_size}, {args.max_gen_toks} new tokens, greedy; medians of {args.repeats} runs\n")  # fmt: skip
    headers = ["items", "harness s (after load)", "of which generate", "requests + reference metrics",
               "files + run.json", "raw generate s", "harness speed / raw", "runs s (harness / raw)"]  # fmt: skip
    print(table(headers, rows))
    if raw_more > 0 and harness_more > 0:  # on a loaded machine the difference can drown in noise
        fixed = med[a]["harness"] - med[a]["raw"] * harness_more / raw_more
        print(f"\nper item (from {a} to {b} items): harness at {raw_more / harness_more:.2f}x raw generate; "
              f"fixed cost about {fixed:.1f} s")  # fmt: skip
    else:
        print(f"\nper item: not separable from the noise ({a} -> {b} items: harness {harness_more:+.1f} s, "
              f"raw {raw_more:+.1f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
