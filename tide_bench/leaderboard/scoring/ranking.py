"""Rank models with paired comparisons: every model answers the same items.

Why not "non-overlapping confidence intervals": that rule is a test at roughly alpha = 0.006
(Schenker & Gentleman 2001) and ignores that item difficulty cancels in a paired difference,
so it separates fewer truly different models. Here:

1. Each pair's difference of means is computed on the items counted for both models, with a
   *paired persona-cluster bootstrap*: one set of persona resamples (the same for every model)
   gives every pairwise difference at once (Koehn 2004; Dror et al. 2018; Miller 2024).
2. Pairs are tested with family-wise error control over all K(K-1)/2 pairs. Each pair's
   statistic is its difference over the cluster-robust (CR1) standard error, referred to
   Student's t with P - 1 degrees of freedom for P personas (Cameron & Miller 2015; Bell &
   McCaffrey 2002): with 20 personas the normal reference gave 7-11 % family-wise error for six
   equal models, the t reference <= 5 %. ``holm`` (the default) applies Holm to those t
   p-values; ``max-t`` is the step-down max-T procedure of Romano & Wolf (2005) on a *wild
   cluster bootstrap-t* (Webb's six-point weights per persona, the null imposed, every
   replicate studentised by its own CR1 error; MacKinnon & Webb 2018), which uses the
   correlation between pairs. Its smallest p-value is 1 / (B + 1). max-T is offered from
   :data:`MAX_T_MIN_PERSONAS` personas, where it is shown calibrated (docs/statistics.md, rows
   4-5: six equal models, about 5 % at 30 personas and 3-5.5 % at 50-100, against 5.4-6.2 % at
   10-20); below it Holm is the only procedure, and asking for max-T is an error that says so.
3. ``rank = 1 + the number of models significantly better``: models whose difference is not
   significant share a rank.
4. Each model's *rank interval* is the 2.5-97.5 % range of its rank across the same
   resamples (Chatbot Arena's display): how far its position could move.
5. Each pair's interval is the expanded percentile interval of its paired bootstrap
   (:func:`tide_bench.core.stats.percentile_ci` with the persona count).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tide_bench.core.errors import ConfigError
from tide_bench.core.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    cluster_codes,
    cluster_mean_se,
    cluster_totals,
    column_intervals,
    holm,
    resampled_totals,
    t_pvalues,
)
from tide_bench.leaderboard.config import CORRECTIONS

MAX_T_MIN_PERSONAS = 30  # max-T's family-wise error is shown calibrated from this many personas


@dataclass(frozen=True)
class PairedRanking:
    """The result of :func:`paired_ranking` for K models (columns), in input order."""

    means: list[float | None]
    rank: list[int]
    rank_interval: list[tuple[int, int]]
    pairs: list[dict[str, Any]]
    correction: str
    alpha: float
    resamples: int

    @property
    def n_significant(self) -> int:
        return sum(1 for p in self.pairs if p["significant"])


def _step_down_max_t(t: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Romano-Wolf step-down adjusted p-values from observed statistics ``t`` (m) and null
    bootstrap statistics ``z`` (B x m); each p is at least 1 / (B + 1)."""
    order = np.argsort(-t, kind="stable")
    sorted_z = z[:, order]
    suffix_max = np.maximum.accumulate(sorted_z[:, ::-1], axis=1)[:, ::-1]
    raw = (1.0 + (suffix_max >= t[order][None, :]).sum(axis=0)) / (z.shape[0] + 1.0)
    adjusted = np.empty_like(raw)
    adjusted[order] = np.maximum.accumulate(raw)
    return adjusted


WEBB = np.array([-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)])


def wild_cluster_t(sums: np.ndarray, counts: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """``(B, m)`` |t| statistics of a wild cluster bootstrap with the null (difference 0)
    imposed: each resample multiplies every persona's sums by one Webb weight (the same for
    every pair, which keeps the pairs' correlation) and studentises by that resample's own
    CR1 error."""
    n_clusters = sums.shape[0]
    rng = np.random.default_rng(seed)
    v = WEBB[rng.integers(0, WEBB.size, size=(resamples, n_clusters))]
    total = counts.sum(axis=0)
    groups = (counts > 0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        star = (v @ sums) / total
        squares = (v * v) @ (sums * sums) - 2 * star * (v @ (counts * sums)) + star**2 * (counts * counts).sum(axis=0)
        se = np.sqrt(groups / (groups - 1.0) * np.maximum(squares, 0.0)) / total
        out = np.abs(star) / se
    return np.where(np.isfinite(out), out, 0.0)


def _ranks_per_resample(boot_means: np.ndarray) -> np.ndarray:
    """``(B, K)`` rank of each model in each resample (1 = best; NaN means rank last)."""
    filled = np.where(np.isfinite(boot_means), boot_means, -np.inf)
    return 1 + (filled[:, None, :] > filled[:, :, None]).sum(axis=2)


def paired_ranking(
    values: np.ndarray,
    personas: Sequence[str],
    *,
    correction: str = "holm",
    alpha: float = 0.05,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> PairedRanking:
    """Rank the K columns of ``values`` (items x models, higher is better, NaN = not counted).

    ``personas`` labels each item with its cluster; every CI and test resamples personas.
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    k = values.shape[1]
    codes, n_clusters = cluster_codes(list(personas))
    if correction == "max-t" and n_clusters < MAX_T_MIN_PERSONAS:
        raise ConfigError(
            f"max-t is offered from {MAX_T_MIN_PERSONAS} personas, and these items come from {n_clusters}: with "
            "fewer personas its family-wise error runs above 5 % (docs/statistics.md, rows 4-5)",
            field="rank_correction",
            hint="use rank_correction: holm (the default), which holds its level with any number of personas",
        )
    counted = np.isfinite(values)
    filled = np.where(counted, values, 0.0)
    own = resampled_totals(
        np.hstack([cluster_totals(codes, n_clusters, filled), cluster_totals(codes, n_clusters, counted)]),
        resamples,
        seed,
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        boot_means = own[:, :k] / own[:, k:]
    means = [float(filled[:, c].sum() / counted[:, c].sum()) if counted[:, c].any() else None for c in range(k)]

    first, second = np.triu_indices(k, 1)
    both = (counted[:, first] & counted[:, second]).astype(float)
    diffs = (filled[:, first] - filled[:, second]) * both
    m = first.size
    pair_sums, pair_counts = cluster_totals(codes, n_clusters, diffs), cluster_totals(codes, n_clusters, both)
    totals = resampled_totals(np.hstack([pair_sums, pair_counts]), resamples, seed) if m else np.zeros((resamples, 0))
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = totals[:, :m] / totals[:, m:]
    point, se, groups = cluster_mean_se(pair_sums, pair_counts)
    testable = np.isfinite(point) & np.isfinite(se)
    if correction == "max-t":
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(se > 0, np.abs(point) / se, np.where(point == 0, 0.0, np.inf))
        t = np.where(testable, t, 0.0)
        z = wild_cluster_t(pair_sums, pair_counts, resamples, seed) * testable[None, :]
        p_adjusted = _step_down_max_t(t, z)
    else:
        raw = t_pvalues(point, se, groups - 1.0)
        p_adjusted = np.asarray(holm(np.where(testable, raw, 1.0).tolist())) if m else np.zeros(0)
    p_adjusted = np.where(testable, p_adjusted, 1.0)
    significant = testable & (p_adjusted <= alpha)

    better = np.zeros(k, dtype=int)
    pairs = []
    cis = column_intervals(boot, np.where(testable, groups, 0)) if m else []
    for j in range(m):
        a, b = int(first[j]), int(second[j])
        if significant[j]:
            better[b if point[j] > 0 else a] += 1
        low, high = cis[j]
        pairs.append(
            {
                "a": a,
                "b": b,
                "difference": float(point[j]) if np.isfinite(point[j]) else None,
                "ci_low": low,
                "ci_high": high,
                "n_items": int(both[:, j].sum()),
                "p_adjusted": float(p_adjusted[j]),
                "significant": bool(significant[j]),
            }
        )
    ranks = _ranks_per_resample(boot_means)
    intervals = [
        (int(np.quantile(ranks[:, c], 0.025, method="lower")), int(np.quantile(ranks[:, c], 0.975, method="higher")))
        for c in range(k)
    ]
    return PairedRanking(means, [int(1 + b) for b in better], intervals, pairs, correction, alpha, resamples)
