"""``tide-bench leaderboard build``: validate, recompute, rank, render. One bad submission
never stops the build of the others (it is listed as refused), unless ``strict``."""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import TideBenchError
from tide_bench.core.jsonio import atomic_write_text, read_json
from tide_bench.core.provenance import utc_now
from tide_bench.judging.rubric import load_rubric
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.exports import write_exports
from tide_bench.leaderboard.scores import RESAMPLES, SEED, admission_errors, rank_entries, score_entry
from tide_bench.leaderboard.site import render_index, render_model_page
from tide_bench.leaderboard.validate import CheckResult, validate_many


@dataclass
class BuildResult:
    out: Path
    accepted: list[str] = field(default_factory=list)
    refused: dict[str, list[str]] = field(default_factory=dict)
    board: dict[str, Any] = field(default_factory=dict)


def _consistency(checks: list[CheckResult], board: BoardConfig) -> None:
    """Refuse entries that disagree with the majority on split hash or judge configuration
    when the board does not pin them (judges and datasets are never mixed)."""
    ok = [c for c in checks if c.ok and c.submission]
    if not board.split_sha256 and ok:
        majority, _ = Counter(c.submission.manifest["data"].get("split_sha256") for c in ok).most_common(1)[0]  # type: ignore[union-attr]
        for c in ok:
            if c.submission.manifest["data"].get("split_sha256") != majority:  # type: ignore[union-attr]
                c.errors.append(f"evaluated on dataset {c.submission.manifest['data'].get('split_sha256')}, the board's entries on {majority}: one dataset per board")  # type: ignore[union-attr]
    judged = [c for c in ok if c.ok and c.submission.judge]  # type: ignore[union-attr]
    if not board.judge_version and judged:
        majority, _ = Counter(c.submission.judge["version"] for c in judged).most_common(1)[0]  # type: ignore[union-attr,index]
        for c in judged:
            if c.submission.judge["version"] != majority:  # type: ignore[union-attr,index]
                c.errors.append(f"judged with configuration {c.submission.judge['version']}, the board's entries with {majority}: mixing judges is refused")  # type: ignore[union-attr,index]
    for c in checks:
        if c.errors:
            c.submission = None


def _audit_summary(path: Path | None) -> dict[str, Any] | None:
    if not path:
        return None
    audit = read_json(path)
    out = {}
    for dim, d in (audit.get("dimensions") or {}).items():
        judge = next(iter(d.get("judges", {}).values()), {})
        out[dim] = {
            "human_alpha": d.get("alpha", {}).get("interval"),
            "alpha_with_judge": (judge.get("alpha_with_judge") or {}).get("interval"),
            "verdict": judge.get("verdict"),
        }
    return out


def build_site(
    submissions: str | Path,
    out: str | Path,
    board: BoardConfig,
    *,
    audit: str | Path | None = None,
    strict: bool = False,
    spot_checks: bool = False,
) -> BuildResult:
    checks = validate_many(submissions, board, spot_checks=spot_checks)
    _consistency(checks, board)
    refused = {c.id: c.errors for c in checks if not c.ok}
    if strict and refused:
        first = next(iter(refused))
        raise TideBenchError(f"{len(refused)} submission(s) refused (--strict); {first}: {'; '.join(refused[first])}")
    rubric = load_rubric()
    entries = [(c, score_entry(c.submission, rubric=rubric)) for c in checks if c.ok and c.submission]
    for check, entry in entries:  # unscored-for-infrastructure above the board's limit: refused
        check.errors += admission_errors(entry.row, max_infrastructure_unscored=board.max_infrastructure_unscored)
    refused |= {c.id: c.errors for c, _ in entries if c.errors}
    if strict and refused:
        first = next(iter(refused))
        raise TideBenchError(f"{len(refused)} submission(s) refused (--strict); {first}: {'; '.join(refused[first])}")
    accepted = [c.submission for c, _ in entries if not c.errors and c.submission]
    kept = [e for c, e in entries if not c.errors]
    ranking = rank_entries(kept, min_scored_items=board.min_scored_items, correction=board.rank_correction)
    rows = [e.row for e in kept]
    judges = {r["judge"]["version"]: r["judge"] for r in rows if r["judge"]}
    data = next((r["data"] for r in rows if r.get("data")), {}) or {}
    result_board = {
        "schema_version": 1,
        "name": board.name,
        "demo": board.demo or any(r["demo"] for r in rows),
        "built_at": utc_now(),
        "split": board.split,
        "split_sha256": board.split_sha256 or data.get("split_sha256"),
        **ranking,
        "unscored_rule": "model-attributable unscored items (empty reply, refusal, content filter) count at the scale "
                         f"minimum; entries with more than {100 * board.max_infrastructure_unscored:g}% unscored for "
                         "infrastructure reasons are refused",
        "intervals": f"95% percentile bootstrap over personas, {RESAMPLES} resamples, seed {SEED}, the same resamples for "
                     "every entry; rates: Wilson on the design-adjusted n",
        "judge": next(iter(judges.values()), None),
        "audit": _audit_summary(Path(audit)) if audit else None,
        "rows": rows,
        "refused": refused,
    }
    out = Path(out)
    staging = out.with_name(out.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "models").mkdir(parents=True)
    atomic_write_text(staging / "index.html", render_index(result_board))
    by_id = {s.id: s for s in accepted}
    for row in rows:
        atomic_write_text(staging / "models" / f"{row['id']}.html", render_model_page(row, by_id[row["id"]], result_board))
    write_exports(staging, result_board)
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    return BuildResult(out, [r["id"] for r in rows], refused, result_board)
