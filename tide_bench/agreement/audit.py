"""``tide-bench audit``: judge-human agreement, per dimension, with confidence intervals.

For each dimension: Krippendorff's alpha among the human raters (ordinal and interval,
bootstrap CI over items); every human pair that shares items (weighted kappa, Spearman,
exact agreement, MAE); and for each judge:

* the **verdict** answers "can this judge replace a human rater?" with the Alternative
  Annotator Test (:mod:`.alt_test`): leave-one-rater-out, margin ``epsilon``,
  Benjamini-Yekutieli across raters, pass if the winning rate is at least 0.5. Human alpha
  is context (a warning below 0.667), not a gate: empathy ratings usually sit below it;
* the **pairwise view** of Kumar et al. (2025): mean judge-human vs mean human-human
  quadratic-weighted kappa, comparable with the empathy-judging literature;
* the **leave-one-rater-out ratio**: for each human h, ``QWK(h, median of the others)`` and,
  on the same items, ``QWK(judge, median of the others)``; ratio = mean judge / mean human.
  Its interval resamples items *and* raters (two-way bootstrap), since another panel of
  raters would give another ceiling; the per-rater values are reported too;
* alpha with the judge in the pool, and the paired difference Delta-alpha (same item
  resamples) with its own CI;
* agreement with the consensus (median of the humans) and with each human.

All item CIs share one seeded bootstrap per dimension over the *personas* of the rated items
(an item id ``<run>/<persona>/<conversation>/turn<k>`` names its persona; an id of another
shape is its own unit): items of one persona, also from several runs, share a client message
and are not independent, and an item bootstrap covered alpha in only 81-88 % of simulated
studies with 10 items per persona. The intervals are expanded percentile intervals for the
number of resampled units (:func:`tide_bench.core.stats.percentile_ci`).

**Halo** is judged against people (:mod:`.halo`): the judge's discrimination between factors
against the human raters' on the same items.

The safety answer (yes/no) is audited apart, as a nominal dimension (:mod:`.safety`):
``agreement.json`` ``safety`` holds nominal alpha among people and with each judge, and the
judge's sensitivity and specificity against the human majority.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.agreement.alpha import ALPHA_FOR_CONCLUSIONS, LEVELS, alpha_replicates
from tide_bench.agreement.alt_test import DEFAULT_EPSILON, alt_test
from tide_bench.agreement.groups import analyze_groups
from tide_bench.agreement.halo import halo_comparison
from tide_bench.agreement.pairwise import pair_metrics, qwk_bootstrap
from tide_bench.agreement.ratings import SAFETY, RatingsTable, Scale, load_judgments, load_raters, load_ratings
from tide_bench.agreement.safety import audit_safety
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.hashing import sha256_file
from tide_bench.core.jsonio import atomic_write_text, write_json
from tide_bench.core.provenance import package_versions, utc_now
from tide_bench.core.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    bootstrap_weights,
    cluster_bootstrap_weights,
    cluster_codes,
    percentile_ci,
)
from tide_bench.data.schema import persona_of_item

SCHEMA_VERSION = 2
MAX_DOMAIN = 25  # distinct score values: alpha's coincidence matrices grow with its square
MIN_SHARED = 3  # items two raters must share for a kappa


@dataclass
class AuditOptions:
    scale: tuple[float, float] | None = (1, 5)
    mapping: dict[str, str] = field(default_factory=dict)
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    plot: bool = True
    epsilon: float = DEFAULT_EPSILON
    mixed_model: bool = False


def _nanmedian_rows(data: np.ndarray) -> np.ndarray:
    out = np.full(data.shape[1], np.nan)
    rated = ~np.isnan(data).all(axis=0)
    if rated.any():
        out[rated] = np.nanmedian(data[:, rated], axis=0)
    return out


def _qwk_replicates(a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray] | None:
    """QWK of two rows on their shared items (point, item-bootstrap replicates); None if too few."""
    both = ~np.isnan(a) & ~np.isnan(b)
    if both.sum() < MIN_SHARED:
        return None
    x, y = np.nan_to_num(a), np.nan_to_num(b)
    return float(qwk_bootstrap(x, y, np.ones((1, len(x))), both)[0]), qwk_bootstrap(x, y, weights, both)


def leave_one_out(
    humans: np.ndarray, judge: np.ndarray, weights: np.ndarray, rater_weights: np.ndarray | None = None
) -> dict[str, Any]:
    """Judge vs human-human ceiling, each against the median of the *other* humans.

    The interval is two-way: each resample draws items (``weights``) and raters
    (``rater_weights``, resamples x raters) and averages the drawn raters' values.
    """
    per_rater, human_boot, judge_boot = [], [], []
    for i in range(humans.shape[0]):
        consensus = _nanmedian_rows(np.delete(humans, i, axis=0))
        mask = ~np.isnan(humans[i]) & ~np.isnan(consensus) & ~np.isnan(judge)
        if mask.sum() < MIN_SHARED:
            continue
        h, j, c = np.nan_to_num(humans[i]), np.nan_to_num(judge), np.nan_to_num(consensus)
        point_h = qwk_bootstrap(h, c, np.ones((1, len(h))), mask)[0]
        point_j = qwk_bootstrap(j, c, np.ones((1, len(j))), mask)[0]
        per_rater.append(
            {"left_out": i, "n": int(mask.sum()), "human_vs_rest": float(point_h), "judge_vs_rest": float(point_j)}
        )
        human_boot.append(qwk_bootstrap(h, c, weights, mask))
        judge_boot.append(qwk_bootstrap(j, c, weights, mask))
    if not per_rater:
        note = "needs at least two human raters sharing three or more items with the judge"
        return {"note": note, "ratio": Estimate.undefined(note).as_dict(), "per_rater": []}
    hb, jb = np.vstack(human_boot).T, np.vstack(judge_boot).T  # resamples x raters
    u = rater_weights if rater_weights is not None else bootstrap_weights(len(per_rater), hb.shape[0], DEFAULT_SEED)
    usable = np.isfinite(hb) & np.isfinite(jb)
    drawn = u * usable
    with np.errstate(all="ignore"):
        human_rep = (drawn * np.nan_to_num(hb)).sum(axis=1) / drawn.sum(axis=1)
        judge_rep = (drawn * np.nan_to_num(jb)).sum(axis=1) / drawn.sum(axis=1)
        ratio_rep = judge_rep / human_rep
    ceiling = float(np.nanmean([r["human_vs_rest"] for r in per_rater]))
    judge_mean = float(np.nanmean([r["judge_vs_rest"] for r in per_rater]))
    ratio = (
        Estimate.from_replicates(judge_mean / ceiling, ratio_rep, len(per_rater))
        if np.isfinite(ceiling) and ceiling > 0
        else Estimate.undefined("the human ceiling is not positive", len(per_rater))
    )
    return {
        "metric": "quadratic-weighted kappa against the median of the other humans",
        "interval": "two-way bootstrap: items and raters resampled",
        "human_ceiling": Estimate.from_replicates(ceiling, human_rep, len(per_rater)).as_dict(),
        "judge": Estimate.from_replicates(judge_mean, judge_rep, len(per_rater)).as_dict(),
        "ratio": ratio.as_dict(),
        "per_rater": per_rater,
    }


def item_clusters(items: list[str]) -> tuple[np.ndarray, int]:
    """The persona code of each item (an id without a persona is its own unit)."""
    return cluster_codes([persona_of_item(i) for i in items])


def resampling_units(items: list[str], resamples: int, seed: int) -> tuple[np.ndarray, int]:
    """``(weights, n_units)``: the audit's bootstrap over the personas of ``items`` as weights
    on the items (resamples x items), and the number of personas."""
    codes, n_clusters = item_clusters(items)
    return cluster_bootstrap_weights(codes, n_clusters, resamples, seed), n_clusters


def pairwise_kappa(
    humans: np.ndarray, judge: np.ndarray, weights: np.ndarray, rater_weights: np.ndarray | None = None
) -> dict[str, Any]:
    """Kumar et al. (2025): mean judge-human vs mean human-human quadratic-weighted kappa.

    Their claim is about raters in general, so the intervals are two-way: each resample draws
    items (``weights``) and raters (``rater_weights``, resamples x raters; default a seeded
    bootstrap over the raters) and averages over the pairs of distinct drawn raters. With items
    alone the difference covered the pool's value in 86-87 % of simulated studies.
    """
    pair_index = [(a, b) for a, b in combinations(range(humans.shape[0]), 2)]
    human_pairs = [(a, b, r) for a, b in pair_index if (r := _qwk_replicates(humans[a], humans[b], weights))]
    judge_pairs = [(h, r) for h in range(humans.shape[0]) if (r := _qwk_replicates(judge, humans[h], weights))]
    out: dict[str, Any] = {
        "metric": "mean pairwise quadratic-weighted kappa (Kumar et al. 2025); CIs over items and raters",
        "n_human_pairs": len(human_pairs),
        "n_judge_pairs": len(judge_pairs),
    }
    if not human_pairs or not judge_pairs:
        note = "needs a human pair and a judge-human pair sharing three or more items"
        out |= {k: Estimate.undefined(note).as_dict() for k in ("judge_human", "human_human", "difference")}
        return out
    resamples = weights.shape[0]
    u = (
        rater_weights
        if rater_weights is not None
        else bootstrap_weights(humans.shape[0], resamples, DEFAULT_SEED + 1)  # raters: their own resamples
    )
    hh_boot = np.vstack([r[1] for _, _, r in human_pairs]).T  # resamples x pairs
    jh_boot = np.vstack([r[1] for _, r in judge_pairs]).T  # resamples x raters
    pair_w = np.stack([u[:, a] * u[:, b] for a, b, _ in human_pairs], axis=1)
    rater_w = np.stack([u[:, h] for h, _ in judge_pairs], axis=1)
    with np.errstate(all="ignore"):
        pair_w = pair_w * np.isfinite(hh_boot)
        rater_w = rater_w * np.isfinite(jh_boot)
        hh_rep = (pair_w * np.nan_to_num(hh_boot)).sum(axis=1) / pair_w.sum(axis=1)
        jh_rep = (rater_w * np.nan_to_num(jh_boot)).sum(axis=1) / rater_w.sum(axis=1)
    hh = float(np.mean([r[0] for _, _, r in human_pairs]))
    jh = float(np.mean([r[0] for _, r in judge_pairs]))
    out["human_human"] = Estimate.from_replicates(hh, hh_rep, len(human_pairs)).as_dict()
    out["judge_human"] = Estimate.from_replicates(jh, jh_rep, len(judge_pairs)).as_dict()
    out["difference"] = Estimate.from_replicates(jh - hh, jh_rep - hh_rep).as_dict()
    return out


def _alpha_blocks(
    data: np.ndarray,
    domain: list[float],
    weights: np.ndarray,
    n_units: int | None = None,
    clusters: np.ndarray | None = None,
) -> tuple[dict[str, Estimate], dict[str, np.ndarray]]:
    estimates, replicates = {}, {}
    for level in LEVELS:
        estimates[level], replicates[level] = alpha_replicates(
            data, level, domain, weights=weights, n_units=n_units, clusters=clusters
        )
    return estimates, replicates


def _judge_block(
    table: RatingsTable,
    judge: str,
    dimension: str,
    items: list[str],
    humans: list[str],
    data_h: np.ndarray,
    domain: list[float],
    weights: np.ndarray,
    human_alpha: tuple[dict[str, Estimate], dict[str, np.ndarray]],
    options: AuditOptions,
    n_units: int | None = None,
) -> dict[str, Any]:
    _, jm = table.matrix(dimension, [judge], items)
    judge_row = jm[0]
    vs_consensus = pair_metrics(judge_row, _nanmedian_rows(data_h), domain)
    consensus_qwk = _qwk_replicates(judge_row, _nanmedian_rows(data_h), weights)
    vs_consensus["kappa_quadratic_ci"] = (
        list(percentile_ci(consensus_qwk[1], n_units=n_units)) if consensus_qwk else None
    )
    with_judge, with_rep = _alpha_blocks(
        np.vstack([data_h, judge_row[None, :]]), domain, weights, n_units, item_clusters(items)[0]
    )
    difference = {}
    for level in LEVELS:
        before, after = human_alpha[0][level].value, with_judge[level].value
        difference[level] = (
            Estimate.from_replicates(after - before, with_rep[level] - human_alpha[1][level], n_units=n_units)
            if before is not None and after is not None
            else Estimate.undefined("alpha undefined with or without the judge")
        )
    info = table.judges[judge]
    total = info.n_scored + info.n_unscored
    enough = len(humans) >= 2
    return {
        "n_items_rated": int((~np.isnan(judge_row)).sum()),
        "n_unscored": info.n_unscored,
        "unscored_rate": info.n_unscored / total if total else None,
        "unscored_reasons": dict(sorted(info.unscored_reasons.items())),
        "alt_test": alt_test(data_h, judge_row, humans, epsilon=options.epsilon),
        "pairwise_kappa": pairwise_kappa(data_h, judge_row, weights),
        "leave_one_out": leave_one_out(data_h, judge_row, weights)
        if enough
        else {
            "note": "needs at least two human raters",
            "ratio": Estimate.undefined("needs at least two human raters").as_dict(),
            "per_rater": [],
        },
        "alpha_with_judge": {level: e.as_dict() for level, e in with_judge.items()},
        "alpha_difference": {level: e.as_dict() for level, e in difference.items()},
        "vs_consensus": vs_consensus,
        "vs_humans": [
            {"human": h, **m}
            for i, h in enumerate(humans)
            if (m := pair_metrics(judge_row, data_h[i], domain))["n"] > 0
        ],
    }


def audit_dimension(table: RatingsTable, dimension: str, domain: list[float], options: AuditOptions) -> dict[str, Any]:
    humans = table.human_raters(dimension)
    judges = [r for r in table.raters(dimension) if r in table.judges]
    items, data_h = table.matrix(dimension, humans)
    weights, n_units = resampling_units(items, options.resamples, options.seed)
    notes = []
    if len(humans) < 2:
        notes.append("fewer than two human raters: no human-human pairs or alpha")
        undefined = Estimate.undefined("fewer than two human raters")
        human_alpha = (
            {level: undefined for level in LEVELS},
            {level: np.full(options.resamples, np.nan) for level in LEVELS},
        )
    else:
        human_alpha = _alpha_blocks(data_h, domain, weights, n_units, item_clusters(items)[0])
    pairs, without_shared = [], 0
    for a, b in combinations(range(len(humans)), 2):
        metrics = pair_metrics(data_h[a], data_h[b], domain)
        if metrics["n"] == 0:
            without_shared += 1  # never written: 600 raters would make a report of empty pairs
            continue
        pairs.append({"rater_a": humans[a], "rater_b": humans[b], **metrics})
    block: dict[str, Any] = {
        "n_items": len(items),
        "n_personas": n_units,
        "raters": humans,
        "n_ratings": int((~np.isnan(data_h)).sum()),
        "alpha": {level: e.as_dict() for level, e in human_alpha[0].items()},
        "pairs": pairs,
        "n_pairs_without_shared_items": without_shared,
        "notes": notes,
        "judges": {},
    }
    for judge in judges:
        block["judges"][judge] = _judge_block(
            table, judge, dimension, items, humans, data_h, domain, weights, human_alpha, options, n_units
        )
        block["judges"][judge]["verdict"] = verdict(block, judge)
    return block


def audit_halo(table: RatingsTable, options: AuditOptions) -> dict[str, Any] | None:
    """Per judge, halo against the human raters on the judge's factors (:mod:`.halo`); None
    when fewer than two factors have human ratings."""
    factors = sorted(d for d in table.dimensions() if d != SAFETY and table.human_raters(d))
    if len(factors) < 2 or not table.judges:
        return None
    items = sorted({r.item for r in table.rows if r.dimension in factors and r.rater not in table.judges})
    weights, n_units = resampling_units(items, options.resamples, options.seed)
    out = {}
    for judge in sorted(table.judges):
        judged = [f for f in factors if judge in table.raters(f)]
        if len(judged) >= 2:
            out[judge] = halo_comparison(table, judge, judged, items, weights, n_units=n_units)
    return out or None


def verdict(dim: dict[str, Any], judge: str) -> str:
    """Can this judge replace a human rater on this dimension? The alt-test decides; human
    alpha below 0.667 adds a warning (rule documented in docs/agreement.md)."""
    alt = dim["judges"][judge]["alt_test"]
    human_alpha = dim["alpha"]["interval"]["value"]
    if alt["passed"] is None:
        return f"undecided: {alt['note']}"
    figures = (
        f" (alt-test at epsilon {alt['epsilon']:g}: winning rate {alt['winning_rate']:.2f} over "
        f"{len(alt['per_rater'])} raters, advantage probability {alt['advantage_probability']:.2f})"
    )
    warning = ""
    if human_alpha is None or human_alpha < ALPHA_FOR_CONCLUSIONS:
        shown = "undefined" if human_alpha is None else f"{human_alpha:.2f}"
        warning = (
            f"; warning: human interval alpha is {shown} (< {ALPHA_FOR_CONCLUSIONS}), "
            "people agree little on this factor"
        )
    if alt["passed"]:
        return (
            "yes: the judge represents the other raters at least as well as a held-out human does, within the margin"
            + figures
            + warning
        )
    return (
        "no: the judge is not shown to represent the other raters as well as a held-out human does" + figures + warning
    )


def _normal(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _check_inputs(
    table: RatingsTable, options: AuditOptions, judgments: list[str | Path], ratings: str | Path
) -> list[str]:
    """Refuse inputs that would mislead; return notes for the report."""
    if not any(r.rater not in table.judges for r in table.rows):
        raise DataError("no ratings found", path=ratings)
    raw = table.raw_dimensions
    unknown_sources = sorted(set(options.mapping) - raw)
    if unknown_sources:
        raise ConfigError(
            f"--map names dimension(s) {', '.join(map(repr, unknown_sources))} that the ratings do not have "
            f"(dimensions: {', '.join(sorted(raw))})"
        )
    if not judgments:
        return []
    factors = set().union(*(info.factors for info in table.judges.values())) if table.judges else set()
    bad_targets = sorted(set(options.mapping.values()) - factors)
    if factors and bad_targets:
        raise ConfigError(
            f"--map target(s) {', '.join(map(repr, bad_targets))} are not factors of the judge "
            f"(factors: {', '.join(sorted(factors))})"
        )
    human_items = table.human_items()
    for rid, info in table.judges.items():
        judged = {item for item, judge in table.judged_at if judge == rid}
        if judged and not judged & human_items:
            example = next(iter(sorted(judged)))
            raise DataError(
                f"judge {rid} rated {len(judged)} item(s), none of them in the ratings (e.g. {example!r} against "
                f"{next(iter(sorted(human_items)))!r})",
                path=info.files[0],
                hint="rate the replies with `tide-bench annotate` (item ids <run folder>/<item id>) "
                "or use the run's own item ids",
            )
    notes = []
    by_name = {_normal(f): f for f in factors}
    for dimension in sorted({r.dimension for r in table.rows if r.rater not in table.judges} - factors - {SAFETY}):
        guess = by_name.get(_normal(dimension))
        hint = (
            f"--map '{dimension}={guess}'"
            if guess
            else f"--map '{dimension}=<factor>' (factors: {', '.join(sorted(factors))})"
        )
        notes.append(
            f"human dimension {dimension!r} matches no judge factor: no judge is audited on it; if it is a factor "
            f"under another name, pass {hint}"
        )
    return notes


def _domain(table: RatingsTable, scale: Scale) -> list[float]:
    observed = sorted({r.score for r in table.rows if r.dimension != SAFETY})
    if scale.low is not None and scale.high is not None and scale.integer:
        domain = sorted(set(np.arange(scale.low, scale.high + 1).tolist()) | set(observed))
    else:  # --scale none or fractional ends: the observed values, never a range (one typo must not allocate millions)
        domain = observed
    if len(domain) > MAX_DOMAIN:
        raise DataError(
            f"{len(domain)} distinct score values: alpha's coincidence matrices need a small scale "
            f"(at most {MAX_DOMAIN} values)",
            hint="pass --scale MIN-MAX, or bin the scores first",
        )
    return domain


def run_audit(
    ratings: str | Path,
    out: str | Path,
    *,
    raters: str | Path | None = None,
    judgments: list[str | Path] | tuple[str | Path, ...] = (),
    options: AuditOptions | None = None,
) -> dict[str, Any]:
    """Compute the audit and write ``agreement.json``, ``agreement.md`` and ``agreement.svg``."""
    from tide_bench.agreement.report import FIGURE, render_figure, render_markdown

    options = options or AuditOptions()
    scale = Scale(*options.scale) if options.scale else Scale(None, None)
    table = load_ratings(ratings, scale=scale, mapping=options.mapping)
    for path in judgments:
        load_judgments(path, table, scale)
    notes = _check_inputs(table, options, list(judgments), ratings)
    rater_info = load_raters(raters) if raters else {}
    domain = _domain(table, scale)
    dims = {d: audit_dimension(table, d, domain, options) for d in table.dimensions() if table.human_raters(d)}
    unknown = (
        sorted({r.rater for r in table.rows if r.rater not in table.judges} - set(rater_info)) if rater_info else []
    )
    result = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": utc_now(),
        "inputs": {
            "ratings": {"path": str(ratings), "sha256": sha256_file(ratings)},
            "raters": {"path": str(raters), "sha256": sha256_file(raters)} if raters else None,
            "judgments": [{"path": str(p), "sha256": sha256_file(p)} for p in judgments],
            "mapping": options.mapping,
        },
        "scale": {
            "min": domain[0] if scale.low is None else scale.low,
            "max": domain[-1] if scale.high is None else scale.high,
            "domain": domain,
        },
        "bootstrap": {
            "resamples": options.resamples,
            "seed": options.seed,
            "unit": "personas of the rated items (an item id without a persona is its own unit); leave-one-out "
            "ratio and pairwise kappa: personas and raters",
            "interval": "expanded percentile 95% (Hesterberg 2015)",
        },
        "alt_test": {"epsilon": options.epsilon},
        "notes": notes,
        "judges": {rid: info.as_dict() for rid, info in table.judges.items()},
        "dimensions": dims,
        "safety": audit_safety(table, options.resamples, options.seed),
        "halo": audit_halo(table, options),
        "rater_groups": analyze_groups(
            table, rater_info, sorted(table.judges), seed=options.seed, mixed_model=options.mixed_model
        )
        if rater_info
        else None,
        "raters_missing_from_rater_table": unknown,
        "packages": package_versions(("tide-bench", "krippendorff", "scipy", "numpy")),
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "agreement.json", result)
    if options.plot:
        atomic_write_text(out / FIGURE, render_figure(result))
    atomic_write_text(out / "agreement.md", render_markdown(result, FIGURE if options.plot else None))
    return result
