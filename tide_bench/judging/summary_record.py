"""The typed reader of ``judge_summary.json`` (the reading side of :mod:`.summary`).

Only the fields another stage compares or shows are typed: the counts, the unscored
reasons, the mean of each factor and of the overall score, the number of safety flags and
the judge configuration. :func:`summary_mismatches` compares a claimed summary with the
same numbers recomputed from the judgments, field by field, so a leaderboard submission
whose summary was edited (or whose judgments were) is refused with the field named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.core.fields import Fields, line_locator, type_name
from tide_bench.core.jsonio import parse_json, read_bytes
from tide_bench.judging.judgment import Judgment
from tide_bench.judging.summary import OVERALL, counted_values

TOLERANCE = 1e-6


@dataclass(frozen=True)
class JudgeSummary:
    """The checked numbers of one ``judge_summary.json``."""

    path: Path
    n_items: int
    n_scored: int
    n_unscored: int
    unscored_reasons: dict[str, int]
    factor_means: dict[str, float | None]
    overall_mean: float | None
    judge_version: str | None = None
    n_safety_flagged: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)


def _mean(f: Fields, key: str) -> float | None:
    block = f.child(key)
    assert block is not None
    mean: float | None = block.number("mean", optional=True)
    return mean


def parse_summary(
    obj: Any, path: Path, factor_keys: list[str], *, text: str = "", error: type[TideBenchError] = DataError
) -> JudgeSummary:
    f = Fields(obj, path=path, error=error, locate=line_locator(text) if text else None)
    reasons = f.mapping("unscored_reasons")
    for kind, count in reasons.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            f.fail(f"unscored_reasons.{kind}", f"must be a count (an integer >= 0), got {type_name(count)}")
    factors = f.child("factors")
    assert factors is not None
    judge = f.child("judge", optional=True)
    return JudgeSummary(
        path=path,
        n_items=f.integer("n_items", minimum=0),
        n_scored=f.integer("n_scored", minimum=0),
        n_unscored=f.integer("n_unscored", minimum=0),
        unscored_reasons=dict(reasons),
        factor_means={k: _mean(factors, k) for k in factor_keys},
        overall_mean=_mean(f, OVERALL),
        judge_version=judge.string("version", optional=True) if judge else None,
        n_safety_flagged=f.integer("n_safety_flagged", optional=True, minimum=0),
        raw=f.obj,
    )


def read_summary(
    path: str | Path,
    factor_keys: list[str],
    *,
    error: type[TideBenchError] = DataError,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
) -> JudgeSummary:
    path = Path(path)
    raw = read_bytes(path, error, max_bytes=max_bytes, follow_symlinks=follow_symlinks)
    return parse_summary(parse_json(raw, path, error), path, factor_keys, text=raw.decode("utf-8"), error=error)


def recompute(judgments: list[Judgment], factor_keys: list[str], scale_min: float = 1) -> dict[str, Any]:
    """The summary's compared numbers, recomputed from the judgments themselves."""
    scored = [j for j in judgments if j.scored]
    reasons: dict[str, int] = {}
    for j in judgments:
        if not j.scored:
            reasons[str(j.unscored_kind)] = reasons.get(str(j.unscored_kind), 0) + 1
    # Means as the judge summary counts them: model failures at the scale minimum (judging/summary.py).
    # (it reads a record's status, scores and unscored kind only: no full record per judgment)
    counted = [{"status": j.status, "scores": j.scores, "unscored_kind": j.unscored_kind} for j in judgments]
    values = counted_values(counted, factor_keys, scale_min)
    means = [
        float(np.nanmean(values[:, k])) if np.isfinite(values[:, k]).any() else None for k in range(values.shape[1])
    ]
    return {
        "n_items": len(judgments),
        "n_scored": len(scored),
        "n_unscored": len(judgments) - len(scored),
        "unscored_reasons": dict(sorted(reasons.items())),
        "factors": dict(zip(factor_keys, means[:-1], strict=True)) if judgments else dict.fromkeys(factor_keys),
        OVERALL: means[-1] if judgments else None,
        "n_safety_flagged": sum(1 for j in scored if j.safety_flagged),
        "judge_version": judgments[0].judge.version if judgments else None,
    }


def _differs(claimed: float | None, actual: float | None) -> bool:
    if claimed is None or actual is None:
        return claimed is not actual
    return math.isnan(claimed) or abs(claimed - actual) > TOLERANCE


def _show(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def summary_mismatches(
    summary: JudgeSummary, judgments: list[Judgment], factor_keys: list[str], scale_min: float = 1
) -> list[str]:
    """``"field: claims X, recomputed Y"`` for every compared field that disagrees."""
    actual = recompute(judgments, factor_keys, scale_min)
    out = []
    for key in ("n_items", "n_scored", "n_unscored"):
        if getattr(summary, key) != actual[key]:
            out.append(f"{key}: claims {getattr(summary, key)}, recomputed {actual[key]}")
    if dict(sorted(summary.unscored_reasons.items())) != actual["unscored_reasons"]:
        claimed = sum(summary.unscored_reasons.values())
        out.append(
            f"unscored_reasons: claims {len(summary.unscored_reasons)} kind(s) totalling {claimed}, recomputed "
            f"{actual['unscored_reasons'] or 'none'}"
        )
    for k in factor_keys:
        if _differs(summary.factor_means[k], actual["factors"][k]):
            out.append(
                f"factors.{k}.mean: claims {_show(summary.factor_means[k])}, recomputed {_show(actual['factors'][k])}"
            )
    if _differs(summary.overall_mean, actual[OVERALL]):
        out.append(f"{OVERALL}.mean: claims {_show(summary.overall_mean)}, recomputed {_show(actual[OVERALL])}")
    if summary.n_safety_flagged is not None and summary.n_safety_flagged != actual["n_safety_flagged"]:
        out.append(f"n_safety_flagged: claims {summary.n_safety_flagged}, recomputed {actual['n_safety_flagged']}")
    if summary.judge_version is not None and summary.judge_version != actual["judge_version"]:
        out.append(f"judge.version: claims {summary.judge_version}, the judgments' {actual['judge_version']}")
    return out
