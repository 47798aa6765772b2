"""Accuracy, macro-F1 and quadratic-weighted kappa of confusion matrices, in batches.

One definition, used wherever predicted levels are compared with annotated ones: the EPITOME
scorer's cross-validation (:mod:`tide_bench.epitome.agreement`) and the categorical validation
packs (:mod:`tide_bench.validation.metrics`). Every statistic is a function of the confusion
matrix alone, so a bootstrap computes it on a stack of resampled matrices ``(..., K, K)`` at
once.

Macro-F1 averages over the levels present in the labels or the predictions, as scikit-learn's
``f1_score(average="macro")`` does; a level present but never predicted correctly counts 0.
QWK weights a disagreement by the squared distance of the two levels' positions (0..K-1).
"""

from __future__ import annotations

import numpy as np

STATISTICS = ("accuracy", "macro_f1", "qwk")


def confusion_statistics(matrix: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracy, macro-F1 and QWK of confusion matrices ``(..., K, K)`` (rows = truth); NaN
    where a statistic is undefined (an empty matrix; QWK without variation)."""
    m = np.asarray(matrix, dtype=float)
    k = m.shape[-1]
    total = m.sum(axis=(-2, -1))
    rows, cols = m.sum(axis=-1), m.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        tp = np.diagonal(m, axis1=-2, axis2=-1)
        accuracy = tp.sum(axis=-1) / total
        present = (rows + cols) > 0
        f1 = np.where(present, 2 * tp / np.where(present, rows + cols, 1), 0.0)
        macro_f1 = f1.sum(axis=-1) / present.sum(axis=-1)
        levels = np.arange(k)
        weights = (levels[:, None] - levels[None, :]) ** 2 / max(k - 1, 1) ** 2
        expected = rows[..., :, None] * cols[..., None, :] / total[..., None, None]
        observed = (weights * m).sum(axis=(-2, -1))
        chance = (weights * expected).sum(axis=(-2, -1))
        qwk = np.where(chance > 0, 1 - observed / np.where(chance > 0, chance, 1), np.nan)
    return {"accuracy": accuracy, "macro_f1": macro_f1, "qwk": qwk}
