"""Start-up: `tide-bench eval` to first generation vs the literal `lm_eval --tasks tide_empathy`.

Both commands generate ONE token for ONE item with the demo model on CPU, so their wall time
is start-up (imports, task indexing, data loading, model load) plus a negligible generation.
Plain `lm_eval` indexes its 14k built-in tasks (ours among them, installed into its tree);
`tide-bench eval` indexes only ours.

    python benchmarks/bench_startup.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, run_command, table

from tide_bench.demo.model import prepare_demo_model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    model = prepare_demo_model()
    work = Path(tempfile.mkdtemp())
    bin_dir = Path(sys.executable).parent
    tide = [
        str(bin_dir / "tide-bench"),
        "eval",
        "--data",
        "sample",
        "--model",
        "hf",
        "--model-args",
        f"pretrained={model},dtype=float32",
        "--device",
        "cpu",
        "--limit",
        "1",
        "--gen-kwargs",
        "max_gen_toks=1",
        "--output-dir",
        str(work / "tide"),
        "--overwrite",
    ]
    plain = [
        str(bin_dir / "lm_eval"),
        "--tasks",
        "tide_empathy",
        "--metadata",
        json.dumps({"tide_data": "sample"}),
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model},dtype=float32",
        "--device",
        "cpu",
        "--limit",
        "1",
        "--gen_kwargs",
        "max_gen_toks=1",
        "--apply_chat_template",
        "--log_samples",
        "--output_path",
        str(work / "plain"),
    ]
    times: dict[str, list[float]] = {"tide-bench eval": [], "lm_eval --tasks tide_empathy": []}
    for _ in range(args.repeats):  # interleaved, so both see the same machine load
        times["tide-bench eval"].append(run_command(tide))
        times["lm_eval --tasks tide_empathy"].append(run_command(plain))
    shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"machine: {machine()}\nrepeats: {args.repeats}\n")
    print(
        table(
            ["command", "median wall s", "all runs s", "ratio to lm_eval"],
            [
                [
                    k,
                    f"{med[k]:.1f}",
                    ", ".join(f"{t:.1f}" for t in v),
                    f"{med[k] / med['lm_eval --tasks tide_empathy']:.2f}",
                ]
                for k, v in times.items()
            ],
        )
    )


if __name__ == "__main__":
    main()
