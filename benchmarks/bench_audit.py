"""Audit speed: 10,000 items x 3 dimensions x 5 raters with missing cells, 1,000 bootstrap
resamples, plus one judge; target <= 15 s on 2 cores. With ``--baseline-ref main`` the same
inputs are audited by that commit's code too (the statistics added since then cost time).

    python benchmarks/bench_audit.py [--items 10000] [--repeats 3] [--baseline-ref main]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import code_trees, machine, run_worker, table

DIMS = ("emotion_recognition", "distress_normalization", "supportive_reflection")


def write_inputs(folder: Path, items: int, raters: int, seed: int = 0) -> tuple[Path, Path, Path]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=(items, len(DIMS)))
    ratings, judgments, rater_table = folder / "ratings.csv", folder / "judgments.jsonl", folder / "raters.csv"
    with ratings.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "rater_id", "dimension", "score"])
        for i in range(items):
            for r in range(raters):
                if rng.random() < 0.6:  # 40 % missing cells
                    for d, dim in enumerate(DIMS):
                        writer.writerow(
                            [f"item{i}", f"r{r}", dim, int(np.clip(truth[i, d] + rng.integers(-1, 2), 1, 5))]
                        )
    with judgments.open("w") as handle:
        for i in range(items):
            scores = {dim: int(np.clip(truth[i, d] + rng.integers(-1, 2), 1, 5)) for d, dim in enumerate(DIMS)}
            handle.write(
                json.dumps(
                    {
                        "item_id": f"item{i}",
                        "status": "scored",
                        "scores": scores,
                        "judge": {"name": "bench", "version": "0" * 16},
                    }
                )
                + "\n"
            )
    with rater_table.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["rater_id", "age_group", "gender"])
        for r in range(raters):
            writer.writerow([f"r{r}", "55+" if r < 2 else "18-34", "female" if r % 2 else "male"])
    return ratings, judgments, rater_table


def measure(folder: Path, resamples: int, repeats: int) -> list[float]:
    """Wall times of the whole audit, for the code on ``sys.path``."""
    from tide_bench.agreement import AuditOptions, run_audit

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run_audit(
            folder / "ratings.csv",
            folder / "out",
            raters=folder / "raters.csv",
            judgments=[folder / "judgments.jsonl"],
            options=AuditOptions(resamples=resamples),
        )
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--raters", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--baseline-ref", default=None, help="git ref whose code is measured on the same inputs, e.g. main"
    )
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.worker, args.resamples, args.repeats)))
        return
    folder = Path(tempfile.mkdtemp())
    write_inputs(folder, args.items, args.raters)
    rows = []
    for name, root in code_trees(args.baseline_ref).items():
        times = run_worker(
            __file__, root, [str(folder), "--resamples", str(args.resamples), "--repeats", str(args.repeats)]
        )
        rows.append(
            [
                f"{args.items} items x {len(DIMS)} dims x {args.raters} raters (40% missing) + 1 judge + rater groups, "
                f"{args.resamples} resamples",
                name,
                f"{statistics.median(times):.2f}",
                ", ".join(f"{t:.2f}" for t in times),
            ]
        )
    print(f"machine: {machine()}" + (f"; baseline {args.baseline_ref}" if args.baseline_ref else "") + "\n")
    print(table(["workload", "code", "median wall s", "all runs s"], rows))


if __name__ == "__main__":
    main()
