"""Leaderboard build speed and size: 50 submissions x 2,000 judged items (target: index page
<= 1 MB, per-item data split per model; the build's time is measured against a baseline, no
absolute target).

The submissions are synthetic but complete and valid, and pass every check a real one
must: a TIDE-like local snapshot of 100 test-split personas x 20 single-exchange
conversations (texts drawn from the built-in sample), a run whose items hash to its
``split_sha256``, real text metrics, judgments with correct keys, rationales of a typical
judge's length and a matching judge summary. ``bench_validate.py`` times validation of one
such submission. The current code builds twice per repeat: with its default workers (one
process per CPU prepares the entries) and with ``--workers 1`` (all in one process). With
``--baseline-ref main`` the code at that git ref builds the same submissions in the same run
(a fresh process per build, the variants alternating), so they can be compared as ratios on
a shared, noisy machine. CPU seconds include the build's worker processes.

    python benchmarks/bench_leaderboard.py [--submissions 50] [--items 2000] [--repeats 5] [--baseline-ref main]
        [--submissions-dir DIR]

``--submissions-dir`` builds from submissions made before (by this script: they take minutes to
make) instead of making new ones; the folder is only read.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, code_trees, machine, run_worker, table

VERSION = "benchbenchbench0"
# A rationale of a typical judge's length (about 200 characters), so that the per-item data the
# site writes is as large as a real board's.
RATIONALE = (
    "Item {k}, {factor}: the reply names the client's fear and exhaustion and links them to the night shift, "
    "but it moves to advice before reflecting what was shared, so it stays at this level."
)
CONVERSATIONS = 20


def make_snapshot(root: Path, n_items: int) -> Path:
    """A local TIDE-like snapshot whose test split holds ``n_items`` single-exchange items."""
    from tide_bench.data import load_dataset
    from tide_bench.data.splits import split_of

    sample = load_dataset("sample").items
    personas = [str(p) for p in range(1, 100_000) if split_of(str(p)) == "test"][: -(-n_items // CONVERSATIONS)]
    (root / "conversations").mkdir(parents=True)
    (root / "metadata").mkdir()
    k = 0
    for pid in personas:
        conversations = {}
        for c in range(1, CONVERSATIONS + 1):
            item = sample[k % len(sample)]
            conversations[f"conversation_{c}"] = {
                "scenario": item.scenario,
                "turns": [{"person": f"{item.client_utterance} ({pid}.{c})", "chatbot": item.reference_reply}],
            }
            k += 1
        (root / "conversations" / f"{pid}_conversations.json").write_text(
            json.dumps({"persona_id": pid, "conversations": conversations})
        )
        (root / "metadata" / f"{pid}_metadata.json").write_text(
            json.dumps({"persona_id": pid, "age": 30 + int(pid) % 40})
        )
    return root


def make_submission(root: Path, n_items: int) -> Path:
    """One complete, valid submission ``root/sub-000`` with ``n_items`` judged items (real
    reference metrics, cosine included), packaged by ``create_submission`` (which validates
    it) from a run and judgments written here."""
    from tests.leaderboard_helpers import edit_jsonl, samples_files, tide_run, write_judgments
    from tide_bench.generation.run_dir import load_run
    from tide_bench.judging.rubric import load_rubric
    from tide_bench.leaderboard import create_submission
    from tide_bench.metrics.reference import ReferenceScorer

    snapshot = make_snapshot(root.parent / "snapshot", n_items)
    run = tide_run(
        root.parent / "runs" / "bench", lambda i: f"{i.reference_reply} ({i.item_id})", snapshot, model_name="org/bench"
    )
    gens = load_run(run).generations
    cosine = dict(
        zip(
            (g.item_id for g in gens),
            ReferenceScorer().cosine([g.reply for g in gens], [g.reference_reply for g in gens]),
            strict=True,
        )
    )
    for path in samples_files(run):
        edit_jsonl(path, lambda rows: [r.update(cosine_sim=float(cosine[r["doc"]["item_id"]])) for r in rows])
    rubric = load_rubric()
    write_judgments(
        run,
        rubric,
        lambda k, g: {f: 1 + (k + j) % 5 for j, f in enumerate(rubric.factor_keys)},
        version=VERSION,
        rationale=lambda k, f: RATIONALE.format(k=k, factor=f),
        flagged=lambda k: k % 50 == 0,
    )
    meta = {
        "schema_version": 1,
        "id": "sub-000",
        "model_name": "Bench model",
        "model": {"hub_id": "org/bench", "revision": "main"},
        "parameters": 500_000_000,
        "condition": "zero-shot",
        "license": "apache-2.0",
        "contact": "bench@example.org",
    }
    (root.parent / "meta.yaml").write_text(yaml.safe_dump(meta))
    return create_submission(run, root.parent / "meta.yaml", root, board=board(), spot_checks=False).folder


def copies(first: Path, n: int) -> None:
    """n-1 further entries on the same items, each with its own replies (re-keyed judgments)."""
    from tests.leaderboard_helpers import edit_jsonl, rekey, samples_files
    from tide_bench.metrics.reference import text_metrics

    for k in range(1, n):
        target = first.parent / f"sub-{k:03d}"
        shutil.copytree(first, target)
        meta = yaml.safe_load((target / "submission.yaml").read_text())
        (target / "submission.yaml").write_text(
            yaml.safe_dump(meta | {"id": target.name, "model_name": f"Bench model {k}"})
        )

        def vary(rows: list[dict], k: int = k) -> None:
            for r in rows:
                reply = f"{r['filtered_resps'][0]} [{k}]"
                r.update(filtered_resps=[reply], resps=[[reply]], **text_metrics(reply, r["doc"]["reference_reply"]))

        for path in samples_files(target):
            edit_jsonl(path, vary)
        rekey(target)


def board() -> Any:
    from tide_bench.leaderboard.config import BoardConfig

    return BoardConfig(spot_check_items=50, conversations_per_persona=CONVERSATIONS)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(submissions: Path, site: Path, workers: int | None = None) -> dict[str, Any]:
    """One build by the code on ``sys.path`` (a worker process): wall and CPU seconds (of the
    build and of the processes it forked), and the sizes of what it wrote. ``workers`` is passed
    on when given (code before it has no such parameter)."""
    from tide_bench.leaderboard import build_site

    options: dict[str, Any] = {"workers": workers} if workers else {}
    t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
    result = build_site(submissions, site, board(), **options)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0 + _children_cpu() - k0
    instances = [p.stat().st_size for p in (site / "instances").glob("*.js")] if (site / "instances").is_dir() else []
    sizes = {
        "index_bytes": (site / "index.html").stat().st_size,
        "largest_instance_bytes": max(instances, default=0),
        "site_bytes": sum(p.stat().st_size for p in site.rglob("*") if p.is_file()),
    }
    shutil.rmtree(site, ignore_errors=True)
    return {"wall": wall, "cpu": cpu, "accepted": len(result.accepted), **sizes}


def _runs(values: list[float]) -> tuple[str, str]:
    return f"{statistics.median(values):.2f}", ", ".join(f"{t:.2f}" for t in values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submissions", type=int, default=50)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--baseline-ref", default=None, help="git ref whose code builds the same submissions, e.g. main"
    )
    parser.add_argument(
        "--submissions-dir", type=Path, default=None, help="build these submissions instead of making new ones"
    )
    parser.add_argument("--worker", nargs="+", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        submissions, site, *extra = args.worker
        workers = next((int(e) for e in extra if e.isdigit()), None)
        print(json.dumps(measure(Path(submissions), Path(site), workers)))
        return
    sys.path.insert(0, str(ROOT))  # tests.leaderboard_helpers and this tree's code make the inputs
    scratch = Path(tempfile.mkdtemp())
    root = args.submissions_dir or scratch / "submissions"
    if args.submissions_dir is None:
        copies(make_submission(root, args.items), args.submissions)
    else:
        args.submissions = len([p for p in root.iterdir() if p.is_dir()])
    trees = code_trees(args.baseline_ref)
    # the current code twice: its workers (one per CPU) and one process, to show what the workers bring
    variants = {"current": (trees["current"], []), "current, --workers 1": (trees["current"], ["1"])}
    if "baseline" in trees:
        variants["baseline"] = (trees["baseline"], [])
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for _ in range(args.repeats):
        for k, (name, (code, extra)) in enumerate(variants.items()):  # alternating, so all see the same load
            site = scratch / f"site-{k}"
            runs[name].append(run_worker(__file__, code, [str(root), str(site), *extra]))
    rows = []
    workload = f"build from {args.submissions} submissions x {args.items} judged items"
    for name, measured in runs.items():
        assert all(m["accepted"] == args.submissions for m in measured), measured
        rows.append([workload, name, *_runs([m["wall"] for m in measured]), ""])
        rows.append(["  the same, CPU seconds (build and workers)", name, *_runs([m["cpu"] for m in measured]), ""])
        last = measured[-1]
        rows.append(["  index.html, MB", name, f"{last['index_bytes'] / 1e6:.3f}", "", "<= 1 MB"])
        rows.append(["  largest per-model data file, MB", name, f"{last['largest_instance_bytes'] / 1e6:.3f}", "", ""])
        rows.append(["  whole site, MB", name, f"{last['site_bytes'] / 1e6:.1f}", "", ""])
    print(f"machine: {machine()}" + (f"; baseline {args.baseline_ref}" if args.baseline_ref else "") + "\n")
    print(table(["operation", "code", "median", "all runs", "target"], rows))
    wall = {n: statistics.median(m["wall"] for m in r) for n, r in runs.items()}
    cpu = {n: statistics.median(m["cpu"] for m in r) for n, r in runs.items()}
    for other in [n for n in runs if n != "current"]:
        print(
            f"\nratio current / {other}: wall {wall['current'] / wall[other]:.2f}, "
            f"CPU {cpu['current'] / cpu[other]:.2f}"
        )
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
