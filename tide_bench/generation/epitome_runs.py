"""EPITOME and run folders: score a finished run with the local scorer, and make the validation
pack's run (the authors' Reddit replies, to be judged with the EPITOME rubric).

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

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.jsonio import atomic_write_text, iter_jsonl, write_json
from tide_bench.core.provenance import utc_now
from tide_bench.epitome.mechanisms import KEYS, metric_name
from tide_bench.epitome.summary import summarize
from tide_bench.generation.run_dir import MANIFEST_NAME, load_run
from tide_bench.generation.run_manifest import MANIFEST_KIND

SCORES_NAME = "epitome.json"
PACK_TASK = "epitome_reddit"
PACK_BACKEND = "epitome-reddit"
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


def write_pack_run(source: str | Path, out: str | Path, *, overwrite: bool = False) -> Path:
    """A run folder whose replies are the Reddit supporters' own, one item per labelled pair
    (:func:`tide_bench.epitome.validation.pack_items`): what ``tide-bench judge OUT --rubric
    epitome`` rates for the validation pack. It holds the user's copy of the Reddit text, like
    a judge cache; keep it where that copy lives, never in a submission."""
    from tide_bench.data.sources import split_content_hash
    from tide_bench.epitome.corpus import read_corpus
    from tide_bench.epitome.validation import pack_items

    corpus = read_corpus(source)
    out = Path(out)
    manifest_path = out / MANIFEST_NAME
    if manifest_path.exists() and not overwrite:
        raise ConfigError(f"{out} already holds a run ({MANIFEST_NAME})", hint="pass --overwrite or another --out")
    items = pack_items(corpus)
    split_sha = split_content_hash(items, "test")
    samples_rel = f"samples/samples_{PACK_TASK}.jsonl"
    (out / "samples").mkdir(parents=True, exist_ok=True)
    lines = []
    for doc_id, item in enumerate(items):
        doc = item.to_doc() | {"tide_source": "epitome-reddit", "split_sha256": split_sha}
        lines.append(
            json.dumps(
                {
                    "doc_id": doc_id,
                    "doc": doc,
                    "target": "",
                    "arguments": {"gen_args_0": {"arg_0": "", "arg_1": {}}},
                    "resps": [[item.reference_reply]],
                    "filtered_resps": [item.reference_reply],
                },
                ensure_ascii=False,
            )
        )
    atomic_write_text(out / samples_rel, "\n".join(lines) + "\n")
    manifest = {
        "schema_version": 1,
        "kind": MANIFEST_KIND,
        "created_at": utc_now(),
        "data": {
            "source": "epitome-reddit (the user's copy of behavioral-data/Empathy-Mental-Health)",
            "source_kind": "epitome",
            "is_synthetic_sample": False,
            "split": "test",
            "split_version": "epitome-reddit-all",
            "n_items": len(items),
            "split_sha256": split_sha,
            "dataset_sha256": corpus.sha256,
        },
        "tasks": [PACK_TASK],
        "model": {"backend": PACK_BACKEND, "name": "Reddit supporters (EPITOME's labelled replies)"},
        "prompt": {"condition": "epitome-pack"},
        "files": {"samples": {PACK_TASK: samples_rel}},
        "n_generations": len(items),
        "epitome_pack": pack_identity(corpus),
    }
    write_json(manifest_path, manifest)
    return out


def pack_identity(corpus: Any) -> dict[str, Any]:
    from tide_bench.epitome.validation import pack

    spec = pack()
    return {"pack": spec["id"], "version": spec["version"], "data": corpus.summary()}


def _rewrite(path: Path, by_line: dict[tuple[str, int], dict[str, Any]]) -> None:
    lines = []
    for line, obj in iter_jsonl(path, DataError, allow_nan=True):
        row = by_line.get((str(path), line))
        if row is not None and isinstance(obj, dict):
            obj = {k: v for k, v in obj.items() if k not in FIELDS} | {f: row[f] for f in FIELDS}
        lines.append(json.dumps(obj, ensure_ascii=False))
    atomic_write_text(path, "\n".join(lines) + "\n")
