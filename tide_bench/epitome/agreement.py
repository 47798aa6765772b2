"""How well predicted levels match the annotated ones: accuracy, macro-F1, quadratic-weighted
kappa per mechanism, with confidence intervals that resample seeker posts.

All three statistics are functions of the 3x3 confusion matrix, so the bootstrap sums the
matrix per seeker post once and draws posts with replacement (one matrix product per
resample batch, :func:`tide_bench.core.stats.resampled_totals`): replies to one post are not
independent, and a pair that is duplicated in the files moves with its twin. The interval is
the expanded percentile interval for that many posts, as everywhere in the project.

What the interval covers: the sampling of the test replies, for fixed predictions. For
cross-validated predictions that means the five fitted fold models, not the learner: training
again (another seed, other folds) moves the figures too, and so do design choices made on the
same corpus. :func:`fold_difference` gives the figure that does include the training: a
corrected resampled t interval over the folds (Nadeau & Bengio 2003).

The statistics themselves are :func:`tide_bench.metrics.confusion.confusion_statistics`, the
one definition the validation packs use too.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from tide_bench.core.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    cluster_codes,
    cluster_totals,
    resampled_totals,
)
from tide_bench.epitome.mechanisms import LEVELS
from tide_bench.metrics.confusion import STATISTICS, confusion_statistics

K = len(LEVELS)


def _confusions(truth: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """One-hot confusion cell per row: (n, K*K)."""
    cells = np.zeros((truth.size, K * K))
    cells[np.arange(truth.size), truth * K + pred] = 1.0
    return cells


statistics = confusion_statistics  # accuracy, macro-F1, QWK of (..., K, K) confusion matrices


def confusion_matrix(truth: Sequence[int], pred: Sequence[int]) -> np.ndarray:
    t, p = _check(truth, pred)
    return _confusions(t, p).sum(axis=0).reshape(K, K)


def macro_f1(truth: Sequence[int], pred: Sequence[int]) -> float | None:
    """Macro-F1 alone, without an interval (learning curves, per-fold figures)."""
    value = float(statistics(confusion_matrix(truth, pred))["macro_f1"])
    return value if np.isfinite(value) else None


def _check(truth: Sequence[int], pred: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(truth, dtype=np.int64)
    p = np.asarray(pred, dtype=np.int64)
    if t.shape != p.shape or t.ndim != 1:
        raise ValueError("one prediction per label")
    if t.size and (t.min() < 0 or t.max() >= K or p.min() < 0 or p.max() >= K):
        raise ValueError(f"levels must be 0..{K - 1}")
    return t, p


def _cluster_codes(clusters: Sequence[Hashable] | None, n: int) -> tuple[np.ndarray, int]:
    """The rows' cluster codes; without clusters every row is its own."""
    labels = list(clusters) if clusters is not None else list(range(n))
    if len(labels) != n:
        raise ValueError("one cluster label per row")
    return cluster_codes(labels)


def agreement(
    truth: Sequence[int],
    pred: Sequence[int],
    clusters: Sequence[Hashable] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> dict[str, Any]:
    """``{"accuracy": Estimate, "macro_f1": ..., "qwk": ..., "n": ..., "n_clusters": ..., "confusion": ...}``.

    ``clusters`` (one label per row, the seeker post id) are resampled whole; without them
    rows are resampled one by one.
    """
    t, p = _check(truth, pred)
    n = int(t.size)
    if n == 0:
        return {s: Estimate.undefined("no items", 0) for s in STATISTICS} | {"n": 0, "n_clusters": 0, "confusion": []}
    codes, n_clusters = _cluster_codes(clusters, n)
    cells = _confusions(t, p)
    matrix = cells.sum(axis=0).reshape(K, K)
    point = statistics(matrix)
    totals = cluster_totals(codes, n_clusters, cells)
    boot = resampled_totals(totals, resamples, seed).reshape(resamples, K, K)
    replicates = statistics(boot)
    out: dict[str, Any] = {}
    for name in STATISTICS:
        value = float(point[name])
        note = "undefined: the labels and predictions have no variation" if not np.isfinite(value) else None
        out[name] = Estimate.from_replicates(
            value if np.isfinite(value) else None, replicates[name], n, note, level, n_units=n_clusters
        )
    out |= {"n": n, "n_clusters": n_clusters, "confusion": matrix.astype(int).tolist()}
    return out


def paired_difference(
    truth: Sequence[int],
    pred_a: Sequence[int],
    pred_b: Sequence[int],
    clusters: Sequence[Hashable] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> dict[str, Estimate]:
    """``statistic(a) - statistic(b)`` for accuracy, macro-F1 and QWK, with paired intervals.

    Why paired: two classifiers (the scorer and its TF-IDF baseline) labelled the same replies,
    so their errors are correlated; separate intervals that overlap say little about the
    difference. Both confusion matrices are summed per cluster side by side and every resample
    draws the same seeker posts for both (one matrix product), so the interval is of the
    difference itself. A difference whose interval excludes 0 is what "beats" means here.
    """
    t, a = _check(truth, pred_a)
    _, b = _check(truth, pred_b)
    if t.size == 0:
        return {s: Estimate.undefined("no items", 0) for s in STATISTICS}
    codes, n_clusters = _cluster_codes(clusters, int(t.size))
    cells = np.concatenate([_confusions(t, a), _confusions(t, b)], axis=1)
    point = cells.sum(axis=0).reshape(2, K, K)
    boot = resampled_totals(cluster_totals(codes, n_clusters, cells), resamples, seed).reshape(resamples, 2, K, K)
    at, replicates = statistics(point), statistics(boot)
    out = {}
    for name in STATISTICS:
        value = float(at[name][0] - at[name][1])
        diffs = replicates[name][:, 0] - replicates[name][:, 1]
        out[name] = Estimate.from_replicates(
            value if np.isfinite(value) else None, diffs, int(t.size), None, level, n_units=n_clusters
        )
    return out


def fold_difference(
    per_fold_a: Sequence[float | None],
    per_fold_b: Sequence[float | None],
    test_sizes: Sequence[int],
    train_sizes: Sequence[int],
    level: float = 0.95,
) -> Estimate:
    """The mean over folds of ``a - b`` (one statistic per fold, e.g. macro-F1) with the corrected
    resampled t interval of Nadeau & Bengio (2003): ``mean +- t_{J-1} * sqrt((1/J + n_test/n_train) s^2)``
    over the J folds' differences.

    Why beside the paired bootstrap: that interval holds the fitted fold models fixed and covers
    the sampling of the test replies only. Each fold trains a model afresh, so the spread of the
    fold differences also carries the training's variability (another sample, another seed),
    and the ``n_test/n_train`` term corrects for folds that share most of their training data
    (the naive ``s^2 / J`` is far too small). With five folds it is a wide interval: four degrees
    of freedom."""
    pairs = [(a, b) for a, b in zip(per_fold_a, per_fold_b, strict=True) if a is not None and b is not None]
    diffs = np.array([a - b for a, b in pairs], dtype=float)
    folds = int(diffs.size)
    if folds < 2:
        return Estimate.undefined("fewer than two folds with both statistics", folds)
    from scipy import stats

    ratio = float(np.mean(np.asarray(test_sizes, float) / np.asarray(train_sizes, float)))
    value = float(diffs.mean())
    half = float(stats.t.isf((1 - level) / 2, folds - 1)) * math.sqrt((1 / folds + ratio) * diffs.var(ddof=1))
    return Estimate(value, value - half, value + half, folds)


def as_table(result: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of :func:`agreement`'s result."""
    return {k: (v.as_dict() if isinstance(v, Estimate) else v) for k, v in result.items()}
