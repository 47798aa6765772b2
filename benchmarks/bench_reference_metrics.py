"""Reference-metric throughput: responses/s for embeddings (cosine) + ROUGE-L + distinct-n.

Replies and references are sample texts (each reference paired with another item's reply),
made unique and repeated to N pairs; one batched `ReferenceScorer.score` call per run.
"cold": the reference embeddings are not stored yet (the first model on a split);
"warm": they are (every later model on the same split). "long": one reply in ten is made
longer than the model's 256 word pieces (windowed since issue 10; cut before).

With ``--baseline-ref REF`` (e.g. ``main``) the same measurements run on that commit's code
too, in separate processes, alternating with the current code, so the two are compared as a
ratio measured in one run on one machine (these machines are shared and noisy).

    python benchmarks/bench_reference_metrics.py [--n 1000] [--repeats 3] [--threads 2] [--baseline-ref main]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import code_trees, machine, median_time, run_worker, table

CASES = (
    "all metrics, cold reference store",
    "all metrics, warm reference store",
    "embeddings only, cold",
    "all metrics, 10% long replies, warm",
)


def measure(n: int, threads: int) -> dict[str, float]:
    """One timing (seconds) per case, for the code on ``sys.path``."""
    import torch

    from tide_bench.data import load_dataset
    from tide_bench.metrics import embedding_store
    from tide_bench.metrics.reference import ReferenceScorer

    torch.set_num_threads(threads)
    base = [i.reference_reply for i in load_dataset("sample").items]
    refs = [f"{base[k % len(base)]} ({k})" for k in range(n)]  # unique texts: no embedding reused within a batch
    replies = [f"{base[(k + 1) % len(base)]} [{k}]" for k in range(n)]
    long_replies = [r if k % 10 else " ".join([r] * 5) for k, r in enumerate(replies)]
    ReferenceScorer().score(replies[:4], refs[:4])  # load the embedding model outside the timings

    def cold_store() -> None:
        os.environ["TIDE_BENCH_CACHE"] = tempfile.mkdtemp()
        embedding_store._store.cache_clear()

    plan = [
        (cold_store, lambda: ReferenceScorer().score(replies, refs)),
        (None, lambda: ReferenceScorer().score(replies, refs)),
        (cold_store, lambda: ReferenceScorer().cosine(replies, refs)),
        (None, lambda: ReferenceScorer().score(long_replies, refs)),
    ]
    out = {}
    for case, (prepare, fn) in zip(CASES, plan, strict=True):
        if prepare:
            prepare()
        out[case] = median_time(fn, 1)[0]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--baseline-ref", default=None, help="git ref whose code is measured alongside, e.g. main")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.n, args.threads)))
        return
    codes = code_trees(args.baseline_ref)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in codes}
    for _ in range(args.repeats):  # alternate, so that load on the machine hits both alike
        for name, root in codes.items():
            runs[name].append(run_worker(__file__, root, ["--n", str(args.n), "--threads", str(args.threads)]))
            print(name, json.dumps(runs[name][-1]), file=sys.stderr, flush=True)  # partial results survive a timeout
    print(
        f"machine: {machine()}\npairs: {args.n}, torch threads {args.threads}, repeats {args.repeats}"
        + (f", baseline {args.baseline_ref}" if args.baseline_ref else "")
        + "\n"
    )
    rows = []
    for case in CASES:
        for name in codes:
            times = [r[case] for r in runs[name]]
            med = statistics.median(times)
            ratio = ""
            if name == "current" and "baseline" in codes:
                ratio = f"{statistics.median([r[case] for r in runs['baseline']]) / med:.2f}"
            rows.append([case, name, f"{args.n / med:.0f}", f"{med:.2f}", ", ".join(f"{t:.2f}" for t in times), ratio])
    print(table(["what", "code", "responses/s (median)", "median s", "all runs s", "speed vs baseline"], rows))


if __name__ == "__main__":
    main()
