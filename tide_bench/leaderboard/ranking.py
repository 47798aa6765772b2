"""Rank models with paired comparisons: every model answers the same items.

Why not "non-overlapping confidence intervals": that rule is a test at roughly alpha = 0.006
(Schenker & Gentleman 2001) and ignores that item difficulty cancels in a paired difference,
so it separates fewer truly different models. Here:

1. Each pair's difference of means is computed on the items counted for both models, with a
   *paired persona-cluster bootstrap*: one set of persona resamples (the same for every model)
   gives every pairwise difference at once (Koehn 2004; Dror et al. 2018; Miller 2024).
2. Pairs are tested with family-wise error control over all K(K-1)/2 pairs: Holm on the
   normal-approximation p-values of the studentised differences (the default; it held its
   level best in the calibration tests, also with 40 personas), or the bootstrap step-down
   max-T procedure (Romano & Wolf 2005), which uses the correlation between pairs. The
   bootstrap standard error is inflated by sqrt(P / (P - 1)) for P personas (a bootstrap over
   few clusters is slightly too narrow).
3. ``rank = 1 + the number of models significantly better``: models whose difference is not
   significant share a rank.
4. Each model's *rank interval* is the 2.5-97.5 % range of its rank across the same
   resamples (Chatbot Arena's display): how far its position could move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tide_bench.core.stats import DEFAULT_SEED, cluster_codes, cluster_totals, holm, percentile_ci, resampled_totals

CORRECTIONS = ("holm", "max-t")


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
    """Romano-Wolf step-down adjusted p-values from observed statistics ``t`` (m) and
    centred, studentised bootstrap statistics ``z`` (B x m)."""
    order = np.argsort(-t, kind="stable")
    sorted_z = z[:, order]
    suffix_max = np.maximum.accumulate(sorted_z[:, ::-1], axis=1)[:, ::-1]
    raw = (suffix_max >= t[order][None, :]).mean(axis=0)
    adjusted = np.empty_like(raw)
    adjusted[order] = np.maximum.accumulate(raw)
    return adjusted


def _holm_normal(t: np.ndarray) -> np.ndarray:
    from scipy import stats

    return np.asarray(holm((2 * stats.norm.sf(t)).tolist()))


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
    resamples: int = 1000,
    seed: int = DEFAULT_SEED,
) -> PairedRanking:
    """Rank the K columns of ``values`` (items x models, higher is better, NaN = not counted).

    ``personas`` labels each item with its cluster; every CI and test resamples personas.
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    k = values.shape[1]
    codes, n_clusters = cluster_codes(list(personas))
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
    totals = (
        resampled_totals(
            np.hstack([cluster_totals(codes, n_clusters, diffs), cluster_totals(codes, n_clusters, both)]),
            resamples,
            seed,
        )
        if m
        else np.zeros((resamples, 0))
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = totals[:, :m] / totals[:, m:]
        point = diffs.sum(axis=0) / both.sum(axis=0)
        se = np.nanstd(boot, axis=0, ddof=1) if resamples > 1 else np.full(m, np.nan)
        # Small-sample (CR1-style) inflation: a bootstrap over P clusters underestimates the variance by (P - 1) / P.
        t = np.where(
            se > 0,
            np.abs(point) / (se * np.sqrt(n_clusters / max(n_clusters - 1, 1))),
            np.where(point == 0, 0.0, np.inf),
        )
        z = np.where(se > 0, np.abs(boot - point) / se, 0.0)
    testable = np.isfinite(point) & np.isfinite(se)
    t = np.where(testable, t, 0.0)
    z = np.where(np.isfinite(z) & testable[None, :], z, 0.0)
    p_adjusted = _step_down_max_t(t, z) if correction == "max-t" else _holm_normal(t)
    p_adjusted = np.where(testable, p_adjusted, 1.0)
    significant = testable & (p_adjusted <= alpha)

    better = np.zeros(k, dtype=int)
    pairs = []
    for j in range(m):
        a, b = int(first[j]), int(second[j])
        if significant[j]:
            better[b if point[j] > 0 else a] += 1
        low, high = percentile_ci(boot[:, j]) if testable[j] else (None, None)
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
