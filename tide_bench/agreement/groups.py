"""Rater-group analyses: do groups of raters rate differently, and does the judge agree
with some groups more than others? The unit is the rater (see :data:`METHOD`).

Why not Mann-Whitney or Kruskal-Wallis on pooled ratings (the TIDE paper's analysis): sixty
ratings by one person are not sixty people. With plausible rater leniency and no group
difference at all, pooled tests reject at .05 in about half of all studies, and reach
p < .004 in a third of them. Permuting the group labels across raters keeps the test at its
level, and says honestly how small a p-value the design can ever give.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import numpy as np

from tide_bench.agreement.pairwise import qwk
from tide_bench.agreement.ratings import RatingsTable
from tide_bench.core.stats import DEFAULT_SEED, holm

MAX_GROUPS = 10
MAX_EXACT = 20_000  # distinct label assignments enumerated exactly; beyond, seeded Monte Carlo draws
DRAWS = 10_000
MIN_SHARED = 3

METHOD = (
    "Rater groups, one rater-table column at a time (2-10 groups; free-text columns skipped). The rater is the unit: "
    "each rating is adjusted for its item (minus the item's mean human rating, items rated by two or more people), "
    "each "
    "rater's adjusted ratings are averaged, and the group labels are permuted across raters (exactly when there are at "
    f"most {MAX_EXACT:,} distinct assignments, else {DRAWS:,} seeded random ones). The statistic is the difference of "
    "group means (two groups) or the between-group sum of squares (three or more). The smallest attainable p-value of "
    "the design is reported: 3 vs 3 raters can never reach p < 0.10 (with Monte Carlo draws, never below "
    f"1/{DRAWS + 1:,}). A group's mean is the mean of its raters' mean ratings, with a 95% t interval on those rater "
    "means (raters - 1 degrees of freedom: the rater is the unit, and a bootstrap over 3-9 raters covered 71-88%). "
    "The judge's agreement with a group is the mean quadratic-weighted kappa between the judge and "
    "each rater of the group (individual raters, not group medians, whose reliability grows with group size), compared "
    "between groups by the same permutation. All p-values are Holm-corrected across the audit's tests."
)


def _membership(rater_info: dict[str, dict[str, str]], column: str) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for rater, info in rater_info.items():
        groups.setdefault(info.get(column, "(not given)"), []).append(rater)
    return groups


def item_adjusted_rater_means(table: RatingsTable, dimension: str, raters: list[str]) -> dict[str, float]:
    """Each rater's mean of (rating - the item's mean human rating), over items rated by two
    or more of ``raters``: a rater's leniency with item difficulty taken out."""
    _, data = table.matrix(dimension, raters)
    shared = (~np.isnan(data)).sum(axis=0) >= 2
    if not shared.any():
        return {}
    residual = data[:, shared] - np.nanmean(data[:, shared], axis=0)
    out = {}
    for k, rater in enumerate(raters):
        row = residual[k][~np.isnan(residual[k])]
        if row.size:
            out[rater] = float(row.mean())
    return out


@lru_cache(maxsize=16)
def _assignments(sizes: tuple[int, ...]) -> np.ndarray:
    """Every way to split ``sum(sizes)`` units into groups of these sizes: ``(A, n)`` labels."""
    n = sum(sizes)
    if len(sizes) == 2:  # the common case, vectorised
        first = np.array(list(itertools.combinations(range(n), sizes[0])), dtype=np.intp)
        labels = np.ones((len(first), n), dtype=int)
        labels[np.arange(len(first))[:, None], first] = 0
        return labels

    def fill(labels: np.ndarray, free: list[int], g: int) -> Iterator[np.ndarray]:
        if g == len(sizes) - 1:
            labels[free] = g
            yield labels.copy()
            return
        for chosen in itertools.combinations(free, sizes[g]):
            labels[list(chosen)] = g
            yield from fill(labels, [i for i in free if i not in chosen], g + 1)

    return np.stack(list(fill(np.zeros(n, dtype=int), list(range(n)), 0)))


def _statistic(values: np.ndarray, labels: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per assignment (rows of ``labels``): |difference of means| for two groups, else the
    between-group sum of squares."""
    sums = np.stack([(labels == g) @ values for g in range(len(sizes))], axis=1)
    means = sums / sizes
    if len(sizes) == 2:
        return np.abs(means[:, 0] - means[:, 1])
    return (sizes * (means - values.mean()) ** 2).sum(axis=1)


def permutation_test(values: np.ndarray, labels: np.ndarray, *, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Permutation test of group labels across units (raters); exact when feasible."""
    sizes = np.bincount(labels)
    total = math.factorial(len(values)) // math.prod(math.factorial(int(s)) for s in sizes)
    observed = float(_statistic(values, labels[None, :], sizes)[0])
    if total <= MAX_EXACT:
        permuted = _statistic(values, _assignments(tuple(sizes.tolist())), sizes)
        p = float((permuted >= observed - 1e-12).mean())
        min_p = float((permuted >= permuted.max() - 1e-12).mean())
        exact = True
    else:
        rng = np.random.default_rng(seed)
        drawn = np.stack([rng.permutation(labels) for _ in range(DRAWS)])
        permuted = _statistic(values, drawn, sizes)
        p = float((1 + (permuted >= observed - 1e-12).sum()) / (DRAWS + 1))
        # the design's smallest p, and never below what DRAWS Monte Carlo draws can show: 1 / (DRAWS + 1)
        min_p = max((2.0 if len(sizes) == 2 and sizes[0] == sizes[1] else 1.0) / total, 1.0 / (DRAWS + 1))
        exact = False
    return {"p": p, "statistic": observed, "min_attainable_p": min_p, "exact": exact, "n_assignments": total}


def _rater_level_test(
    per_rater: dict[str, float], membership: dict[str, list[str]], seed: int, what: str
) -> dict[str, Any]:
    groups = {g: [per_rater[r] for r in members if r in per_rater] for g, members in sorted(membership.items())}
    groups = {g: v for g, v in groups.items() if v}
    n_raters = {g: len(v) for g, v in groups.items()}
    if len(groups) < 2:
        return {"name": None, "note": "fewer than two groups with raters", "n_raters": n_raters}
    values = np.concatenate([np.asarray(v) for v in groups.values()])
    labels = np.concatenate([np.full(len(v), k) for k, v in enumerate(groups.values())])
    if values.size < 3 or np.unique(values).size < 2:
        return {
            "name": None,
            "note": "too few raters, or no variation between raters: no test possible",
            "n_raters": n_raters,
        }
    result = {
        "name": "rater-level permutation",
        "unit": "rater",
        "of": what,
        "n_raters": n_raters,
        **permutation_test(values, labels, seed=seed),
    }
    names = list(groups)
    if len(names) == 2:
        diff = float(np.mean(groups[names[0]]) - np.mean(groups[names[1]]))
        result["effect_size"] = {
            "name": "difference of group means",
            "value": diff,
            "direction": f"positive: {names[0]} higher than {names[1]}",
        }
    else:
        between = sum(len(v) * (np.mean(v) - values.mean()) ** 2 for v in groups.values())
        total = float(((values - values.mean()) ** 2).sum())
        result["effect_size"] = {
            "name": "eta-squared of rater means",
            "value": float(between / total) if total else None,
        }
    return result


def _judge_by_group(
    table: RatingsTable, dimension: str, judge: str, membership: dict[str, list[str]], humans: list[str], seed: int
) -> dict[str, Any]:
    items, judge_row = table.matrix(dimension, [judge])
    per_rater: dict[str, float] = {}
    _, data = table.matrix(dimension, humans, items)
    for k, rater in enumerate(humans):
        both = ~np.isnan(data[k]) & ~np.isnan(judge_row[0])
        if both.sum() >= MIN_SHARED and (value := qwk(judge_row[0], data[k])) is not None:
            per_rater[rater] = value
    groups = {}
    for group, members in sorted(membership.items()):
        values = [per_rater[r] for r in members if r in per_rater]
        groups[group] = {
            "n_raters": len(values),
            "mean_kappa_quadratic": float(np.mean(values)) if values else None,
            "min": min(values) if values else None,
            "max": max(values) if values else None,
        }
    return {
        "metric": "mean quadratic-weighted kappa between the judge and each rater of the group",
        "groups": groups,
        "test": _rater_level_test(per_rater, membership, seed, "judge-rater kappa"),
    }


def _group_block(
    table: RatingsTable,
    dimension: str,
    membership: dict[str, list[str]],
    judges: list[str],
    seed: int,
    mixed_model: bool,
) -> dict[str, Any]:
    humans = table.human_raters(dimension)
    member = {r: g for g, members in membership.items() for r in members if r in humans}
    ratings = [r for r in table.rows if r.dimension == dimension and r.rater in member]
    groups = {}
    for group in sorted(membership):
        rows = [r for r in ratings if member[r.rater] == group]
        groups[group] = {
            **rater_mean_interval(rows),
            "n_ratings": len(rows),
            "median": float(np.median([r.score for r in rows])) if rows else None,
        }
    effects = item_adjusted_rater_means(table, dimension, humans)
    block: dict[str, Any] = {
        "groups": groups,
        "test": _rater_level_test(
            effects,
            {g: [r for r in m if r in member] for g, m in membership.items()},
            seed,
            "item-adjusted rater means",
        ),
        "judge_agreement": {
            judge: _judge_by_group(table, dimension, judge, membership, humans, seed) for judge in judges
        },
    }
    if mixed_model:
        block["mixed_model"] = _mixed_model(table, dimension, member)
    return block


def rater_mean_interval(rows: list[Any], level: float = 0.95) -> dict[str, Any]:
    """A group's mean rating with the rater as the unit: the mean of its raters' mean ratings and
    a t interval on those means with raters - 1 degrees of freedom (Cameron & Miller 2015);
    no interval with fewer than two raters."""
    from scipy import stats

    by_rater: dict[str, list[float]] = {}
    for r in rows:
        by_rater.setdefault(r.rater, []).append(r.score)
    means = np.array([np.mean(v) for v in by_rater.values()], dtype=float)
    out: dict[str, Any] = {"n_raters": int(means.size), "mean": float(means.mean()) if means.size else None}
    if means.size >= 2:
        half = float(stats.t.isf((1 - level) / 2, means.size - 1) * means.std(ddof=1) / np.sqrt(means.size))
        out |= {"ci_low": out["mean"] - half, "ci_high": out["mean"] + half}
    else:
        out |= {"ci_low": None, "ci_high": None}
    return out | {"interval": f"t on rater means, {max(means.size - 1, 0)} df"}


def _mixed_model(table: RatingsTable, dimension: str, member: dict[str, str]) -> dict[str, Any]:
    """A linear mixed model beside the permutation test (never instead): item-centred score ~
    group + (1 | rater), statsmodels MixedLM; centring on the item mean stands in for the
    crossed item effect. The Wald z is anti-conservative with few raters (Luke 2017: 15 % at
    a 9-vs-3 split); the p-value refers the Wald statistic to t with raters - groups degrees of
    freedom, the between-rater df of the group contrast (a Satterthwaite-style small-sample
    reference; statsmodels has no Kenward-Roger)."""
    try:
        import pandas as pd
        import statsmodels.formula.api as smf
    except ImportError:
        return {"note": "statsmodels is not installed: pip install 'tide-bench[mixed]'"}
    rows = [r for r in table.rows if r.dimension == dimension and r.rater in member]
    frame = pd.DataFrame(
        {
            "item": [r.item for r in rows],
            "rater": [r.rater for r in rows],
            "group": [member[r.rater] for r in rows],
            "score": [r.score for r in rows],
        }
    )
    frame = frame[frame.groupby("item")["score"].transform("size") >= 2].copy()
    if frame["group"].nunique() < 2 or frame["rater"].nunique() < 3:
        return {"note": "too few raters or groups for a mixed model"}
    frame["centred"] = frame["score"] - frame.groupby("item")["score"].transform("mean")
    try:
        fit = smf.mixedlm("centred ~ C(group)", frame, groups=frame["rater"]).fit(reml=True)
    except Exception as exc:  # a numerical failure of the side model must not stop the audit; its reason is reported
        return {"note": f"the mixed model did not fit ({type(exc).__name__}: {exc})"}
    from scipy import stats

    df = int(frame["rater"].nunique() - frame["group"].nunique())
    terms = {
        name: {
            "estimate": float(fit.params[name]),
            "se": float(fit.bse[name]),
            "df": df,
            "p_t": float(2 * stats.t.sf(abs(fit.params[name] / fit.bse[name]), max(df, 1))),
        }
        for name in fit.params.index
        if name.startswith("C(group)")
    }
    return {
        "model": "statsmodels MixedLM: item-centred score ~ C(group) + (1 | rater), REML; p: Wald statistic on t "
        "with raters - groups df",
        "terms": terms,
        "note": "read beside the rater-level permutation test, never instead",
    }


def analyze_groups(
    table: RatingsTable,
    rater_info: dict[str, dict[str, str]],
    judges: list[str],
    *,
    seed: int = DEFAULT_SEED,
    mixed_model: bool = False,
) -> dict[str, Any]:
    result: dict[str, Any] = {"method": METHOD, "columns": {}, "skipped_columns": {}}
    tests: list[dict[str, Any]] = []
    for column in sorted({c for info in rater_info.values() for c in info}):
        membership = _membership(rater_info, column)
        if not 2 <= len(membership) <= MAX_GROUPS or len(membership) == len(rater_info):
            result["skipped_columns"][column] = (
                f"{len(membership)} distinct values (needs 2..{MAX_GROUPS}, fewer than raters)"
            )
            continue
        per_dim = {
            d: _group_block(table, d, membership, judges, seed, mixed_model)
            for d in table.dimensions()
            if table.human_raters(d)
        }
        for block in per_dim.values():
            tests += [
                t
                for t in [block["test"], *(j["test"] for j in block["judge_agreement"].values())]
                if t.get("p") is not None
            ]
        result["columns"][column] = per_dim
    for t, p in zip(tests, holm([t["p"] for t in tests]), strict=True):
        t["p_holm"] = p
    result["n_tests"] = len(tests)
    return result
