"""Reference-metric throughput: responses/s for embeddings (cosine) + ROUGE-L + distinct-n.

Replies and references are sample texts (each reference paired with another item's reply),
made unique and repeated to N pairs; one batched `ReferenceScorer.score` call per run.
"cold": the reference embeddings are not stored yet (the first model on a split);
"warm": they are (every later model on the same split). Target: >= 150/s on 2 cores.

    python benchmarks/bench_reference_metrics.py [--n 1000] [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, median_time, table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch

    from tide_bench.data import load_dataset
    from tide_bench.metrics.reference import ReferenceScorer

    torch.set_num_threads(args.threads)
    from tide_bench.metrics import embedding_store

    items = load_dataset("sample").items
    base = [i.reference_reply for i in items]
    # Unique texts (a numbered suffix), so no embedding is reused within one batch.
    refs = [f"{base[k % len(base)]} ({k})" for k in range(args.n)]
    replies = [f"{base[(k + 1) % len(base)]} [{k}]" for k in range(args.n)]
    ReferenceScorer().score(replies[:4], refs[:4])  # load the embedding model outside the timings
    rows = []

    def cold_store() -> None:
        os.environ["TIDE_BENCH_CACHE"] = tempfile.mkdtemp()
        embedding_store._store.cache_clear()

    for label, prepare, fn in [
        ("all metrics, cold reference store", cold_store, lambda: ReferenceScorer().score(replies, refs)),
        ("all metrics, warm reference store", None, lambda: ReferenceScorer().score(replies, refs)),
        ("embeddings only, cold", cold_store, lambda: ReferenceScorer().cosine(replies, refs)),
    ]:
        times = []
        for _ in range(args.repeats):
            if prepare:
                prepare()
            times.append(median_time(fn, 1)[0])
        med = statistics.median(times)
        rows.append([label, f"{args.n / med:.0f}", f"{med:.2f}", ", ".join(f"{t:.2f}" for t in times)])
    precision = ReferenceScorer().precision
    print(
        f"machine: {machine()}\npairs: {args.n}, torch threads {args.threads}, embedding precision {precision}, repeats {args.repeats}\n"
    )
    print(table(["what", "responses/s (median)", "median s", "all runs s"], rows))


if __name__ == "__main__":
    main()
