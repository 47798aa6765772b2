"""How well predicted levels match the annotated ones: accuracy, macro-F1, quadratic-weighted
kappa per mechanism, with confidence intervals that resample seeker posts.

All three statistics are functions of the 3x3 confusion matrix, so the bootstrap sums the
matrix per seeker post once and draws posts with replacement (one matrix product per
resample batch, :func:`tide_bench.core.stats.resampled_totals`): replies to one post are not
independent, and a pair that is duplicated in the files moves with its twin.

Macro-F1 averages over the levels present in the labels or the predictions (scikit-learn's
``f1_score(average="macro")``); a level present but never predicted correctly counts 0.
"""

from __future__ import annotations

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

K = len(LEVELS)
STATISTICS = ("accuracy", "macro_f1", "qwk")


def _confusions(truth: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """One-hot confusion cell per row: (n, K*K)."""
    cells = np.zeros((truth.size, K * K))
    cells[np.arange(truth.size), truth * K + pred] = 1.0
    return cells


def statistics(matrix: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracy, macro-F1 and QWK of confusion matrices ``(..., K, K)`` (rows = truth)."""
    m = np.asarray(matrix, dtype=float)
    total = m.sum(axis=(-2, -1))
    diagonal = np.trace(m, axis1=-2, axis2=-1)
    rows, cols = m.sum(axis=-1), m.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = diagonal / total
        tp = np.diagonal(m, axis1=-2, axis2=-1)
        present = (rows + cols) > 0
        f1 = np.where(present, 2 * tp / np.where(present, rows + cols, 1), 0.0)
        macro_f1 = f1.sum(axis=-1) / present.sum(axis=-1)
        levels = np.arange(K)
        weights = (levels[:, None] - levels[None, :]) ** 2 / (K - 1) ** 2
        expected = rows[..., :, None] * cols[..., None, :] / total[..., None, None]
        observed = (weights * m).sum(axis=(-2, -1))
        chance = (weights * expected).sum(axis=(-2, -1))
        qwk = np.where(chance > 0, 1 - observed / np.where(chance > 0, chance, 1), np.nan)
    return {"accuracy": accuracy, "macro_f1": macro_f1, "qwk": qwk}


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
    labels = list(clusters) if clusters is not None else list(range(n))
    if len(labels) != n:
        raise ValueError("one cluster label per row")
    codes, n_clusters = cluster_codes(labels)
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
        out[name] = Estimate.from_replicates(value if np.isfinite(value) else None, replicates[name], n, note, level)
    out |= {"n": n, "n_clusters": n_clusters, "confusion": matrix.astype(int).tolist()}
    return out


def as_table(result: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of :func:`agreement`'s result."""
    return {k: (v.as_dict() if isinstance(v, Estimate) else v) for k, v in result.items()}
