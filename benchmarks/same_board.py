"""Whether two versions of the code build the same board from the same submissions, byte for
byte apart from the build's time stamp: a recorded check for changes that must not change
any output (a reader or writer rewritten, speed code removed).

The code at ``--baseline-ref`` (a git ref) and the current tree each build the site in a fresh
process from the same submissions (those of ``bench_leaderboard.py``, made here, or read from
``--submissions-dir``); then every file of the two sites is compared: ``leaderboard.json``,
every page, the CSV exports, ``instances/`` and the per-model downloads. The time stamp
(``built_at``, also shown on the pages and in the marker file) is the one difference allowed:
each site's own is replaced by the same placeholder before comparing.

    python benchmarks/same_board.py --baseline-ref main [--submissions 50] [--items 2000] [--submissions-dir DIR]

It prints one line per differing file (none when the boards are the same) and exits 1 if any
file differs or is missing from one side.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, code_trees, run_worker

STAMP = b"<built_at>"


def build(submissions: Path, site: Path) -> dict[str, Any]:
    """One build by the code on ``sys.path`` (a worker process), with the benchmark's board."""
    from bench_leaderboard import board

    from tide_bench.leaderboard import build_site

    # the benchmark's entries carry no risk supplement: the risk gate (a publishing rule) is off
    result = build_site(submissions, site, board(), allow_risk_gate_off=True)
    return {"accepted": len(result.accepted)}


def files(site: Path) -> dict[str, bytes]:
    """Every file of a built site by its relative path, its own time stamp replaced by :data:`STAMP`."""
    stamp = json.loads((site / "leaderboard.json").read_text(encoding="utf-8"))["built_at"].encode()
    return {
        p.relative_to(site).as_posix(): p.read_bytes().replace(stamp, STAMP) for p in site.rglob("*") if p.is_file()
    }


def differences(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """One line per file that differs or exists on one side only."""
    out = [f"only in the baseline: {name}" for name in sorted(before.keys() - after.keys())]
    out += [f"only in the current build: {name}" for name in sorted(after.keys() - before.keys())]
    for name in sorted(before.keys() & after.keys()):
        if before[name] != after[name]:
            at = next(
                (k for k, (a, b) in enumerate(zip(before[name], after[name], strict=False)) if a != b),
                min(len(before[name]), len(after[name])),
            )
            out.append(
                f"differs: {name} (first at byte {at}: {before[name][at : at + 60]!r} / {after[name][at : at + 60]!r})"
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--baseline-ref", default="main", help="git ref whose code builds the baseline board (default main)"
    )
    parser.add_argument("--submissions", type=int, default=50)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--submissions-dir", type=Path, default=None, help="build these instead of making new ones")
    parser.add_argument("--worker", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(build(Path(args.worker[0]), Path(args.worker[1]))))
        return
    sys.path.insert(0, str(ROOT))
    from bench_leaderboard import copies, make_submission

    scratch = Path(tempfile.mkdtemp())
    root = args.submissions_dir or scratch / "submissions"
    if args.submissions_dir is None:
        copies(make_submission(root, args.items), args.submissions)
    trees = code_trees(args.baseline_ref)
    sites = {name: scratch / f"site-{name}" for name in ("baseline", "current")}
    for name, site in sites.items():
        done = run_worker(__file__, trees[name], [str(root), str(site)], extra_path=ROOT / "benchmarks")
        print(f"{name}: {done['accepted']} entries accepted")
    found = differences(files(sites["baseline"]), files(sites["current"]))
    n_files = len(files(sites["current"]))
    print("\n".join(found) if found else f"the same board: {n_files} files equal apart from the time stamp")
    shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
