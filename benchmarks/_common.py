"""Helpers shared by the benchmark scripts: machine description, repeated timing, tables.

Benchmarks compare ratios measured in the same run (these machines are shared and noisy)
and report the median of repeated runs. They are scripts, not tests: nothing here asserts
a speed.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = []
    for pkg in ("torch", "transformers", "lm_eval"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions.append(f"{pkg} {metadata.version(pkg)}")
    return f"{cpu}, {os.cpu_count()} cores visible, Python {platform.python_version()}, {', '.join(versions)}"


def median_time(fn: Callable[[], object], repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def run_command(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})}
    )
    return time.perf_counter() - t0


def table(headers: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def code_trees(baseline_ref: str | None) -> dict[str, Path]:
    """``{"current": ROOT}``, plus ``{"baseline": a copy of that git ref's files}`` when asked:
    a benchmark then measures both in one run on one machine and reports the ratio."""
    trees = {"current": ROOT}
    if baseline_ref:
        baseline = Path(tempfile.mkdtemp()) / "baseline"
        baseline.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", baseline_ref], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive, check=True)
        trees["baseline"] = baseline
    return trees


def run_worker(script: str, code_root: Path, args: list[str], extra_path: Path | None = None) -> Any:
    """Run ``script --worker ARGS`` importing tide_bench from ``code_root``; return the JSON it
    prints last."""
    path = str(code_root) + (f"{os.pathsep}{extra_path}" if extra_path else "")
    cmd = [sys.executable, script, "--worker", *args]
    done = subprocess.run(
        cmd, check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}, cwd=code_root
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
