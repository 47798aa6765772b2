"""Bootstrap confidence intervals, shared by every stage that reports a mean.

"Every score carries n and a confidence interval": this is the one place that computes
them, so reference metrics, judge summaries and the leaderboard agree on method and seed.
The bootstrap is vectorised (resample counts drawn as a matrix), never a Python loop over
resamples x items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 20250521  # fixed so that the same inputs give the same interval
_CHUNK = 256


@dataclass(frozen=True)
class MeanCI:
    """A mean with its percentile-bootstrap confidence interval and sample size."""

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    level: float = 0.95

    def as_dict(self) -> dict:
        return asdict(self)


def bootstrap_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Means of ``resamples`` bootstrap resamples of ``values`` (1-D), in chunks."""
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    out = np.empty(resamples, dtype=float)
    for start in range(0, resamples, _CHUNK):
        stop = min(start + _CHUNK, resamples)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=np.int32 if n < 2**31 else np.int64)
        out[start:stop] = values[idx].mean(axis=1)
    return out


def mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> MeanCI:
    """Mean of the finite ``values`` with a percentile bootstrap CI.

    Non-finite values (NaN for "not computed") are excluded and do not count towards n.
    With fewer than two values the interval is undefined and reported as ``None``.
    """
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    n = int(arr.size)
    if n == 0:
        return MeanCI(None, None, None, 0, level)
    mean = float(arr.mean())
    if n < 2:
        return MeanCI(mean, None, None, n, level)
    means = bootstrap_means(arr, resamples, seed)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return MeanCI(mean, float(low), float(high), n, level)


@lru_cache(maxsize=8)
def bootstrap_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, n)`` counts: how often each of ``n`` units is drawn in each resample.

    Any statistic that is a weighted sum over units (coincidence matrices, moments) is then
    bootstrapped with one matrix product instead of a Python loop over resamples x units.
    The result depends only on its arguments, so it is cached (and read-only).
    """
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    flat = idx + (np.arange(resamples)[:, None] * n)
    weights = np.bincount(flat.ravel(), minlength=resamples * n).reshape(resamples, n).astype(np.float64)
    weights.setflags(write=False)
    return weights


def percentile_ci(samples: np.ndarray, level: float = 0.95) -> tuple[float | None, float | None]:
    """Percentile interval of bootstrap replicates, ignoring undefined (NaN) replicates."""
    finite = samples[np.isfinite(samples)]
    if finite.size < max(10, samples.size // 2):
        return None, None
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(low), float(high)
