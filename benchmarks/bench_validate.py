"""`tide-bench leaderboard validate` of one 2,000-item submission (target <= 3 s on 2 cores
without the embedding check), and the embedding check's cost stated separately.

Timed as a user runs it: the CLI in a fresh process (wall time, and the process's CPU time,
which a shared, busy machine inflates less), so Python start-up and every import
count (torch and sentence-transformers must not load without the embedding check; nltk,
for ROUGE-L's stemmer, does). Also timed in-process, and the same in-process validation
with the text metrics off, so the recomputation's share is a ratio measured in one run.

    python benchmarks/bench_validate.py [--items 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import ROOT, machine, table
from bench_leaderboard import CONVERSATIONS, board, make_submission

from tide_bench.leaderboard import validate_folder


def _cli(folder: Path, board_file: Path, *extra: str) -> tuple[float, str, float]:
    """Wall seconds, output, and CPU seconds (user + system) of one fresh validate process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tide_bench.cli.main",
            "leaderboard",
            "validate",
            str(folder),
            "--board",
            str(board_file),
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"validate failed:\n{done.stdout}\n{done.stderr}")
    return wall, done.stdout, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _median(times: list[float]) -> str:
    return f"{statistics.median(times):.2f}"


def _runs(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp()) / "submissions"
    folder = make_submission(root, args.items)
    board_file = root.parent / "board.yaml"
    board_file.write_text(yaml.safe_dump({"spot_check_items": 50, "conversations_per_persona": CONVERSATIONS}))
    _cli(folder, board_file, "--no-embedding-check")  # warm the file cache
    plain = [_cli(folder, board_file, "--no-embedding-check") for _ in range(args.repeats)]
    cli_plain, cli_plain_cpu = [p[0] for p in plain], [p[2] for p in plain]
    with_embedding, embedding_only = [], []
    for _ in range(args.repeats):
        wall, out, _ = _cli(folder, board_file)
        with_embedding.append(wall)
        reported = re.search(r"embedding spot checks: ([\d.]+) s of it", out)
        assert reported, out
        embedding_only.append(float(reported.group(1)))
    validate_folder(folder, board(), spot_checks=False)  # imports, stemmer warm
    in_process, structural = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        assert validate_folder(folder, board(), spot_checks=False).ok
        in_process.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        assert validate_folder(folder, board(), spot_checks=False, text_metrics=False).ok
        structural.append(time.perf_counter() - t0)
    print(f"machine: {machine()}\n")
    n = args.items
    print(
        table(
            ["operation", "median s", "all runs s", "target"],
            [
                [
                    f"`leaderboard validate --no-embedding-check`, {n} items, fresh process (start-up and imports "
                    "included)",
                    _median(cli_plain),
                    _runs(cli_plain),
                    "<= 3 s",
                ],
                [
                    "  the same, CPU seconds of the process (user + system)",
                    _median(cli_plain_cpu),
                    _runs(cli_plain_cpu),
                    "",
                ],
                [
                    "`leaderboard validate` with the embedding check (50 items), fresh process",
                    _median(with_embedding),
                    _runs(with_embedding),
                    "stated",
                ],
                [
                    "  of which the embedding check (model load + 50 replies), as the command reports it",
                    _median(embedding_only),
                    _runs(embedding_only),
                    "stated",
                ],
                [
                    f"validate_folder in process, {n} items, text metrics recomputed on every item",
                    _median(in_process),
                    _runs(in_process),
                    "",
                ],
                [
                    f"validate_folder in process, {n} items, without the text metrics",
                    _median(structural),
                    _runs(structural),
                    "",
                ],
            ],
        )
    )


if __name__ == "__main__":
    main()
