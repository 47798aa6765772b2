"""Judge-vs-human agreement on one dimension, every statistic with a bootstrap interval.

Statistics, on the replies both the judge and the humans rated (the human value of a reply is
the mean of its raters' scores; a single-rater pack has one): n, human mean, judge mean,
signed bias (judge - human), MSE, RMSE, quadratic-weighted kappa and Spearman's rho.

Why one contingency table: every one of them is a function of the joint table of (human
value, judge value) counts. Scores take few values (1-5, 0/1, means of five 1-5 ratings), so
each cluster's joint table is a short vector; a bootstrap resample of clusters is then one
weighted sum (one matrix product for all resamples, :func:`tide_bench.core.stats.bootstrap_weights`)
and the statistics of all resamples are computed from their tables at once. Spearman's rho is
the Pearson correlation of mid-ranks, and a value's mid-rank depends only on the resample's
marginal counts, so it too comes from the table (it equals ``scipy.stats.spearmanr`` on the
expanded data). QWK is ``2 cov / (var_h + var_j + (mean_h - mean_j)^2)`` with population
moments (as :func:`tide_bench.agreement.pairwise.qwk_bootstrap`).

The resampled unit is the pack's cluster (a context and all its replies in MentalAlign and
CounselBench, the item in AnnoMI, the seeker post in EPITOME): replies to one message are not
independent. Every interval is the expanded percentile interval for that many clusters, as on
the board (:func:`tide_bench.core.stats.percentile_ci`): a bootstrap over 20 contexts is too
narrow by itself. The interval is for this pack's rater panel: it resamples replies, not raters.

A *categorical* pack (its scale says ``categorical: true``: EPITOME's levels 0/1/2 are classes,
not a rating to average) adds accuracy and macro-F1, from the same tables laid out as
confusion matrices over the levels either side used
(:func:`tide_bench.metrics.confusion.confusion_statistics`), and the point confusion matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tide_bench.core.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, Estimate, bootstrap_weights, cluster_codes
from tide_bench.metrics.confusion import confusion_statistics

STATISTICS = ("human_mean", "judge_mean", "bias", "mse", "rmse", "qwk", "spearman")
CATEGORICAL = ("accuracy", "macro_f1")


def _table_stats(tables: np.ndarray, hv: np.ndarray, jv: np.ndarray) -> dict[str, np.ndarray]:
    """Every statistic for a batch of joint tables ``(B, H, J)`` over values ``hv`` and ``jv``."""
    n = tables.sum(axis=(1, 2))
    rows, cols = tables.sum(axis=2), tables.sum(axis=1)  # (B, H), (B, J)
    with np.errstate(divide="ignore", invalid="ignore"):
        mh, mj = rows @ hv / n, cols @ jv / n
        vh = rows @ hv**2 / n - mh**2
        vj = cols @ jv**2 / n - mj**2
        cross = np.einsum("bhj,h,j->b", tables, hv, jv) / n
        cov = cross - mh * mj
        diff2 = (jv[None, :] - hv[:, None]) ** 2
        mse = np.einsum("bhj,hj->b", tables, diff2) / n
        qwk = np.where(vh + vj + (mh - mj) ** 2 > 1e-12, 2 * cov / (vh + vj + (mh - mj) ** 2), np.nan)
        rh = np.cumsum(rows, axis=1) - (rows - 1) / 2  # mid-ranks of each value (1-based)
        rj = np.cumsum(cols, axis=1) - (cols - 1) / 2
        mean_rank = (n + 1) / 2
        r_cov = np.einsum("bhj,bh,bj->b", tables, rh, rj) / n - mean_rank**2
        r_vh = (rows * rh**2).sum(axis=1) / n - mean_rank**2
        r_vj = (cols * rj**2).sum(axis=1) / n - mean_rank**2
        rho = np.where((r_vh > 1e-12) & (r_vj > 1e-12), r_cov / np.sqrt(r_vh * r_vj), np.nan)
    return {
        "human_mean": mh,
        "judge_mean": mj,
        "bias": mj - mh,
        "mse": mse,
        "rmse": np.sqrt(mse),
        "qwk": qwk,
        "spearman": rho,
    }


def agreement(
    human: np.ndarray,
    judge: np.ndarray,
    clusters: list[str] | np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    categorical: bool = False,
) -> dict[str, Any]:
    """Statistics of ``judge`` against ``human`` (one value per item, NaN = missing);
    ``categorical`` adds accuracy, macro-F1 and the confusion matrix."""
    human, judge = np.asarray(human, float), np.asarray(judge, float)
    both = ~np.isnan(human) & ~np.isnan(judge)
    n = int(both.sum())
    out: dict[str, Any] = {"n": n}
    names = STATISTICS + (CATEGORICAL if categorical else ())
    if n == 0:
        out |= {s: Estimate.undefined("no reply rated by both").as_dict() for s in names}
        out["n_clusters"] = 0
        return out
    h, j = human[both], judge[both]
    codes, n_clusters = cluster_codes(np.asarray(clusters, dtype=object)[both])
    hv, hi = np.unique(h, return_inverse=True)
    jv, ji = np.unique(j, return_inverse=True)
    cells = hi * len(jv) + ji
    per_cluster = np.zeros((n_clusters, len(hv) * len(jv)))
    np.add.at(per_cluster, (codes, cells), 1.0)
    point_table = per_cluster.sum(axis=0).reshape(1, len(hv), len(jv))
    point = _table_stats(point_table, hv, jv)
    weights = bootstrap_weights(n_clusters, resamples, seed)
    boot_tables = (weights @ per_cluster).reshape(resamples, len(hv), len(jv))
    boot = _table_stats(boot_tables, hv, jv)
    out["n_clusters"] = n_clusters
    if categorical:
        levels, point_confusion = _confusion(point_table, hv, jv)
        point |= confusion_statistics(point_confusion)
        boot |= confusion_statistics(_confusion(boot_tables, hv, jv)[1])
        out["confusion"] = {"levels": levels.tolist(), "rows_human": point_confusion[0].astype(int).tolist()}
    for name in names:
        value = float(point[name][0])
        note = None
        if not np.isfinite(value):
            note = "undefined: a rater gave every reply the same score (no variation)"
        out[name] = Estimate.from_replicates(
            value if np.isfinite(value) else None, boot[name], n, note, n_units=n_clusters
        ).as_dict()
    return out


def _confusion(tables: np.ndarray, hv: np.ndarray, jv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Joint tables ``(B, H, J)`` over values ``hv`` x ``jv`` as confusion matrices ``(B, C, C)``
    over the levels either side used (rows: the humans' level)."""
    levels = np.union1d(hv, jv)
    out = np.zeros((tables.shape[0], levels.size, levels.size))
    out[:, np.searchsorted(levels, hv)[:, None], np.searchsorted(levels, jv)[None, :]] = tables
    return levels, out


def length_slope(
    human: np.ndarray, judge: np.ndarray, words: np.ndarray | None, clusters: list[str], **kw: Any
) -> dict[str, Any]:
    """How much more the judge rewards length than the humans do: the least-squares slope of
    (judge - human) on the reply's length, per 100 words, with a cluster-bootstrap interval."""
    if words is None:
        return Estimate.undefined("the replies' texts are not in this copy of the pack").as_dict()
    human, judge, words = (np.asarray(x, float) for x in (human, judge, words))
    ok = ~np.isnan(human) & ~np.isnan(judge) & ~np.isnan(words)
    if ok.sum() < 3 or np.ptp(words[ok]) == 0:
        return Estimate.undefined("too few replies of different lengths", int(ok.sum())).as_dict()
    x, y = words[ok] / 100.0, judge[ok] - human[ok]
    codes, n_clusters = cluster_codes(np.asarray(clusters, dtype=object)[ok])
    moments = np.zeros((n_clusters, 5))
    np.add.at(moments, codes, np.stack([np.ones_like(x), x, y, x * x, x * y], axis=1))
    resamples = kw.get("resamples", DEFAULT_RESAMPLES)
    w = bootstrap_weights(n_clusters, resamples, kw.get("seed", DEFAULT_SEED))

    def slope(m: np.ndarray) -> np.ndarray:
        n, sx, sy, sxx, sxy = m.T
        with np.errstate(divide="ignore", invalid="ignore"):
            return (n * sxy - sx * sy) / (n * sxx - sx * sx)

    value = float(slope(moments.sum(axis=0, keepdims=True))[0])
    return Estimate.from_replicates(value, slope(w @ moments), int(ok.sum()), n_units=n_clusters).as_dict()
