"""Rater-group analyses: do groups of raters rate differently, and does the judge agree
with some groups more than others?

For every rater-table column with 2-10 groups (free-text columns are skipped), and every
dimension: the mean rating per group with a bootstrap CI; a Mann-Whitney U test (two groups,
effect size: rank-biserial correlation, positive when the first group rates higher) or a
Kruskal-Wallis test (three or more; effect size: epsilon squared); p-values Holm-corrected
across every test of the audit. Tests treat individual ratings as observations, as the TIDE
paper's analyses do; ratings by the same rater are not independent, so read small p-values
from few raters with care (the report gives the number of raters per group).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from tide_bench.agreement.pairwise import qwk, spearman
from tide_bench.agreement.ratings import RatingsTable
from tide_bench.core.stats import mean_ci

MAX_GROUPS = 10


def holm(pvalues: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order."""
    m = len(pvalues)
    order = np.argsort(pvalues)
    adjusted = np.empty(m)
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[idx]))
        adjusted[idx] = running
    return adjusted.tolist()


def _test(samples: dict[str, list[float]]) -> dict[str, Any]:
    groups = {g: v for g, v in samples.items() if v}
    if len(groups) < 2:
        return {"name": None, "note": "fewer than two groups with ratings"}
    values = list(groups.values())
    if np.unique(np.concatenate(values)).size < 2:
        return {"name": None, "note": "every rating is identical: no test possible"}
    if len(groups) == 2:
        (g1, x), (g2, y) = groups.items()
        res = stats.mannwhitneyu(x, y, alternative="two-sided")
        rbc = 2.0 * float(res.statistic) / (len(x) * len(y)) - 1.0
        return {"name": "mann-whitney-u", "statistic": float(res.statistic), "p": float(res.pvalue),
                "effect_size": {"name": "rank-biserial", "value": rbc, "direction": f"positive: {g1} rates higher than {g2}"}}
    res = stats.kruskal(*values)
    n = sum(len(v) for v in values)
    return {"name": "kruskal-wallis", "statistic": float(res.statistic), "p": float(res.pvalue),
            "effect_size": {"name": "epsilon-squared", "value": float(res.statistic) / (n - 1)}}


def analyze_groups(table: RatingsTable, rater_info: dict[str, dict[str, str]], judges: list[str]) -> dict[str, Any]:
    columns = sorted({c for info in rater_info.values() for c in info})
    result: dict[str, Any] = {"method": __doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else "", "columns": {}, "skipped_columns": {}}
    tests: list[dict[str, Any]] = []
    for column in columns:
        membership: dict[str, list[str]] = {}
        for rater, info in rater_info.items():
            membership.setdefault(info.get(column, "(not given)"), []).append(rater)
        if not 2 <= len(membership) <= MAX_GROUPS or len(membership) == len(rater_info):
            result["skipped_columns"][column] = f"{len(membership)} distinct values (needs 2..{MAX_GROUPS}, fewer than raters)"
            continue
        per_dim: dict[str, Any] = {}
        for dimension in table.dimensions():
            humans = table.human_raters(dimension)
            scores: dict[str, list[float]] = {g: [] for g in membership}
            for _item, rater, dim, score in table.rows:
                if dim == dimension and rater in humans:
                    for group, members in membership.items():
                        if rater in members:
                            scores[group].append(score)
            block: dict[str, Any] = {
                "groups": {
                    g: {"n_raters": len([r for r in membership[g] if r in humans]), "n_ratings": len(v), **{k: mean_ci(v).as_dict()[k] for k in ("mean", "ci_low", "ci_high")},
                        "median": float(np.median(v)) if v else None}
                    for g, v in sorted(scores.items())
                },
                "test": _test(dict(sorted(scores.items()))),
                "judge_agreement": {},
            }
            if block["test"].get("p") is not None:
                tests.append(block["test"])
            for judge in judges:
                per_group = {}
                judge_items, jr = table.matrix(dimension, [judge])
                for group, members in sorted(membership.items()):
                    group_humans = [r for r in members if r in humans]
                    if not group_humans:
                        continue
                    _, data = table.matrix(dimension, group_humans, judge_items)
                    with np.errstate(all="ignore"):
                        consensus = np.nanmedian(np.where(np.isnan(data).all(axis=0), 0, data), axis=0) if data.size else np.array([])
                    mask = ~np.isnan(data).all(axis=0) & ~np.isnan(jr[0])
                    a, b = jr[0][mask], consensus[mask]
                    rho, p, ci, note = spearman(a, b)
                    per_group[group] = {"n": int(mask.sum()), "kappa_quadratic": qwk(a, b) if mask.sum() else None, "spearman": rho, "spearman_ci": ci, "note": note}
                block["judge_agreement"][judge] = per_group
            per_dim[dimension] = block
        result["columns"][column] = per_dim
    adjusted = holm([t["p"] for t in tests])
    for t, p in zip(tests, adjusted, strict=True):
        t["p_holm"] = p
    result["n_tests"] = len(tests)
    return result
