"""EPITOME and run folders: score a finished run with the local scorer.

``tide-bench epitome score RUN_DIR`` adds the local EPITOME scorer's metrics to a finished run.

Each samples line gets ``epitome_er``, ``epitome_ip`` and ``epitome_ex`` (the expected level,
0-2) and the predicted levels (``epitome_<key>_level``), the same fields an lm-eval run of a
task that declares them writes, so the leaderboard, the study and every reader find them
where the other per-item metrics are. ``epitome.json`` beside ``run.json`` records which
scorer produced them (its card's sha256 and cross-validated macro-F1) and their summary with
cluster intervals (personas; EmpatheticDialogues speakers), overall and per scenario.

Scoring again replaces the previous scores (a changed scorer changes the identity recorded).
Every file is rewritten whole through a temporary file, so an interrupted run leaves each
samples file either as it was or fully scored, and ``epitome.json`` is written last.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import atomic_write_text, iter_jsonl, write_json
from tide_bench.core.provenance import utc_now
from tide_bench.epitome.mechanisms import KEYS, metric_name
from tide_bench.epitome.summary import summarize
from tide_bench.generation.run_dir import load_run

SCORES_NAME = "epitome.json"
FIELDS = tuple(f for k in KEYS for f in (metric_name(k), f"{metric_name(k)}_level"))


def score_run(
    run_dir: str | Path,
    model_dir: str | Path,
    *,
    device: str = "auto",
    batch_size: int = 64,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Score every reply of a run; returns what ``epitome.json`` holds."""
    from tide_bench.epitome.scorer import EpitomeScorer

    run = load_run(run_dir)
    scorer = EpitomeScorer.load(model_dir, device)
    gens = run.generations
    rows: list[dict[str, Any]] = []
    for start in range(0, len(gens), batch_size * 4):
        chunk = gens[start : start + batch_size * 4]
        rows += scorer.score([g.reply for g in chunk], batch_size=batch_size)
        if progress is not None:
            progress(len(chunk))
    by_line = {(str(g.file), g.line): row for g, row in zip(gens, rows, strict=True)}
    for path in sorted({str(g.file) for g in gens}):
        _rewrite(Path(path), by_line)
    record = {
        "kind": "tide-bench-epitome-scores",
        "created_at": utc_now(),
        "scorer": scorer.identity(),
        "summary": summarize(rows, [g.persona_id for g in gens], [g.scenario for g in gens]),
    }
    write_json(Path(run_dir) / SCORES_NAME, record)
    return record


def _rewrite(path: Path, by_line: dict[tuple[str, int], dict[str, Any]]) -> None:
    lines = []
    for line, obj in iter_jsonl(path, DataError, allow_nan=True):
        row = by_line.get((str(path), line))
        if row is not None and isinstance(obj, dict):
            obj = {k: v for k, v in obj.items() if k not in FIELDS} | {f: row[f] for f in FIELDS}
        lines.append(json.dumps(obj, ensure_ascii=False))
    atomic_write_text(path, "\n".join(lines) + "\n")
