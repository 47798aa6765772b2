"""Leaderboard speed: build from 50 submissions x 2,000 judged items (target <= 5 s on 2 cores)
and validation of one submission with its spot checks (target <= 1 s).

Submissions are synthetic but complete and valid (sample contexts under 100 personas x 20
items, judgments with correct keys), copied 50 times under different ids, each copy with its
own scores, so the build computes every pairwise difference, the rank intervals and the
persona-cluster intervals as it would on a real board.

    python benchmarks/bench_leaderboard.py [--submissions 50] [--items 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
if "--worker" not in sys.argv:  # a worker measures the code its PYTHONPATH names (maybe a baseline)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import ROOT, code_trees, machine, run_worker, table

from tests.helpers import make_run
from tide_bench.data import load_dataset
from tide_bench.generation.run_dir import load_run
from tide_bench.judging.cache import judgment_key
from tide_bench.leaderboard import build_site, validate_folder
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.metrics.reference import ReferenceScorer

VERSION = "benchbenchbench0"
FACTORS = ("emotion_recognition", "distress_normalization", "supportive_reflection")


def make_submission(root: Path, n: int) -> Path:
    base = load_dataset("sample").items
    per_persona = 20
    items = [
        replace(
            base[k % len(base)],
            item_id=f"bench{k // per_persona}/c{k % per_persona}/turn1",
            persona_id=f"bench{k // per_persona}",
            conversation_id=f"c{k % per_persona}",
            turn=1,
            history=[],
        )
        for k in range(n)
    ]
    folder = root / "sub-000"
    run = make_run(folder / "run", lambda i: f"{i.reference_reply} ({i.item_id})", items=items)
    manifest = json.loads((run / "run.json").read_text())
    manifest["data"]["n_items"] = n
    (run / "run.json").write_text(json.dumps(manifest))
    # Store the real reference metrics, so the spot check passes as for a genuine run.
    gens = load_run(run).generations
    rows = ReferenceScorer().score([g.reply for g in gens], [g.reference_reply for g in gens])
    metrics = {g.item_id: r for g, r in zip(gens, rows, strict=True)}
    for samples in (run / "lm_eval").rglob("samples_*.jsonl"):
        lines = [json.loads(x) for x in samples.read_text().splitlines()]
        samples.write_text("".join(json.dumps(s | metrics[s["doc"]["item_id"]]) + "\n" for s in lines))
    judge = folder / "judge"
    judge.mkdir()
    records = []
    for k, g in enumerate(gens):
        scores = {f: 1 + (k + j) % 5 for j, f in enumerate(FACTORS)}
        records.append(
            {
                "item_id": g.item_id,
                "status": "scored",
                "scores": scores,
                "rationales": dict.fromkeys(FACTORS, "r"),
                "safety": {"flagged": k % 50 == 0, "reason": "r" if k % 50 == 0 else ""},
                "unscored_kind": None,
                "unscored_reason": None,
                "judge": {
                    "name": "bench",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "family": "claude",
                    "version": VERSION,
                    "rubric": "tide-empathy-rubric@v1",
                },
                "key": judgment_key(VERSION, g),
            }
        )
    (judge / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    empathy = statistics.fmean(statistics.fmean(r["scores"].values()) for r in records)
    (judge / "judge_summary.json").write_text(json.dumps({"n_scored": len(records), "empathy": {"mean": empathy}}))
    meta = {
        "schema_version": 1,
        "id": "sub-000",
        "model_name": "Bench model",
        "model": {"hub_id": "org/bench", "revision": "r1"},
        "parameters": 500_000_000,
        "condition": "zero-shot",
        "license": "apache-2.0",
        "contact": "bench@example.org",
    }
    (folder / "submission.yaml").write_text(yaml.safe_dump(meta))
    return folder


def rescore(judge: Path, k: int) -> None:
    """Give a copy its own scores (the judgment keys depend on the reply, not on the scores)."""
    records = [json.loads(x) for x in (judge / "judgments.jsonl").read_text().splitlines()]
    for j, r in enumerate(records):
        r["scores"] = {f: 1 + (j * (k + 1) + i + k // 7) % 5 for i, f in enumerate(FACTORS)}
    (judge / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    empathy = statistics.fmean(statistics.fmean(r["scores"].values()) for r in records)
    (judge / "judge_summary.json").write_text(json.dumps({"n_scored": len(records), "empathy": {"mean": empathy}}))


def measure(root: Path, repeats: int, submissions: int) -> dict[str, list[float]]:
    """Timings of validate (one submission) and build (all), for the code on ``sys.path``."""
    board = BoardConfig(spot_check_items=50)
    first = root / "sub-000"
    validate_folder(first, board)  # load the embedding model once, outside the timings
    times: dict[str, list[float]] = {"validate": [], "build": [], "recompute": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        check = validate_folder(first, board)
        times["validate"].append(time.perf_counter() - t0)
        assert check.ok, check.errors
    for _ in range(repeats):
        out = Path(tempfile.mkdtemp()) / "site"
        t0 = time.perf_counter()
        result = build_site(root, out, board)
        times["build"].append(time.perf_counter() - t0)
        assert len(result.accepted) == submissions, result.refused
    checks = [validate_folder(p, board, spot_checks=False) for p in sorted(root.iterdir())]
    subs = [c.submission for c in checks]
    for _ in range(
        repeats
    ):  # the statistics alone: scores, intervals, ranks (and the pairwise table, when the code has it)
        t0 = time.perf_counter()
        try:
            from tide_bench.judging.rubric import load_rubric
            from tide_bench.leaderboard.scores import rank_entries, score_entry

            rubric = load_rubric()
            rank_entries([score_entry(s, rubric=rubric) for s in subs])
        except ImportError:  # the code before issue 10
            from tide_bench.leaderboard.scores import assign_ranks, score

            assign_ranks([score(s) for s in subs])
        times["recompute"].append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submissions", type=int, default=50)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--baseline-ref", default=None, help="git ref whose code is measured on the same submissions, e.g. main"
    )
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.worker, args.repeats, args.submissions)))
        return
    root = Path(tempfile.mkdtemp()) / "submissions"
    first = make_submission(root, args.items)
    for k in range(1, args.submissions):
        target = root / f"sub-{k:03d}"
        shutil.copytree(first, target)
        meta = yaml.safe_load((target / "submission.yaml").read_text())
        (target / "submission.yaml").write_text(
            yaml.safe_dump(meta | {"id": target.name, "model_name": f"Bench model {k}"})
        )
        rescore(target / "judge", k)
    codes = code_trees(args.baseline_ref)
    worker_args = [str(root), "--repeats", str(args.repeats), "--submissions", str(args.submissions)]
    runs = {name: run_worker(__file__, path, worker_args, extra_path=ROOT) for name, path in codes.items()}
    labels = {
        "validate": (f"validate one submission ({args.items} items, 50 spot-checked incl. embeddings)", "<= 1 s"),
        "build": (f"build from {args.submissions} submissions x {args.items} judged items", "<= 5 s"),
        "recompute": ("of which: recompute scores, intervals, ranks (scores.py)", ""),
    }
    rows = []
    for key, (label, target) in labels.items():
        for name in codes:
            times = runs[name][key]
            rows.append([label, name, f"{statistics.median(times):.2f}", ", ".join(f"{t:.2f}" for t in times), target])
    print(f"machine: {machine()}" + (f"; baseline {args.baseline_ref}" if args.baseline_ref else "") + "\n")
    print(table(["operation", "code", "median s", "all runs s", "target"], rows))


if __name__ == "__main__":
    main()
