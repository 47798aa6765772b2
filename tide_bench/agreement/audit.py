"""``tide-bench audit``: judge-human agreement, per dimension, with confidence intervals.

For each dimension: Krippendorff's alpha among the human raters (ordinal and interval,
bootstrap CI over items); every human pair (weighted kappa, Spearman, exact agreement, MAE);
and for each judge: agreement with the human consensus (median of the humans) and with each
human, alpha when the judge joins the human pool, and the ratio of judge-human agreement to
the human-human ceiling, leave-one-rater-out:

    for each human h: ceiling_h = QWK(h, median of the other humans)
                      judge_h   = QWK(judge, median of the other humans)   (same items)
    ratio = mean_h judge_h / mean_h ceiling_h

so the judge is compared with the consensus exactly as each person is. All CIs share one
seeded bootstrap over items per dimension.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.agreement.alpha import LEVELS, alpha_with_ci
from tide_bench.agreement.groups import analyze_groups
from tide_bench.agreement.pairwise import pair_metrics, qwk_bootstrap
from tide_bench.agreement.ratings import RatingsTable, load_judgments, load_raters, load_ratings
from tide_bench.core.errors import DataError
from tide_bench.core.hashing import sha256_file
from tide_bench.core.jsonio import atomic_write_text, write_json
from tide_bench.core.provenance import package_versions, utc_now
from tide_bench.core.stats import bootstrap_weights, percentile_ci

SCHEMA_VERSION = 1


@dataclass
class AuditOptions:
    scale: tuple[float, float] | None = (1, 5)
    mapping: dict[str, str] = field(default_factory=dict)
    resamples: int = 1000
    seed: int = 20250521
    plot: bool = True


def _ci_block(point: float | None, boot: np.ndarray) -> dict[str, Any]:
    low, high = percentile_ci(boot)
    return {"value": point, "ci_low": low, "ci_high": high}


def _nanmedian_rows(data: np.ndarray) -> np.ndarray:
    out = np.full(data.shape[1], np.nan)
    rated = ~np.isnan(data).all(axis=0)
    if rated.any():
        out[rated] = np.nanmedian(data[:, rated], axis=0)
    return out


def leave_one_out(humans: np.ndarray, judge: np.ndarray, weights: np.ndarray) -> dict[str, Any]:
    """Judge vs human-human ceiling, each against the median of the *other* humans."""
    per_rater, human_boot, judge_boot = [], [], []
    for i in range(humans.shape[0]):
        others = np.delete(humans, i, axis=0)
        consensus = _nanmedian_rows(others)
        mask = ~np.isnan(humans[i]) & ~np.isnan(consensus) & ~np.isnan(judge)
        if mask.sum() < 3:
            continue
        h, j, c = np.nan_to_num(humans[i]), np.nan_to_num(judge), np.nan_to_num(consensus)
        point_h = qwk_bootstrap(h, c, np.ones((1, len(h))), mask)[0]
        point_j = qwk_bootstrap(j, c, np.ones((1, len(j))), mask)[0]
        per_rater.append({"left_out": i, "n": int(mask.sum()), "human_vs_rest": float(point_h), "judge_vs_rest": float(point_j)})
        human_boot.append(qwk_bootstrap(h, c, weights, mask))
        judge_boot.append(qwk_bootstrap(j, c, weights, mask))
    if not per_rater:
        return {"note": "needs at least two human raters sharing three or more items with the judge", "ratio": {"value": None, "ci_low": None, "ci_high": None}}
    with np.errstate(all="ignore"):
        hb, jb = np.nanmean(np.vstack(human_boot), axis=0), np.nanmean(np.vstack(judge_boot), axis=0)
        ratio_boot = jb / hb
    ceiling = float(np.nanmean([r["human_vs_rest"] for r in per_rater]))
    judge_mean = float(np.nanmean([r["judge_vs_rest"] for r in per_rater]))
    ratio = judge_mean / ceiling if ceiling and np.isfinite(ceiling) and ceiling > 0 else None
    return {
        "metric": "quadratic-weighted kappa against the median of the other humans",
        "human_ceiling": _ci_block(ceiling, hb),
        "judge": _ci_block(judge_mean, jb),
        "ratio": _ci_block(ratio, ratio_boot) if ratio is not None else {"value": None, "ci_low": None, "ci_high": None, "note": "human ceiling is not positive"},
        "per_rater": per_rater,
    }


def _judge_block(table: RatingsTable, judge: str, dimension: str, items: list[str], humans: list[str], data_h: np.ndarray,
                 domain: list[float], weights: np.ndarray, scale: list[float]) -> dict[str, Any]:
    _, jm = table.matrix(dimension, [judge], items)
    judge_row = jm[0]
    consensus = _nanmedian_rows(data_h)
    vs_consensus = pair_metrics(judge_row, consensus, scale)
    both = ~np.isnan(judge_row) & ~np.isnan(consensus)
    if both.sum() >= 3:
        boot = qwk_bootstrap(np.nan_to_num(judge_row), np.nan_to_num(consensus), weights, both)
        vs_consensus["kappa_quadratic_ci"] = list(percentile_ci(boot))
    joined = np.vstack([data_h, judge_row[None, :]])
    info = table.judges.get(judge, {})
    return {
        "n_items_rated": int((~np.isnan(judge_row)).sum()),
        "n_unscored": info.get("n_unscored", 0),
        "unscored_reasons": info.get("unscored_reasons", {}),
        "vs_consensus": vs_consensus,
        "vs_humans": [{"human": h, **pair_metrics(judge_row, data_h[i], scale)} for i, h in enumerate(humans)],
        "alpha_with_judge": {level: alpha_with_ci(joined, level, domain, weights=weights) for level in LEVELS},
        "leave_one_out": leave_one_out(data_h, judge_row, weights) if len(humans) >= 2 else {"note": "needs at least two human raters", "ratio": {"value": None, "ci_low": None, "ci_high": None}},
    }


def audit_dimension(table: RatingsTable, dimension: str, domain: list[float], options: AuditOptions) -> dict[str, Any]:
    humans = table.human_raters(dimension)
    judges = [r for r in table.raters(dimension) if r in table.judges]
    items, data_h = table.matrix(dimension, humans)
    weights = bootstrap_weights(len(items), options.resamples, options.seed) if items else np.zeros((options.resamples, 0))
    scale = list(domain)
    notes = []
    if len(humans) < 2:
        notes.append("fewer than two human raters: no human-human pairs or alpha")
    block: dict[str, Any] = {
        "n_items": len(items),
        "raters": humans,
        "judges": {},
        "n_ratings": int((~np.isnan(data_h)).sum()),
        "alpha": {level: alpha_with_ci(data_h, level, domain, weights=weights) for level in LEVELS} if len(humans) >= 2 else {level: {"value": None, "ci_low": None, "ci_high": None, "note": "fewer than two human raters"} for level in LEVELS},
        "pairs": [{"rater_a": humans[a], "rater_b": humans[b], **pair_metrics(data_h[a], data_h[b], scale)} for a, b in combinations(range(len(humans)), 2)],
        "notes": notes,
    }
    for judge in judges:
        block["judges"][judge] = _judge_block(table, judge, dimension, items, humans, data_h, domain, weights, scale)
    return block


def verdict(dim: dict[str, Any], judge: str) -> str:
    """Can this judge replace a human rater on this dimension? (rule documented in docs/agreement.md)"""
    human_alpha = dim["alpha"]["interval"]["value"]
    ratio = dim["judges"][judge]["leave_one_out"]["ratio"]
    if human_alpha is None or human_alpha < 0.667:
        return "undecided: the human raters themselves agree too little (interval alpha < 0.667) to validate any stand-in"
    if ratio["value"] is None:
        return "undecided: not enough overlap between the judge and the human raters"
    ci = f" (ratio {ratio['value']:.2f}, 95% CI {_fmt(ratio['ci_low'])}-{_fmt(ratio['ci_high'])})"
    if ratio["ci_low"] is not None and ratio["ci_low"] >= 1.0:
        return "yes: the judge agrees with people at least as well as they agree with each other" + ci
    if ratio["value"] >= 0.9:
        return "close: within 10% of the human-human ceiling, but not shown to reach it" + ci
    return "no: the judge agrees with people less than they agree with each other" + ci


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def run_audit(
    ratings: str | Path,
    out: str | Path,
    *,
    raters: str | Path | None = None,
    judgments: list[str | Path] | tuple[str | Path, ...] = (),
    options: AuditOptions | None = None,
) -> dict[str, Any]:
    """Compute the audit and write ``agreement.json``, ``agreement.md`` and ``agreement.png``."""
    from tide_bench.agreement.report import render_markdown, render_plot

    options = options or AuditOptions()
    table = load_ratings(ratings, scale=options.scale, mapping=options.mapping)
    for path in judgments:
        load_judgments(path, table)
    if not table.rows:
        raise DataError("no ratings found", path=ratings)
    rater_info = load_raters(raters) if raters else {}
    observed = sorted({r[3] for r in table.rows})
    lo, hi = options.scale or (min(observed), max(observed))
    domain = sorted(set(np.arange(lo, hi + 1).tolist()) | set(observed)) if float(lo).is_integer() else observed
    dims = {d: audit_dimension(table, d, domain, options) for d in table.dimensions()}
    for d in dims.values():
        for judge in d["judges"]:
            d["judges"][judge]["verdict"] = verdict(d, judge)
    unknown = sorted({r[1] for r in table.rows if r[1] not in table.judges} - set(rater_info)) if rater_info else []
    result = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": utc_now(),
        "inputs": {
            "ratings": {"path": str(ratings), "sha256": sha256_file(ratings)},
            "raters": {"path": str(raters), "sha256": sha256_file(raters)} if raters else None,
            "judgments": [{"path": str(p), "sha256": sha256_file(p)} for p in judgments],
            "mapping": options.mapping,
        },
        "scale": {"min": lo, "max": hi, "domain": domain},
        "bootstrap": {"resamples": options.resamples, "seed": options.seed, "unit": "items", "interval": "percentile 95%"},
        "judges": table.judges,
        "dimensions": dims,
        "rater_groups": analyze_groups(table, rater_info, sorted(table.judges)) if rater_info else None,
        "raters_missing_from_rater_table": unknown,
        "packages": package_versions(("tide-bench", "krippendorff", "scipy", "numpy")),
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "agreement.json", result)
    atomic_write_text(out / "agreement.md", render_markdown(result))
    if options.plot:
        render_plot(result, out / "agreement.png")
    return result
