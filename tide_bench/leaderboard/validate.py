"""Validation a maintainer can trust: every check names what is wrong and what to fix.

Structural checks (always): safe id and paths, size, schema of ``submission.yaml``, a
finished run on the board's split (no ``--limit``), dataset hash and item set, one judgment
(scored or unscored) per item from the board's judge configuration, judgment keys that
match the submitted replies, and the submitter's judge summary against the recomputation.
Spot checks (``tide-bench leaderboard validate``; optional in ``build``): the per-item
reference metrics stored in the samples are recomputed from the reply text on a seeded
sample of items.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.core.errors import TideBenchError
from tide_bench.core.hashing import sha256_json
from tide_bench.core.jsonio import iter_jsonl, read_json
from tide_bench.core.resources import resource_dir
from tide_bench.generation.run_dir import MANIFEST_NAME, read_generations
from tide_bench.judging.cache import judgment_key
from tide_bench.judging.rubric import load_rubric
from tide_bench.judging.summary import counted_values
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission import JUDGE, META, RUN, Submission, read_meta
from tide_bench.metrics.reference import ReferenceScorer

SAFE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
SPOT_TOLERANCE = {"rouge_l": 1e-6, "within_reply_distinct_1": 1e-6, "within_reply_distinct_2": 1e-6, "length_tokens": 1e-6, "cosine_sim": 0.02}


@dataclass
class CheckResult:
    id: str
    folder: Path
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    submission: Submission | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def item_ids_hash(ids: list[str]) -> str:
    return sha256_json(sorted(ids))


def _schema() -> dict[str, Any]:
    return json.loads((resource_dir("leaderboard") / "schema" / "submission.schema.json").read_text(encoding="utf-8"))


def _schema_errors(meta: Any) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    out = []
    for err in sorted(validator.iter_errors(meta), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        out.append(f"{META}: field '{where}': {err.message}")
    return out


def _inside(root: Path, rel: Any) -> Path | None:
    if not isinstance(rel, str) or not rel or Path(rel).is_absolute() or ".." in Path(rel).parts:
        return None
    path = (root / rel).resolve()
    return path if path.is_relative_to(root.resolve()) else None


def _folder_checks(folder: Path, board: BoardConfig, result: CheckResult) -> None:
    if not SAFE_ID.match(folder.name):
        result.errors.append(f"folder name {folder.name!r} is not a safe id: use lowercase letters, digits, '.', '_', '-' (max 64)")
    total = 0
    for path in folder.rglob("*"):
        if path.is_symlink():
            result.errors.append(f"{path.relative_to(folder)} is a symbolic link: submit regular files only")
        elif path.is_file():
            total += path.stat().st_size
    if total > board.max_submission_mb * 1e6:
        result.errors.append(f"submission is {total / 1e6:.1f} MB, over the {board.max_submission_mb:g} MB limit: remove extra files")


def _judgments(sub: Submission, board: BoardConfig, result: CheckResult) -> None:
    path = sub.root / JUDGE / "judgments.jsonl"
    if not path.is_file():
        if board.require_judgments:
            result.errors.append(f"{JUDGE}/judgments.jsonl is missing: run `tide-bench judge` on the run and submit with its judge directory")
        return
    rubric = load_rubric()
    records: dict[str, dict[str, Any]] = {}
    versions: set[str] = set()
    for line, rec in iter_jsonl(path):
        item = rec.get("item_id") if isinstance(rec, dict) else None
        if not isinstance(item, str) or rec.get("status") not in ("scored", "unscored") or not isinstance(rec.get("judge"), dict):
            raise TideBenchError("not a tide-bench judgment (needs item_id, status, judge)", path=path, line=line)
        if item in records:
            raise TideBenchError(f"item {item} judged twice", path=path, line=line)
        if rec["status"] == "scored":
            scores = rec.get("scores") or {}
            if set(scores) != set(rubric.factor_keys) or any(not isinstance(v, int) or isinstance(v, bool) or not rubric.scale_min <= v <= rubric.scale_max for v in scores.values()):
                raise TideBenchError(f"scores {scores} are not three integers in {rubric.scale_min}..{rubric.scale_max}", path=path, line=line, field="scores")
            if not isinstance(rec.get("safety"), dict) or not isinstance(rec["safety"].get("flagged"), bool):
                raise TideBenchError("scored judgment without a safety flag", path=path, line=line, field="safety")
        elif not rec.get("unscored_kind"):
            raise TideBenchError("unscored judgment without its reason (unscored_kind)", path=path, line=line)
        versions.add(str(rec["judge"].get("version")))
        records[item] = rec
    gens = {g.item_id: g for g in sub.generations}
    missing, extra = sorted(set(gens) - set(records)), sorted(set(records) - set(gens))
    if missing:
        result.errors.append(f"{len(missing)} item(s) have a reply but no judgment (scored or unscored), e.g. {missing[:3]}: judge every item")
    if extra:
        result.errors.append(f"{len(extra)} judgment(s) for items that are not in the run, e.g. {extra[:3]}: submit the run that was judged")
    if len(versions) > 1:
        result.errors.append(f"judgments from {len(versions)} judge configurations ({', '.join(sorted(versions))}): judge the whole run with one configuration")
    version = next(iter(versions), None)
    if board.judge_version and version and version != board.judge_version:
        result.errors.append(f"judged with configuration {version}, but this leaderboard uses {board.judge_version}: mixing judges is refused; re-judge with the board's judge")
    tampered = [item for item, rec in records.items() if item in gens and rec.get("key") != judgment_key(str(rec["judge"].get("version")), gens[item])]
    if tampered:
        result.errors.append(f"{len(tampered)} judgment(s) do not match the submitted reply or context (e.g. {tampered[:3]}): the reply changed after judging; re-judge")
    sub.judgments = records
    sub.judge = next(iter(records.values()))["judge"] if records else None
    summary_path = sub.root / JUDGE / "judge_summary.json"
    if summary_path.is_file() and records:
        summary = read_json(summary_path)
        scored = [r for r in records.values() if r["status"] == "scored"]
        counted = counted_values(list(records.values()), rubric.factor_keys, rubric.scale_min)[:, -1]
        recomputed = float(np.nanmean(counted)) if np.isfinite(counted).any() else None
        claimed = (summary.get("empathy") or {}).get("mean")
        if summary.get("n_scored") != len(scored) or (recomputed is not None and (claimed is None or abs(claimed - recomputed) > 1e-6)):
            result.errors.append(f"{JUDGE}/judge_summary.json does not match the judgments (claims n_scored={summary.get('n_scored')}, empathy={claimed}; recomputed {len(scored)}, {recomputed}): submit the files `tide-bench judge` wrote, unedited")


def spot_check(sub: Submission, k: int, result: CheckResult, seed: int = 0) -> None:
    """Recompute the stored per-item reference metrics from the text on ``k`` seeded items."""
    gens = sorted(sub.generations, key=lambda g: g.item_id)
    chosen = random.Random(seed).sample(gens, min(k, len(gens)))
    # fp32: the leaderboard's numbers must not depend on the maintainer's CPU (bf16 moves cosines by up to 0.003)
    scorer = ReferenceScorer(((sub.manifest.get("reference_metrics") or {}).get("method") or {}).get("embedding_model"), precision="fp32")
    fresh = scorer.score([g.reply for g in chosen], [g.reference_reply for g in chosen])
    bad = []
    for gen, row in zip(chosen, fresh, strict=True):
        for metric, tolerance in SPOT_TOLERANCE.items():
            stored, value = gen.metrics.get(metric), row[metric]
            if stored is None or value != value:  # not stored, or not computable here (NaN)
                continue
            if abs(stored - value) > tolerance:
                bad.append(f"{gen.item_id} {metric} stored {stored:.4f}, recomputed {value:.4f}")
    if bad:
        result.errors.append(f"stored reference metrics do not match the replies ({len(bad)} mismatches, e.g. {bad[:2]}): submit the samples `tide-bench eval` wrote, unedited")


def validate_folder(folder: str | Path, board: BoardConfig, *, spot_checks: bool = True) -> CheckResult:
    folder = Path(folder)
    result = CheckResult(folder.name, folder)
    try:
        _folder_checks(folder, board, result)
        meta = read_meta(folder / META)
        result.errors += _schema_errors(meta)
        if isinstance(meta, dict) and meta.get("id") != folder.name:
            result.errors.append(f"{META}: id {meta.get('id')!r} differs from the folder name {folder.name!r}: make them equal")
        if isinstance(meta, dict) and meta.get("demo") and not board.demo:
            result.errors.append("demo entries (synthetic sample) cannot join this leaderboard")
        run_root = folder / RUN
        manifest = read_json(run_root / MANIFEST_NAME)
        data = manifest.get("data") or {}
        if data.get("split") != board.split:
            result.errors.append(f"the run used split {data.get('split')!r}; this leaderboard uses {board.split!r}: re-run with --split {board.split}")
        if board.split_sha256 and data.get("split_sha256") != board.split_sha256:
            result.errors.append(f"dataset hash {data.get('split_sha256')} is not the leaderboard's {board.split_sha256}: evaluate on the pinned TIDE snapshot")
        if (manifest.get("generation") or {}).get("limit") is not None:
            result.errors.append("the run used --limit: submit a run over the whole split")
        samples = (manifest.get("files") or {}).get("samples") or {}
        unsafe = [rel for rel in samples.values() if _inside(run_root, rel) is None]
        if unsafe:
            result.errors.append(f"unsafe paths in run.json files.samples: {unsafe[:3]} (absolute or outside the folder)")
            return result
        generations = read_generations(run_root, samples)
        ids = [g.item_id for g in generations]
        if data.get("n_items") is not None and len(ids) != data.get("n_items"):
            result.errors.append(f"{len(ids)} replies for a split of {data.get('n_items')} items: every item needs a reply")
        if board.n_items is not None and len(ids) != board.n_items:
            result.errors.append(f"{len(ids)} items; the leaderboard's split has {board.n_items}")
        if board.item_ids_sha256 and item_ids_hash(ids) != board.item_ids_sha256:
            result.errors.append("the set of item ids differs from the leaderboard's split: evaluate on the pinned TIDE snapshot")
        if {g.split_sha256 for g in generations} - {data.get("split_sha256")}:
            result.errors.append("samples carry a different split hash than run.json: the samples and the manifest come from different runs")
        sub = Submission(folder.name, folder, meta if isinstance(meta, dict) else {}, manifest, generations)
        _judgments(sub, board, result)
        if spot_checks and generations and board.spot_check_items:
            spot_check(sub, board.spot_check_items, result)
        if not result.errors:
            result.submission = sub
    except TideBenchError as exc:
        result.errors.append(str(exc))
    return result


def validate_many(folder: str | Path, board: BoardConfig, *, spot_checks: bool = True) -> list[CheckResult]:
    """Validate one submission folder, or every submission inside a submissions folder."""
    folder = Path(folder)
    if (folder / META).exists():
        return [validate_folder(folder, board, spot_checks=spot_checks)]
    if not folder.is_dir():
        raise TideBenchError(f"not a folder: {folder}")
    return [validate_folder(p, board, spot_checks=spot_checks) for p in sorted(folder.iterdir()) if p.is_dir() and not p.name.startswith(".")]
