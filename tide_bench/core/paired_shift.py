"""Paired shifts with simultaneous intervals: the mean within-pair difference of a family of measures.

Why this method. A persona-swap pair (:mod:`tide_bench.data.persona_swap`) is the same message
answered twice, so its difference removes everything the two sides share (the message, the
persona, the item's difficulty) and the estimate of a shift is the mean of the pairs'
differences. Pairs nest in personas: a persona gives one pair per attribute (or more with
``per_persona``), and the same persona's pairs across attributes share its messages, so the
resampling unit is the **persona** (the cluster), not the pair. With one pair per persona and
attribute the two coincide for one attribute; the persona cluster also keeps the correlation
between attributes, which the family-wise correction needs.

Each member ``j`` of the family (an attribute and a measure) has the persona-cluster ratio mean
``d_j`` of its pairs' differences and its CR1 standard error ``se_j``
(:func:`~tide_bench.core.stats.cluster_mean_se`). The simultaneous intervals are ``d_j +- c se_j``
with ``c`` the 95 % quantile of ``max_j |t*_j|`` under the **wild cluster bootstrap** (Cameron,
Gelbach & Miller 2008): every persona's centred residuals are multiplied by one Rademacher sign,
the same sign for all of its pairs and all members, and ``t*_j`` is the resampled mean over its
resampled CR1 error. Centring makes the intervals valid whatever the true shifts (a sign-flip of
the raw differences would test only the null), and the shared sign keeps the dependence between
members, so ``c`` is the Westfall-Young max-T critical value of this family. A member shows a
shift when its simultaneous interval excludes 0: at most a 5 % chance, over the whole family, of
showing any shift when there is none (``tests/calibration/test_persona_swap.py``: size and
coverage at the board's persona counts).

For a 0/1 rate (the safety-flag rate) the standard error is computed with two pseudo-personas added,
one pair whose difference is +1 and one whose difference is -1 (Agresti & Min 2005 in spirit, as
:mod:`tide_bench.core.group_gaps` does for a rate): flags are rare, and a difference of rare events
otherwise gets too small an error (none at all when no pair differs), which left the simultaneous
intervals at 92 % coverage with 50 personas; with them, 95 %. The reported shift is the plain mean.

A member with fewer than ``min_personas`` personas is not estimable: reported with its n and
mean, without an interval, and outside the family (too few clusters for the bootstrap's t).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tide_bench.core.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, cluster_codes, cluster_mean_se

MIN_PERSONAS = 10  # fewer personas: no interval, no part in the family (calibration: the module docstring)
LEVEL = 0.95
_CHUNK = 256


def _persona_sums(diffs: np.ndarray, codes: np.ndarray, n_personas: int) -> tuple[np.ndarray, np.ndarray]:
    """``(personas, members)`` sums of the finite differences and their counts."""
    finite = np.isfinite(diffs)
    sums = np.zeros((n_personas, diffs.shape[1]))
    counts = np.zeros_like(sums)
    np.add.at(sums, codes, np.where(finite, diffs, 0.0))
    np.add.at(counts, codes, finite.astype(float))
    return sums, counts


def _wild_max_t(residuals: np.ndarray, counts: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """``(resamples,)`` max |t*| over the members: each persona's residuals times one Rademacher sign."""
    n_personas, _ = residuals.shape
    total = counts.sum(axis=0)
    groups = (counts > 0).sum(axis=0)
    factor = groups / (groups - 1.0)
    rng = np.random.default_rng(seed)
    out = np.empty(resamples)
    for start in range(0, resamples, _CHUNK):
        stop = min(start + _CHUNK, resamples)
        signs = rng.choice((-1.0, 1.0), size=(stop - start, n_personas))
        drawn = signs[:, :, None] * residuals[None]  # (b, P, m): the resampled persona sums, centred
        mean = drawn.sum(axis=1) / total
        spread = drawn - counts[None] * mean[:, None, :]
        se = np.sqrt(factor * (spread**2).sum(axis=1)) / total
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.abs(mean) / se
        t = np.where(se > 0, t, 0.0)
        out[start:stop] = t.max(axis=1)
    return out


def _with_pseudo(sums: np.ndarray, counts: np.ndarray, rates: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Two pseudo-personas for each rate member, one pair of difference +1 and one of -1: the standard
    error of a difference of rare 0/1 events is otherwise too small (none differ: 0)."""
    extra_sums = np.zeros((2, sums.shape[1]))
    extra_counts = np.zeros_like(extra_sums)
    cols = list(rates)
    extra_sums[0, cols], extra_sums[1, cols] = 1.0, -1.0
    extra_counts[:, cols] = 1.0
    return np.vstack([sums, extra_sums]), np.vstack([counts, extra_counts])


def paired_shifts(
    diffs: np.ndarray,
    personas: Sequence[str],
    *,
    rates: Sequence[int] = (),
    min_personas: int = MIN_PERSONAS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """``diffs``: ``(pairs, members)`` within-pair differences (NaN where a pair has none for a member,
    e.g. a pair of another attribute or one side unscored); ``personas``: each pair's persona;
    ``rates``: the members that are differences of 0/1 values (their error gets the pseudo-personas).

    Returns per member its ``n_pairs``, ``n_personas``, ``shift`` (the mean difference), ``se``,
    simultaneous ``ci_low`` / ``ci_high``, ``shown`` and ``estimable``; the family's
    ``critical_t`` and ``n_comparisons``."""
    diffs = np.asarray(diffs, dtype=float).reshape(len(personas), -1)
    codes, n_personas = cluster_codes(list(personas))
    sums, counts = _persona_sums(diffs, codes, n_personas)
    mean, _, groups = cluster_mean_se(sums, counts) if n_personas else (np.full(diffs.shape[1], np.nan),) * 3
    n_pairs = counts.sum(axis=0)
    sums, counts = _with_pseudo(sums, counts, rates)
    _, se, _ = cluster_mean_se(sums, counts) if n_personas else (None, np.full(diffs.shape[1], np.nan), None)
    estimable = (groups >= min_personas) & np.isfinite(se) if n_personas else np.zeros(diffs.shape[1], dtype=bool)
    critical = None
    if estimable.any():
        cols = np.flatnonzero(estimable)
        centre = np.where(counts.sum(axis=0) > 0, sums.sum(axis=0) / np.maximum(counts.sum(axis=0), 1), 0.0)
        residuals = sums[:, cols] - counts[:, cols] * centre[cols]
        null = _wild_max_t(residuals, counts[:, cols], resamples, seed)
        critical = float(np.quantile(null, LEVEL))
    members = []
    for j in range(diffs.shape[1]):
        ok = bool(estimable[j])
        low = float(mean[j] - critical * se[j]) if ok and critical is not None else None
        high = float(mean[j] + critical * se[j]) if ok and critical is not None else None
        members.append(
            {
                "n_pairs": int(n_pairs[j]),
                "n_personas": int(groups[j]) if n_personas else 0,
                "shift": float(mean[j]) if np.isfinite(mean[j]) else None,
                "se": float(se[j]) if ok else None,
                "ci_low": low,
                "ci_high": high,
                "estimable": ok,
                "shown": bool(ok and low is not None and high is not None and (low > 0 or high < 0)),
            }
        )
    return {"members": members, "critical_t": critical, "n_comparisons": int(estimable.sum())}
