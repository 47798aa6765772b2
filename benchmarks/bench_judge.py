"""Judge benchmarks against the fake API server (tests/fakes/llm_server.py, its own process on 127.0.0.1).

1. Throughput, hosted judge: N items through the Anthropic SDK, 100 ms server latency per call,
   concurrency 32. Ideal wall time is N/32 x 0.1 s (6.25 s for 2,000); target <= 1.2x. Each
   repeat runs in a fresh interpreter and judges twice: *cold* (the first run of a process: the
   SDK is imported inside it, as a user's first run pays) and *warm* (the SDK already imported,
   the steady state of a long run). CPU ms per item is the judging process's CPU time in
   ``judge_run`` (pre-flight, records, cache commits and summary included) divided by N; target
   <= 2.5 ms.
2. Throughput, local judge: an OpenAI-compatible server with 10 ms latency, 256 requests in
   flight, through the lean path; items/s (target >= 400 on 2 cores) and CPU ms per item.
3. With ``--baseline-ref REF`` (e.g. ``main``): the same workers on that ref's code, alternating
   with this tree's in every repeat (order swapped each repeat), so old and new meet the same
   machine load; the table gives new/old ratios per repeat and their median.
4. Resume: rerun after completion (calls made), and after ``kill -9`` at ~50 % (calls made vs
   items missing from the cache).
5. Startup: every command's ``--help`` and ``judge RUN --dry-run`` in a fresh interpreter, wall
   and CPU seconds (user + system of the child; less sensitive to a loaded machine than wall),
   target < 1.5 s; with ``--baseline-ref`` the two trees alternate.
6. Cost: $ per 10,000 items per judge x rubric version (every ``judges/rubric_v*.yaml``) x mode,
   from the real prompts (replies of reference length, ~4 characters per token), with the
   caching range and the share of output tokens, on the sample (mostly items without a risk cue)
   and on the risk supplement (mostly risk items, whose rubric-v4 label block is longest). Each
   item's message carries its fixed risk label where the rubric shows one (v4), as a judge run does.

    python benchmarks/bench_judge.py [--items 2000] [--local-items 3000] [--repeats 3] [--baseline-ref main]
        [--sections throughput,resume,startup,cost]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, code_trees, machine, run_worker, table

if "--worker" not in sys.argv:  # a worker imports tide_bench from the tree it was started for (PYTHONPATH)
    sys.path.insert(0, str(ROOT))

KEY = "sk-bench-not-a-real-key"
HOSTED = {"latency": 0.1, "concurrency": 32}
LOCAL = {"latency": 0.01, "concurrency": 256}


def synthetic_run(n: int) -> Any:
    """n distinct items (sample contexts, numbered replies), in memory."""
    from tests.helpers import make_run
    from tide_bench.generation.run_dir import RunDirectory, load_run

    tmp = Path(tempfile.mkdtemp())
    base = load_run(make_run(tmp / "run", lambda i: i.reference_reply, split="all"))
    gens = [
        replace(g, item_id=f"{g.item_id}#{k}", reply=f"{g.reply} ({k})")
        for k in range(n // len(base.generations) + 1)
        for g in base.generations
    ]
    return RunDirectory(base.root, base.manifest, gens[:n])


def start_server_process(latency: float) -> tuple[subprocess.Popen, str]:
    """The fake server of this tree (whichever tree is measured), in its own process."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.llm_server", "--latency", str(latency)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None  # stdout=PIPE
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}"


def _timed(run: Any, config: Any) -> dict[str, float]:
    from tide_bench.judging import judge_run

    out = Path(tempfile.mkdtemp())
    t0, c0 = time.perf_counter(), time.process_time()
    result = judge_run(run, out, config)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = len(run.generations)
    assert result.summary["n_scored"] == n, result.summary["unscored_reasons"]
    return {"wall_s": wall, "cpu_s": cpu, "cpu_ms_per_item": cpu / n * 1000, "items_per_s": n / wall}


def worker(case: str, n: int) -> dict[str, Any]:
    """One measurement in this interpreter, with the code on PYTHONPATH."""
    from tide_bench.judging import load_judge

    os.environ["ANTHROPIC_API_KEY"] = KEY
    setting = HOSTED if case == "hosted" else LOCAL
    proc, url = start_server_process(setting["latency"])
    try:
        run = synthetic_run(n)
        overrides = {"concurrency": setting["concurrency"]}
        if case == "hosted":
            config = load_judge("claude-sonnet", base_url=url, overrides=overrides)
            cold = _timed(run, config)  # imports the SDK on its first call (new code) or at the start (old)
            warm = _timed(run, config)
            return {"cold": cold, "warm": warm, "load": os.getloadavg()[0]}
        config = load_judge("local", model="fake-local-judge", base_url=url + "/v1", overrides=overrides)
        return {"warm": _timed(run, config), "load": os.getloadavg()[0]}
    finally:
        proc.terminate()
        proc.wait()


def _fmt(values: list[float], digits: int = 2) -> str:
    return ", ".join(f"{v:.{digits}f}" for v in values)


def throughput(trees: dict[str, Path], n_hosted: int, n_local: int, repeats: int) -> dict[str, Any]:
    script = str(Path(__file__).resolve())
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {t: {"hosted": [], "local": []} for t in trees}
    for r in range(repeats):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for case, n in (("hosted", n_hosted), ("local", n_local)):
            for tree in order:
                runs[tree][case].append(run_worker(script, trees[tree], ["--case", case, "--n", str(n)]))
    ideal = n_hosted / HOSTED["concurrency"] * HOSTED["latency"]
    rows = []
    for tree in trees:
        hosted, local = runs[tree]["hosted"], runs[tree]["local"]
        cold = [h["cold"]["wall_s"] for h in hosted]
        warm = [h["warm"]["wall_s"] for h in hosted]
        rows.append(
            [
                tree,
                f"{statistics.median(cold) / ideal:.2f} ({_fmt([c / ideal for c in cold])})",
                f"{statistics.median(warm) / ideal:.2f} ({_fmt([w / ideal for w in warm])})",
                f"{statistics.median(h['cold']['cpu_ms_per_item'] for h in hosted):.2f}",
                f"{statistics.median(h['warm']['cpu_ms_per_item'] for h in hosted):.2f}",
                f"{statistics.median(x['warm']['items_per_s'] for x in local):.0f} "
                f"({_fmt([x['warm']['items_per_s'] for x in local], 0)})",
                f"{statistics.median(x['warm']['cpu_ms_per_item'] for x in local):.2f}",
                _fmt([h["load"] for h in hosted] + [x["load"] for x in local], 1),
            ]
        )
    print(
        f"## Throughput (hosted: {n_hosted} items, Anthropic SDK, {HOSTED['latency'] * 1000:.0f} ms latency, "
        f"concurrency {HOSTED['concurrency']}, ideal {ideal:.2f} s; local: {n_local} items, OpenAI-compatible, "
        f"{LOCAL['latency'] * 1000:.0f} ms latency, {LOCAL['concurrency']} in flight; repeats: {repeats})\n"
    )
    print(
        table(
            [
                "code",
                "hosted x ideal, cold (runs)",
                "hosted x ideal, warm (runs)",
                "hosted CPU ms/item, cold",
                "hosted CPU ms/item, warm",
                "local items/s (runs)",
                "local CPU ms/item",
                "load average at each run",
            ],
            rows,
        )
    )
    if "baseline" in trees:
        ratio_rows = []
        for label, pick in (
            ("hosted wall, cold", lambda x: x["cold"]["wall_s"]),
            ("hosted wall, warm", lambda x: x["warm"]["wall_s"]),
            ("hosted CPU, cold", lambda x: x["cold"]["cpu_s"]),
            ("hosted CPU, warm", lambda x: x["warm"]["cpu_s"]),
        ):
            ratios = [
                pick(c) / pick(b) for c, b in zip(runs["current"]["hosted"], runs["baseline"]["hosted"], strict=True)
            ]
            ratio_rows.append([label, f"{statistics.median(ratios):.2f}", _fmt(ratios)])
        for label, key in (("local wall", "wall_s"), ("local CPU", "cpu_s")):
            ratios = [
                c["warm"][key] / b["warm"][key]
                for c, b in zip(runs["current"]["local"], runs["baseline"]["local"], strict=True)
            ]
            ratio_rows.append([label, f"{statistics.median(ratios):.2f}", _fmt(ratios)])
        print("\nnew / old, each repeat measured back to back (alternating order):\n")
        print(table(["measure", "new/old (median)", "each repeat"], ratio_rows))
    return runs


def command_paths() -> list[list[str]]:
    """Every command of this tree's CLI, as the words that name it ([] is ``tide-bench`` itself)."""
    from tide_bench.cli.main import cli

    def walk(group: Any, path: list[str]) -> Any:
        yield path
        for name, command in sorted(getattr(group, "commands", {}).items()):
            yield from walk(command, [*path, name])

    return list(walk(cli, []))


def _started(tree: Path, args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (the child's user + system) of ``python -m tide_bench ARGS`` on that tree's code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tide_bench", *args],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree), "ANTHROPIC_API_KEY": KEY},
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup(trees: dict[str, Path], repeats: int) -> None:
    """Each command's --help and the judge's dry run, each tree in a fresh interpreter, alternating."""
    from tests.helpers import make_run

    run = make_run(Path(tempfile.mkdtemp()) / "run", lambda i: i.reference_reply, split="all")
    paths = {t: run_worker(str(Path(__file__).resolve()), root, ["--case", "commands"]) for t, root in trees.items()}
    main_cases = {"tide-bench --help": ["--help"], "judge --help": ["judge", "--help"]}
    seen: dict[str, dict[str, list[tuple[float, float]]]] = {t: {} for t in trees}
    loads = []
    for r in range(repeats):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for tree in order:
            out = Path(tempfile.mkdtemp()) / "judge"
            cases = main_cases | {"judge --dry-run": ["judge", str(run), "--out", str(out), "--dry-run"]}
            cases |= {" ".join(p) + " --help": [*p, "--help"] for p in paths[tree] if p}
            for label, args in cases.items():
                seen[tree].setdefault(label, []).append(_started(trees[tree], args))
            loads.append(os.getloadavg()[0])
    rows = []
    for tree in trees:
        med = {
            label: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
            for label, v in seen[tree].items()
        }
        helps = {k: v for k, v in med.items() if k.endswith("--help")}
        slowest = max(helps, key=lambda k: helps[k][0])
        cells = [f"{med[k][0]:.2f} / {med[k][1]:.2f}" for k in (*main_cases, "judge --dry-run")]
        rows.append(
            [tree, *cells, f"{slowest}: {helps[slowest][0]:.2f} / {helps[slowest][1]:.2f} ({len(helps)} commands)"]
        )
    print(f"\n## Startup (wall s / CPU s, median of {repeats}; target < 1.5 s wall)\n")
    print(table(["code", *main_cases, "judge --dry-run", "slowest --help (of every command)"], rows))
    print(f"\nload average at each tree's turn: {_fmt(loads, 1)}")


def resume(n: int) -> None:
    from tests.fakes.llm_server import FakeLLMServer
    from tests.helpers import make_run
    from tide_bench.data import load_dataset
    from tide_bench.judging.cache import JudgmentCache

    server = FakeLLMServer(latency=0.05).start()
    try:
        tmp = Path(tempfile.mkdtemp())
        items = load_dataset("sample").items[:n]
        run = make_run(tmp / "run", lambda i: f"{i.reference_reply} [{i.item_id}]", split="all", items=items)
        args = [sys.executable, "-m", "tide_bench.cli.main", "judge", str(run), "--out", str(tmp / "judge")]
        args += ["--base-url", server.url, "--concurrency", "2"]
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


def rubric_versions() -> list[str]:
    """Every rubric file there is (judges/rubric_v*.yaml), oldest first: a new version is measured
    as soon as its file exists."""
    from tide_bench.core.resources import resource_dir

    names = [p.stem.removeprefix("rubric_") for p in resource_dir("judges").glob("rubric_v*.yaml")]
    return sorted(names, key=lambda v: int(v[1:]) if v[1:].isdigit() else 0)


COST_DATA = ("sample", "risk-supplement")


def cost_rows(items: int = 10_000) -> list[list[str]]:
    """$ per ``items`` items per judge x rubric x data x mode, estimated from the real prompts."""
    from tests.helpers import make_run
    from tide_bench.core.errors import ConfigError
    from tide_bench.generation.run_dir import load_run
    from tide_bench.judging import load_judge
    from tide_bench.judging.given_labels import with_item_labels

    runs = {
        data: load_run(make_run(Path(tempfile.mkdtemp()) / "run", lambda i: i.reference_reply, data=data, split="all"))
        for data in COST_DATA
    }
    rows = []
    for name in ("claude-sonnet", "openai-gpt"):
        for version in rubric_versions():
            try:
                config = load_judge(name, rubric=version)
            except ConfigError as exc:  # a rubric file this code does not know yet
                print(f"(skipped {name} {version}: {exc})")
                continue
            for data, run in runs.items():
                if data != COST_DATA[0] and not config.prompt.label_block:
                    continue  # before v4 the message does not depend on the labels: one row is enough
                rows += _cost_rows_for(name, version, data, with_item_labels(config, run, None), run, items)
    return rows


def _cost_rows_for(name: str, version: str, data: str, config: Any, run: Any, items: int) -> list[list[str]]:
    from tide_bench.judging.estimate import CostEstimate
    from tide_bench.judging.plan import make_plan

    rows = []
    sample = make_plan(run, config, None, False).estimate(config)
    est = CostEstimate(  # the sample's mean item at scale: the first-wave cache writes are not scaled up
        n_items=items,
        n_cached=0,
        n_calls=items,
        system_tokens=sample.system_tokens,
        tool_tokens=sample.tool_tokens,
        user_tokens=round(sample.user_tokens / sample.n_calls * items),
        output_tokens=sample.output_per_call * items,
        config=config,
        output_method=sample.output_method,
    )
    d = est.as_dict()
    modes = [("sync", d["sync"]), ("sync, no caching", d["sync_without_caching"])]
    if d["batch"]:
        modes.append(("batch", d["batch"]))
    for mode, row in modes:
        beats = ""
        if mode == "batch":  # its cost falls linearly with the hit rate, from the high end to the low
            low, high, sync = row["cost_low_usd"], row["cost_high_usd"], d["sync"]["cost_usd"]
            need = 1 - (sync - low) / (high - low) if high > low else 0.0
            beats = "always" if need <= 0 else f"{need:.0%} of its requests hit the cache"
        span = (
            ""
            if abs(row["cost_high_usd"] - row["cost_low_usd"]) < 0.5
            else f"${row['cost_low_usd']:,.0f} - ${row['cost_high_usd']:,.0f}"
        )
        rows.append(
            [
                f"{name} ({config.model})",
                version,
                data,
                f"{est.fixed_tokens:,} + {round(sample.user_tokens / sample.n_calls)}",
                f"{est.output_per_call}",
                mode,
                f"${row['cost_usd']:,.0f}",
                f"{row['cost_usd'] / items:.4f}",
                span,
                f"{row['output_share']:.0%}",
                beats,
            ]
        )
    return rows


def cost() -> None:
    print(
        "\n## Cost per 10,000 items (estimated from the real prompts, ~4 characters/token, replies of reference "
        "length; output tokens derived from each rubric's schema at its prompt's typical lengths; prices from "
        "judges/prices.yaml)\n"
    )
    print(
        table(
            [
                "judge",
                "rubric",
                "data",
                "input tokens/item (fixed + item, label included)",
                "output tokens/item",
                "mode",
                "$ per 10k (plan for)",
                "$ per item",
                "range (caching)",
                "output share",
                "batch is cheaper than sync when",
            ],
            cost_rows(),
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000, help="hosted case: items (ideal = items/32 x 0.1 s)")
    parser.add_argument("--local-items", type=int, default=3000, help="local case: items")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline-ref", default=None, help="git ref measured alternately in the same run, e.g. main")
    parser.add_argument(
        "--sections",
        default="throughput,resume,startup,cost",
        help="Comma-separated subset of throughput,resume,startup,cost.",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write every measurement to this file")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--case", default="hosted", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(command_paths() if args.case == "commands" else worker(args.case, args.n)))
        return
    sections = set(args.sections.split(","))
    os.environ["ANTHROPIC_API_KEY"] = KEY
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f} at start\n")
    runs = None
    trees = code_trees(args.baseline_ref)
    if "throughput" in sections:
        runs = throughput(trees, args.items, args.local_items, args.repeats)
    if "resume" in sections:
        resume(40)
    if "startup" in sections:
        startup(trees, args.repeats)
    if "cost" in sections:
        cost()
    if args.json and runs is not None:
        args.json.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
