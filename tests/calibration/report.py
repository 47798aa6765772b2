"""The tables of docs/statistics.md, generated from the calibration suite's measured rates.

    python -m tests.calibration.report --run          # run the suite (fast and full mode), then write the tables
    python -m tests.calibration.report --run full     # rerun one mode only
    python -m tests.calibration.report                # rewrite the tables from the committed measurements
    python -m tests.calibration.report --check        # exit 1 when the page differs from what this writes

A run appends every measured rate as a JSON line (``TIDE_BENCH_CALIBRATION_REPORT``, see
``conftest.py``) to ``docs/calibration/<mode>.jsonl``, after one line that says what ran (commit,
machine, command, wall time). The page's tables sit between ``<!-- BEGIN GENERATED name -->`` and
``<!-- END GENERATED name -->`` and are only ever written by this module; ``tests/test_docs.py``
fails when they differ from what it renders from the committed lines, or when a placeholder is
left anywhere in docs/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.calibration.power import Bounds

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "statistics.md"
DATA = ROOT / "docs" / "calibration"
ROWS = Path(__file__).with_name("rows.yaml")
MODES = ("fast", "full")
SECTIONS = ("runs", "measured", "kit", "halo", "power", "cells")
MARK = re.compile(r"<!-- BEGIN GENERATED (\w+) -->\n.*?<!-- END GENERATED \1 -->", re.DOTALL)
RATES = ("coverage", "level", "power")


def stat_of(label: str) -> str:
    """The statistic a cell's label names: the label up to its first comma outside brackets
    ("FWER holm, 6 equal models, ..." -> "FWER holm")."""
    depth = 0
    for i, char in enumerate(label):
        depth += (char in "([") - (char in ")]")
        if depth == 0 and label.startswith(", ", i):
            return label[:i]
    return label


def rows() -> list[dict[str, Any]]:
    import yaml

    return yaml.safe_load(ROWS.read_text(encoding="utf-8"))


def load(mode: str, folder: Path = DATA) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run line and the measured rates of one mode's committed measurements."""
    lines = [json.loads(line) for line in (folder / f"{mode}.jsonl").read_text(encoding="utf-8").splitlines() if line]
    meta = next((x for x in lines if x.get("kind") == "run"), {})
    return meta, [x for x in lines if x.get("kind") != "run"]


# --- running the suite ------------------------------------------------------------------------------


def run(mode: str, workers: int = 2, folder: Path = DATA) -> int:
    """Run ``pytest tests/calibration`` in ``mode`` on ``workers`` processes; its measured rates
    go to ``folder/<mode>.jsonl`` after a line that says what ran."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{mode}.jsonl"
    scratch = target.with_suffix(".partial")
    scratch.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers), "tests/calibration"]
    command += ["--full"] if mode == "full" else []
    env = dict(os.environ, TIDE_BENCH_CALIBRATION_REPORT=str(scratch), PYTHONPATH=str(ROOT))
    env.pop("TIDE_BENCH_CALIBRATION", None)
    start, cpu = time.monotonic(), _children_cpu()
    done = subprocess.run(command, cwd=ROOT, env=env, check=False)
    wall, cpu = time.monotonic() - start, _children_cpu() - cpu
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    meta = {
        "kind": "run",
        "mode": mode,
        "command": "pytest tests/calibration -n {}{}".format(workers, " --full" if mode == "full" else ""),
        "commit": commit.stdout.strip() or None,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "wall_s": round(wall),
        "cpu_s": round(cpu),
        "exit_status": done.returncode,
        "machine": machine(),
    }
    lines = [json.dumps(meta)] + [_rounded(line) for line in scratch.read_text(encoding="utf-8").splitlines()]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    scratch.unlink()
    return done.returncode


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine() -> str:
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"model name\s*:\s*(.+)", cpuinfo.read_text(encoding="utf-8", errors="replace"))
        model = found.group(1).strip() if found else ""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    busy = f", load {load:.1f} at the end" if load is not None else ""
    return f"{os.cpu_count()} CPUs ({model or platform.machine()}){busy}, Python {platform.python_version()}"


def _rounded(line: str) -> str:
    record = json.loads(line)
    return json.dumps({k: round(v, 6) if isinstance(v, float) else v for k, v in record.items()})


# --- formatting -------------------------------------------------------------------------------------


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _span(values: list[float], fmt: Any) -> str:
    low, high = min(values), max(values)
    return fmt(low) if fmt(low) == fmt(high) else f"{fmt(low)[:-2] if fmt is pct else fmt(low)}-{fmt(high)}"


def _number(x: float) -> str:
    return f"{x:.3g}"


def by_stat(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Cells grouped by the statistic they measure (and what is asserted of it), in order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        stat = stat_of(r["label"])
        key = stat if all(x["kind"] == r["kind"] for x in out.get(stat, [r])) else f"{stat} ({r['kind']})"
        out.setdefault(key, []).append(r)
    return out


def summary(records: list[dict[str, Any]]) -> str:
    """One statistic's cells in a few words: the range, the studies, the pooled rate."""
    kind = records[0]["kind"]
    if kind == "check":
        return f"{len(records)} check{'s' if len(records) > 1 else ''} pass"
    rate = kind in RATES or records[0].get("rate", True)
    fmt = pct if rate else _number
    values = [r["measured"] for r in records]
    studies = sum(r["reps"] for r in records)
    if len(records) == 1:
        text = f"{fmt(values[0])} ({records[0]['reps']:,})"
    else:
        text = f"{_span(values, fmt)} over {len(records)} designs ({studies:,})"
        if kind in ("coverage", "level"):
            text += f", pooled {pct(sum(r['measured'] * r['reps'] for r in records) / studies)}"
    if kind == "power":
        text += f", floor {pct(records[0]['nominal'])}"
    return text


def verdict(row: dict[str, Any], records: list[dict[str, Any]]) -> str:
    failed = sorted({r["stat"] for r in records if r.get("passed") is False})
    if failed:
        return "**fails**: " + "; ".join(failed)
    kinds = {r["kind"] for r in records}
    if not kinds & {"coverage", "level"}:
        return row.get("note") or ("informational" if "value" in kinds else "checked")
    text = "calibrated"
    if row.get("conservative"):
        text += f" (conservative: {row['conservative']})"
    if row.get("limit"):
        limited = [r for r in records if "documented limit" in r["label"]]
        figure = f" ({_span([r['measured'] for r in limited], pct)})" if limited else ""
        others = any(r["kind"] in ("coverage", "level") and r not in limited for r in records)
        text = (f"{text}, except a documented limit: " if others else "documented limit: ") + row["limit"] + figure
    if row.get("note"):
        text += f"; {row['note']}"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


# --- the tables -------------------------------------------------------------------------------------


def render_measured(table: list[dict[str, Any]], full: list[dict[str, Any]]) -> str:
    lines = [
        "| # | published number (where) | what it claims | measured in the full mode: range (studies) | verdict |",
        "|---|---|---|---|---|",
    ]
    for row in table:
        records = [r for r in full if r["row"] == row["row"]]
        measured = "; ".join(f"{stat}: {summary(rs)}" for stat, rs in by_stat(records).items()) or "not measured"
        lines.append(
            f"| {row['row']} | {_cell(row['number'])} (`{row['where']}`) | {_cell(row['claim'])} | "
            f"{_cell(measured)} | {_cell(verdict(row, records))} |"
        )
    return "\n".join(lines)


def render_kit(table: list[dict[str, Any]], full: list[dict[str, Any]]) -> str:
    lines = [
        "| # | number | round 2 (11300cc) | round 3 review (555d8bd) | now (this suite, full mode) |",
        "|---|---|---|---|---|",
    ]
    for row in table:
        if "kit" not in row:
            continue
        groups = by_stat(r for r in full if r["row"] == row["row"] and r["kind"] != "check")
        wanted = row.get("headline") or list(groups)[:1]
        wanted = [wanted] if isinstance(wanted, str) else wanted
        now = "; ".join(f"{stat}: {summary(groups[stat])}" for stat in wanted if stat in groups) or "checked (a rule)"
        lines.append(
            f"| {row['row']} | {_cell(row['number'])} | {_cell(row['kit']['round2'])} | "
            f"{_cell(row['kit']['review'])} | {_cell(now)} |"
        )
    return "\n".join(lines)


HALO = re.compile(r"^halo (?:accusation|detection), (.*), (\d+) items x")


def render_halo(full: list[dict[str, Any]]) -> str:
    cells: dict[str, dict[int, dict[str, Any]]] = {}
    for r in full:
        found = HALO.match(r["label"]) if r["row"] == "28" else None
        if found:
            cells.setdefault(found.group(1), {})[int(found.group(2))] = r
    sizes = sorted({n for c in cells.values() for n in c})
    head = " | ".join(f"{n} items" for n in sizes)
    lines = [f"| judge | truth | {head} |", "|---|---|" + "---|" * len(sizes)]
    for name, by_size in cells.items():
        truth = "no halo: accused (level, nominal 5 %)" if name.startswith("faithful") else "halo: caught (power)"
        figures = " | ".join(
            f"{pct(by_size[n]['measured'])} ({by_size[n]['reps']})" if n in by_size else "–" for n in sizes
        )
        lines.append(f"| {name} | {truth} | {figures} |")
    return "\n".join(lines)


def _sharpest(records: list[dict[str, Any]]) -> dict[str, Any]:
    return min(records, key=lambda r: r["caught"])


def render_power(fast: list[dict[str, Any]], full: list[dict[str, Any]]) -> str:
    lines = [
        "| # | assertion | fast: studies (cells) | fast: accepted | fast: P(fail), 90 % coverage or 2x size "
        "| fast: P(fail), 99 % coverage | full: studies (cells) | full: P(fail), 90 % coverage or 2x size |",
        "|---|---|---|---|---|---|---|---|",
    ]
    fast_groups = by_stat(r for r in fast if r["kind"] in ("coverage", "level"))
    full_groups = by_stat(r for r in full if r["kind"] in ("coverage", "level"))
    for stat, records in fast_groups.items():
        weakest = _sharpest(records)
        bounds = Bounds.of(weakest["kind"], weakest["nominal"], weakest["reps"], weakest["cells"], weakest["ceiling"])
        accepted = (
            f"{pct(bounds.floor)[:-2]}-{pct(bounds.ceiling)}"
            if bounds.kind == "coverage"
            else f"≤ {pct(bounds.ceiling)}"
        )
        caught = pct(bounds.caught())
        if weakest.get("unpowered"):
            caught += f" (not required: {weakest['unpowered']})"
        wide = bounds.caught_wide()
        others = full_groups.get(stat, [])
        full_text = "– | –"
        if others:
            weakest_full = _sharpest(others)
            full_text = f"{min(r['reps'] for r in others):,} ({weakest_full['cells']}) | {pct(weakest_full['caught'])}"
        lines.append(
            f"| {weakest['row']} | {_cell(stat)} | {weakest['reps']:,} ({weakest['cells']}) | {accepted} | "
            f"{_cell(caught)} | {pct(wide) if wide is not None else 'one-sided'} | {full_text} |"
        )
    return "\n".join(lines)


def render_cells(full: list[dict[str, Any]]) -> str:
    lines = ["| # | cell | kind | measured | accepted | studies |", "|---|---|---|---|---|---|"]
    for r in sorted(full, key=lambda r: (int(r["row"]), r["label"])):
        if r["kind"] == "check":
            continue
        rate = r["kind"] in RATES or r.get("rate", True)
        measured = pct(r["measured"]) if rate else _number(r["measured"])
        if r["kind"] == "coverage":
            accepted = f"{pct(r['floor'])[:-2]}-{pct(r['ceiling'])}"
        elif r["kind"] == "level":
            accepted = f"≤ {pct(r['ceiling'])}"
        elif r["kind"] == "power":
            accepted = f"≥ {pct(r['floor'])}"
        else:
            accepted = "(recorded)"
        lines.append(f"| {r['row']} | {_cell(r['label'])} | {r['kind']} | {measured} | {accepted} | {r['reps']:,} |")
    return "\n".join(lines)


def render_runs(fast_meta: dict[str, Any], full_meta: dict[str, Any]) -> str:
    lines = [
        "| mode | command | commit | date | wall time | CPU time (all processes) | exit status | machine |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for meta in (fast_meta, full_meta):
        lines.append(
            f"| {meta['mode']} | `{meta['command']}` | {meta['commit']} | {meta['date']} | {_minutes(meta['wall_s'])} "
            f"| {_minutes(meta['cpu_s'])} | {meta['exit_status']} | {_cell(meta['machine'])} |"
        )
    return "\n".join(lines)


def _minutes(seconds: int) -> str:
    return f"{seconds // 60} min {seconds % 60:02d} s"


def sections(folder: Path = DATA) -> dict[str, str]:
    """Every generated table of the page, from the committed measurements."""
    fast_meta, fast = load("fast", folder)
    full_meta, full = load("full", folder)
    table = rows()
    missing = [r["row"] for r in table if not any(x["row"] == r["row"] for x in full)]
    if missing:
        raise SystemExit(f"the full-mode measurements have nothing for rows {', '.join(missing)}")
    return {
        "runs": render_runs(fast_meta, full_meta),
        "measured": render_measured(table, full),
        "kit": render_kit(table, full),
        "halo": render_halo(full),
        "power": render_power(fast, full),
        "cells": render_cells(full),
    }


def fill(page: str, tables: dict[str, str]) -> str:
    """``page`` with every generated section replaced by its table."""
    found = {m.group(1) for m in MARK.finditer(page)}
    if found != set(SECTIONS):
        raise SystemExit(f"docs/statistics.md: generated sections {sorted(found)}, expected {sorted(SECTIONS)}")
    return MARK.sub(
        lambda m: f"<!-- BEGIN GENERATED {m.group(1)} -->\n{tables[m.group(1)]}\n<!-- END GENERATED {m.group(1)} -->",
        page,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.calibration.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", nargs="?", const="both", choices=(*MODES, "both"), help="run the suite first")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers for --run (default 2)")
    parser.add_argument("--check", action="store_true", help="only check that the page is up to date")
    args = parser.parse_args(argv)
    for mode in MODES if args.run == "both" else (args.run,) if args.run else ():
        status = run(mode, args.workers)
        print(f"{mode} mode: exit status {status}")
    page = PAGE.read_text(encoding="utf-8")
    updated = fill(page, sections())
    if args.check:
        if updated != page:
            print("docs/statistics.md differs from the committed measurements: python -m tests.calibration.report")
            return 1
        return 0
    PAGE.write_text(updated, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
