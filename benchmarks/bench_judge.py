"""Judge benchmarks against the fake API server (tests/fakes/llm_server.py) on 127.0.0.1.

1. Throughput: N items, 100 ms server latency per call, concurrency 32. Ideal wall time is
   N/32 x 0.1 s (6.25 s for 2,000); target <= 1.2x ideal. Compared with a serial loop (one
   call at a time, as lm-eval's only judged task does), measured on a subset and projected.
2. Resume: rerun after completion (calls made), and after `kill -9` at ~50 % (calls made vs
   items missing from the cache).
3. Cost: tokens and dollars from the real prompts (no API involved): input tokens billed per
   item with and without prompt caching, 1 call per item vs 3 (one per factor), and $ per
   10,000 items for sync vs batch at judges/prices.yaml's prices.

    python benchmarks/bench_judge.py [--items 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import ROOT, machine, table

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.data import load_dataset
from tide_bench.generation.run_dir import RunDirectory, load_run
from tide_bench.judging import judge_run, load_judge
from tide_bench.judging.cache import JudgmentCache
from tide_bench.judging.engine import make_plan

KEY = "sk-bench-not-a-real-key"


def synthetic_run(n: int) -> RunDirectory:
    """n distinct items (sample contexts, numbered replies), in memory."""
    tmp = Path(tempfile.mkdtemp())
    base = load_run(make_run(tmp / "run", lambda i: i.reference_reply, split="all"))
    gens = [
        replace(g, item_id=f"{g.item_id}#{k}", reply=f"{g.reply} ({k})")
        for k in range(n // len(base.generations) + 1)
        for g in base.generations
    ]
    return RunDirectory(base.root, base.manifest, gens[:n])


def start_server_process(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.llm_server", "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None  # stdout=PIPE
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


def throughput(n: int, repeats: int, serial_n: int) -> None:
    proc, url = start_server_process(0.1)
    try:
        run = synthetic_run(n)
        config = load_judge("claude-sonnet", base_url=url, overrides={"concurrency": 32})
        times, cpu = [], []
        for _ in range(repeats):
            out = Path(tempfile.mkdtemp())
            t0, c0 = time.perf_counter(), time.process_time()
            result = judge_run(run, out, config)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            assert result.summary["n_scored"] == n
        serial_run = RunDirectory(run.root, run.manifest, run.generations[:serial_n])
        t0 = time.perf_counter()
        judge_run(serial_run, Path(tempfile.mkdtemp()), replace(config, concurrency=1))
        serial = (time.perf_counter() - t0) / serial_n * n
    finally:
        proc.terminate()
    ideal = n / 32 * 0.1
    med = statistics.median(times)
    print(f"## Throughput ({n} items, 100 ms latency, concurrency 32, repeats {repeats})\n")
    print(
        table(
            ["path", "wall s (median)", "all runs s", "x ideal", "CPU s of the judging process (median)"],
            [
                [
                    "tide-bench judge, concurrency 32",
                    f"{med:.2f}",
                    ", ".join(f"{t:.2f}" for t in times),
                    f"{med / ideal:.2f}",
                    f"{statistics.median(cpu):.2f}",
                ],
                ["ideal (N/32 x 0.1 s)", f"{ideal:.2f}", "", "1.00", ""],
                [f"serial loop (measured on {serial_n}, projected)", f"{serial:.1f}", "", f"{serial / ideal:.1f}", ""],
            ],
        )
    )


def resume(n: int) -> None:
    server = FakeLLMServer(latency=0.05).start()
    try:
        tmp = Path(tempfile.mkdtemp())
        items = load_dataset("sample").items
        run = make_run(tmp / "run", lambda i: f"{i.reference_reply} [{i.item_id}]", split="all", items=items)
        args = [
            sys.executable,
            "-m",
            "tide_bench.cli.main",
            "judge",
            str(run),
            "--out",
            str(tmp / "judge"),
            "--base-url",
            server.url,
            "--concurrency",
            "2",
        ]
        env = {**os.environ, "ANTHROPIC_API_KEY": KEY}
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while server.total_calls < len(items) // 2:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        cache = JudgmentCache(tmp / "judge" / "cache.sqlite")
        done = cache.count()
        cache.close()
        before = server.total_calls
        subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after_kill = server.total_calls - before
        before = server.total_calls
        subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after_done = server.total_calls - before
    finally:
        server.stop()
    print(f"\n## Resume ({len(items)} items)\n")
    print(
        table(
            ["scenario", "items missing from cache", "calls made by the rerun"],
            [
                ["rerun after kill -9 at ~50 %", len(items) - done, after_kill],
                ["rerun after completion", 0, after_done],
            ],
        )
    )


def cost() -> None:
    tmp = Path(tempfile.mkdtemp())
    run = load_run(make_run(tmp / "run", lambda i: i.reference_reply, split="all"))
    rows = []
    for name in ("claude-sonnet", "openai-gpt"):
        config = load_judge(name)
        est = make_plan(run, config, None, False).estimate(config)
        per_item_user = est.user_tokens / est.n_calls
        scale = 10_000 / est.n_calls
        d = est.as_dict()
        p = config.prices
        fixed = est.fixed_tokens
        cached_equiv = per_item_user + fixed * (p.cache_read / p.input)
        three_calls = 3 * (fixed + per_item_user)
        rows.append(
            [
                f"{name} ({config.model})",
                est.system_tokens,
                est.tool_tokens,
                f"{per_item_user:.0f}",
                f"{fixed + per_item_user:.0f}",
                f"{est.tool_tokens / (fixed + per_item_user):.0%}",
                f"{cached_equiv:.0f}" if name == "claude-sonnet" else "automatic (not estimated)",
                f"1 ({fixed + per_item_user:.0f} in) vs 3 ({three_calls:.0f} in)",
                f"${d['sync']['cost_usd'] * scale:,.0f}",
                f"${d['batch']['cost_usd'] * scale:,.0f}" if d["batch"] else "n/a (sync only)",
            ]
        )
    print(
        "\n## Cost (estimated from the real prompts at ~4 characters/token; replies of reference length; 350 output "
        "tokens per call)\n"
    )
    print(
        table(
            [
                "judge",
                "system tokens",
                "tool/schema tokens",
                "item tokens",
                "input/item, no caching",
                "tool share of input",
                "input/item with caching (input-price equivalent)",
                "calls per item: 1 vs 3 per-factor",
                "$ per 10k items, sync",
                "$ per 10k items, batch",
            ],
            rows,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--serial-items", type=int, default=100)
    parser.add_argument(
        "--sections", default="throughput,resume,cost", help="Comma-separated subset of throughput,resume,cost."
    )
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    os.environ["ANTHROPIC_API_KEY"] = KEY
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f} at start\n")
    if "throughput" in sections:
        throughput(args.items, args.repeats, args.serial_items)
    if "resume" in sections:
        resume(40)
    if "cost" in sections:
        cost()


if __name__ == "__main__":
    main()
