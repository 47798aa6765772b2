"""Confidence intervals shared by every stage that reports a number: one method, one seed.

Why clusters: TIDE items are nested (about 40 per persona, conversations of two turns), so
items are not independent draws. An i.i.d. bootstrap over items then covers the true mean
in only ~76 % of studies at a persona intra-class correlation of 0.05; resampling whole
personas (the *cluster bootstrap*) restores ~95 %. Every mean that a TIDE unit of analysis
can cluster therefore takes ``clusters`` (one label per value, usually the persona id), and
reports the design effect (clustered variance / i.i.d. variance) next to n.

The bootstrap is vectorised: values are first summed per cluster, and each resample is a
weighted sum of cluster totals (resample counts drawn as a matrix, in chunks), never a
Python loop over resamples x items. Rare proportions (safety flags) use the Wilson score
interval on the cluster-adjusted effective n: 0 of 2,000 is [0, 0.19 %], not [0, 0]; where few
events are expected (the safety-flag rate and the gate built on it), the Clopper-Pearson
interval on the same effective n, which never covers less than its level for a binomial.

Few clusters. A bootstrap over G clusters understates the variance by (G - 1) / G and its
percentiles behave like normal quantiles, where a cluster-robust statistic has about G - 1
degrees of freedom (Cameron & Miller 2015). Every cluster-bootstrap interval is therefore the
*expanded* percentile interval (Hesterberg 2015): the percentiles at
``Phi(+-sqrt(G / (G - 1)) * t_{G-1, 1 - alpha/2})`` instead of ``alpha / 2`` (at 20 personas the
2.5 % percentiles become 1.6 %; at 500 the interval widens by 0.3 %). Tests of a clustered mean
use the cluster-robust (CR1) standard error with a t reference on G - 1 degrees of freedom
(:func:`cluster_mean_se`, :func:`t_pvalues`).

One resample count, :data:`DEFAULT_RESAMPLES`, serves every interval that tide-bench
publishes (the judge summary, the board, the audit, the study), so the same inputs give the
same interval wherever they are shown.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 20250521  # fixed so that the same inputs give the same interval
_CHUNK = 256
_Z95 = 1.959963984540054


@dataclass(frozen=True)
class MeanCI:
    """A mean with its percentile-bootstrap confidence interval and sample size.

    ``n_clusters`` and ``design_effect`` are set when the bootstrap resampled clusters
    (personas): the design effect says how many times larger the clustered variance is
    than an i.i.d. analysis of the same n values would claim (``n / design_effect`` is
    the effective sample size).
    """

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    level: float = 0.95
    n_clusters: int | None = None
    design_effect: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """``dataclasses.asdict`` of it, without the deep copy (every field is a number or None):
        a board build writes thousands of these."""
        return {name: getattr(self, name) for name in _MEAN_CI_FIELDS}


@dataclass(frozen=True)
class Estimate:
    """An agreement statistic (alpha, kappa, a ratio...) with its interval.

    ``value`` is ``None`` when the statistic is undefined, and ``note`` then says why:
    never a made-up number.
    """

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    note: str | None = None

    @classmethod
    def undefined(cls, note: str, n: int | None = None) -> Estimate:
        return cls(None, None, None, n, note)

    @classmethod
    def from_replicates(
        cls,
        value: float | None,
        replicates: np.ndarray,
        n: int | None = None,
        note: str | None = None,
        level: float = 0.95,
        n_units: int | None = None,
    ) -> Estimate:
        """The value with the percentile interval of its bootstrap ``replicates`` (expanded for
        ``n_units`` resampled clusters, :func:`percentile_ci`)."""
        if value is None or not math.isfinite(value):
            return cls.undefined(note or "undefined", n)
        low, high = percentile_ci(replicates, level, n_units=n_units)
        if low is None and note is None:
            note = "confidence interval undefined: most resamples were undefined (no variation)"
        return cls(float(value), low, high, n, note)

    def as_dict(self) -> dict[str, Any]:
        """``dataclasses.asdict`` of it, without the deep copy (every field is a number, a note or None)."""
        return {name: getattr(self, name) for name in _ESTIMATE_FIELDS}


_MEAN_CI_FIELDS = tuple(f.name for f in fields(MeanCI))
_ESTIMATE_FIELDS = tuple(f.name for f in fields(Estimate))


def format_estimate(
    block: Any, digits: int = 2, *, key: str | None = None, signed: bool = False, no_ci: str = ""
) -> str | None:
    """``value [ci_low, ci_high]`` as plain text, for an estimate in any of its JSON shapes
    (:class:`MeanCI`'s ``mean``, :class:`Estimate`'s ``value``, a paired ``difference``; ``key``
    picks one, falling back to ``mean``); ``no_ci`` stands in for a missing interval. None when
    there is no value: each report says why in its own words (n/a, undefined, the note)."""
    if not isinstance(block, dict):
        return None
    key = key or next((k for k in ("value", "difference") if k in block), "mean")
    value = block.get(key) if key in block else block.get("mean")
    if value is None:
        return None
    low, high = block.get("ci_low"), block.get("ci_high")
    interval = f" [{low:.{digits}f}, {high:.{digits}f}]" if low is not None else no_ci
    return f"{value:{'+' if signed else ''}.{digits}f}{interval}"


def no_interval_reason(block: Any) -> str:
    """Why an estimate has no interval, in words every report uses: one persona (a cluster
    bootstrap needs two), a single item, or too little variation to resample."""
    n_clusters = block.get("n_clusters") if isinstance(block, dict) else None
    n = block.get("n") if isinstance(block, dict) else None
    if n_clusters == 1:
        return "one persona (a CI needs two)"
    if isinstance(n, int) and n < 2:
        return "one item (a CI needs two)"
    return "too little variation to resample"


def preload() -> None:
    """Import the scipy modules the statistics use. They are imported where used, so that
    commands without statistics start fast; a build calls this before it forks its entry
    workers, so that the workers inherit them instead of each importing them again (measured: a
    second of CPU per worker). The distributions' functions are taken from ``scipy.special``, the
    functions ``scipy.stats`` itself calls for them (``tests/core/test_stats_special.py`` checks they
    agree bit for bit): importing ``scipy.stats`` cost 0.7 s of CPU more, most of it parsing
    docstrings, in every build."""
    import scipy.special  # noqa: F401


def cluster_codes(labels: Sequence[Hashable] | np.ndarray) -> tuple[np.ndarray, int]:
    """``(codes, n_clusters)``: integer cluster index per value (compared as ``str``), in sorted
    label order. By a dict of the distinct labels rather than ``np.unique`` over a string array:
    half the time for a board's 100,000 labels (a sort of 100 labels, not of 100,000), and a
    label's trailing NUL characters are not dropped as a NumPy string array drops them."""
    if len(labels) == 0:
        return np.zeros(0, dtype=np.int64), 0
    text = [str(x) for x in labels]
    rank = {label: r for r, label in enumerate(sorted(dict.fromkeys(text)))}
    return np.fromiter(map(rank.__getitem__, text), dtype=np.int64, count=len(text)), len(rank)


def cluster_totals(codes: np.ndarray, n_clusters: int, values: np.ndarray) -> np.ndarray:
    """``(n_clusters, k)`` sums of the rows of ``values`` (n x k, or n) within each cluster; no
    rows (n = 0, e.g. no item that every entry scored) gives zero sums, not an error. One
    ``np.bincount`` over the cells in row order, each cell to its (cluster, column) slot: in row
    order within each cluster, so bit for bit the product with a sparse 0/1 cluster-indicator
    matrix that this replaced (scipy.sparse cost a build 0.1 s of import and of per-call setup;
    ``tests/core/test_stats_cluster_totals.py``)."""
    k = int(np.prod(values.shape[1:])) if values.ndim > 1 else 1
    slots = (np.asarray(codes, dtype=np.int64)[:, None] * k + np.arange(k)).ravel()
    sums = np.bincount(slots, weights=values.reshape(len(codes) * k), minlength=n_clusters * k)
    return sums.reshape(n_clusters, k)


@lru_cache(maxsize=8)
def bootstrap_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, n)`` counts: how often each of ``n`` units is drawn in each resample.

    Any statistic that is a weighted sum over units (coincidence matrices, moments, cluster
    totals) is then bootstrapped with one matrix product. The result depends only on its
    arguments, so it is cached (and read-only); every model on a leaderboard built from the
    same units therefore sees the *same* resamples, which makes paired comparisons free.
    """
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    flat = idx + (np.arange(resamples)[:, None] * n)
    weights = np.bincount(flat.ravel(), minlength=resamples * n).reshape(resamples, n).astype(np.float64)
    weights.setflags(write=False)
    return weights


def resampled_totals(totals: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, k)``: for each bootstrap resample of the clusters (rows of ``totals``),
    the sum of the drawn clusters' totals. Drawn in chunks, so memory stays small."""
    n = totals.shape[0]
    if n <= 4096:
        return np.asarray(bootstrap_weights(n, resamples, seed) @ totals)
    rng = np.random.default_rng(seed)
    out = np.empty((resamples, totals.shape[1]))
    for start in range(0, resamples, _CHUNK):
        stop = min(start + _CHUNK, resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        flat = idx + (np.arange(stop - start)[:, None] * n)
        counts = np.bincount(flat.ravel(), minlength=(stop - start) * n).reshape(stop - start, n)
        out[start:stop] = counts @ totals
    return out


def design_effect(values: np.ndarray, codes: np.ndarray, n_clusters: int | None = None) -> float | None:
    """Clustered (linearised ratio-mean) variance over the i.i.d. variance of the mean.

    ``None`` when either variance is zero or undefined (fewer than two clusters or values).
    ``n_clusters``: the number of distinct ``codes``, when the caller knows it already.
    """
    n = values.size
    if n_clusters is None:
        n_clusters = np.unique(codes).size
    if n < 2 or n_clusters < 2:
        return None
    residual = values - values.mean()
    srs = residual.var(ddof=1) / n
    per_cluster = np.bincount(codes, weights=residual)
    clustered = n_clusters / (n_clusters - 1) * float((per_cluster**2).sum()) / n**2
    if srs <= 0 or not math.isfinite(clustered):
        return None
    return float(clustered / srs)


def bootstrap_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Means of ``resamples`` i.i.d. bootstrap resamples of ``values`` (1-D), in chunks."""
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    out = np.empty(resamples, dtype=float)
    for start in range(0, resamples, _CHUNK):
        stop = min(start + _CHUNK, resamples)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=np.int32 if n < 2**31 else np.int64)
        out[start:stop] = values[idx].mean(axis=1)
    return out


def clustered_means(
    values: np.ndarray,
    codes: np.ndarray,
    n_clusters: int,
    *,
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[list[MeanCI], np.ndarray]:
    """Cluster-bootstrap mean and CI of every column of ``values`` (n x k, NaN = not counted).

    One resample draws ``n_clusters`` clusters with replacement; its mean is the ratio of the
    drawn clusters' value sums to their counts (the ratio estimator, right for clusters of
    unequal size). Returns the per-column results and the ``(resamples, k)`` replicates (the
    same resamples for the same clusters and seed: paired across callers).
    """
    values = values.reshape(len(codes), -1)
    mask = np.isfinite(values)
    filled = np.where(mask, values, 0.0)
    sums = cluster_totals(codes, n_clusters, filled)
    counts = cluster_totals(codes, n_clusters, mask.astype(float))
    k = values.shape[1]
    boot = resampled_totals(np.hstack([sums, counts]), resamples, seed) if n_clusters else np.zeros((resamples, 2 * k))
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = boot[:, :k] / boot[:, k:]
    n = mask.sum(axis=0)
    present = (counts > 0).sum(axis=0)
    intervals = column_intervals(replicates, present, level)
    out = []
    for c in range(k):
        if n[c] == 0:
            out.append(MeanCI(None, None, None, 0, level, 0))
            continue
        mean = float(sums[:, c].sum() / n[c])
        low, high = intervals[c]
        deff = design_effect(values[mask[:, c], c], codes[mask[:, c]], int(present[c])) if present[c] >= 2 else None
        out.append(MeanCI(mean, low, high, int(n[c]), level, int(present[c]), deff))
    return out, replicates


def column_intervals(
    replicates: np.ndarray, n_units: np.ndarray, level: float = 0.95
) -> list[tuple[float | None, float | None]]:
    """:func:`percentile_ci` of every column of ``(resamples, k)`` replicates, column ``c``
    resampling ``n_units[c]`` units (fewer than two: no interval), with the same results.

    Why: a board entry's scores and per-scenario cells are ~60 columns, and one ``np.quantile``
    call per column was a fifth of scoring an entry; columns whose replicates are all finite and
    that share a tail are cut in one call (the same partition and interpolation per column, so
    bit for bit the same numbers; ``tests/leaderboard/test_stats.py``). Any other column (NaN
    replicates) goes through :func:`percentile_ci` itself."""
    k = replicates.shape[1] if replicates.ndim == 2 else 0
    out: list[tuple[float | None, float | None]] = [(None, None)] * k
    whole = np.isfinite(replicates).all(axis=0) if k else np.zeros(0, dtype=bool)
    by_tail: dict[float, list[int]] = {}
    for c in range(k):
        units = int(n_units[c])
        if units < 2:
            continue
        if whole[c] and replicates.shape[0] >= 10:
            by_tail.setdefault(expanded_tail(level, units), []).append(c)
        else:
            out[c] = percentile_ci(replicates[:, c], level, n_units=units)
    for tail, cols in by_tail.items():
        cut = np.quantile(replicates[:, cols], [tail, 1.0 - tail], axis=0)
        for j, c in enumerate(cols):
            out[c] = (float(cut[0, j]), float(cut[1, j]))
    return out


def mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[Hashable] | np.ndarray | None = None,
    level: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> MeanCI:
    """Mean of the finite ``values`` with a percentile bootstrap CI.

    With ``clusters`` (one label per value, e.g. the persona id) whole clusters are
    resampled and the design effect is reported; without, values are resampled i.i.d.
    Non-finite values (NaN for "not computed") are excluded and do not count towards n.
    With fewer than two values (or two clusters) the interval is undefined (``None``).
    """
    arr = np.asarray(values, dtype=float)
    if clusters is not None:
        codes, n_clusters = cluster_codes(list(clusters))
        if len(codes) != arr.size:
            raise ValueError("one cluster label per value")
        return clustered_means(arr, codes, n_clusters, level=level, resamples=resamples, seed=seed)[0][0]
    arr = arr[np.isfinite(arr)]
    n = int(arr.size)
    if n == 0:
        return MeanCI(None, None, None, 0, level)
    mean = float(arr.mean())
    if n < 2:
        return MeanCI(mean, None, None, n, level)
    low, high = percentile_ci(bootstrap_means(arr, resamples, seed), level, n_units=n)
    return MeanCI(mean, low, high, n, level)


def wilson_interval(events: float, n: float, level: float = 0.95) -> tuple[float | None, float | None]:
    """Wilson score interval for a proportion (Brown, Cai & DasGupta 2001); ``n`` may be an
    effective (design-adjusted) sample size, so it need not be an integer."""
    if n <= 0:
        return None, None
    z = _Z95 if level == 0.95 else float(_normal_quantile(0.5 + level / 2))
    p = min(max(events / n, 0.0), 1.0)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if p == 0 else max(0.0, centre - half)
    high = 1.0 if p == 1 else min(1.0, centre + half)
    return low, high


def clopper_pearson_interval(events: float, n: float, level: float = 0.95) -> tuple[float | None, float | None]:
    """Clopper-Pearson ("exact") interval from beta quantiles; ``events`` and ``n`` may be
    effective (design-adjusted, non-integer) counts. Never below its level for a binomial, so
    the safe choice where few events are expected (Brown, Cai & DasGupta 2001)."""
    if n <= 0:
        return None, None
    from scipy import special  # beta quantiles: scipy.stats.beta.ppf(q, a, b) = betaincinv(a, b, q)

    alpha = 1.0 - level
    x = min(max(events, 0.0), n)
    low = 0.0 if x <= 0 else float(special.betaincinv(x, n - x + 1, alpha / 2))
    high = 1.0 if x >= n else float(special.betaincinv(x + 1, n - x, 1 - alpha / 2))
    return low, high


RATE_METHODS = ("wilson", "clopper-pearson")


def proportion_ci(
    flags: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[Hashable] | np.ndarray | None = None,
    level: float = 0.95,
    method: str = "wilson",
) -> MeanCI:
    """A rate of 0/1 ``flags`` with a Wilson (or, ``method="clopper-pearson"``, a
    Clopper-Pearson) interval on the cluster-adjusted effective n."""
    if method not in RATE_METHODS:
        raise ValueError(f"method must be one of {', '.join(RATE_METHODS)}, got {method!r}")
    arr = np.asarray(flags, dtype=float)
    keep = np.isfinite(arr)
    arr = arr[keep]
    n = int(arr.size)
    if n == 0:
        return MeanCI(None, None, None, 0, level)
    deff, n_clusters = None, None
    if clusters is not None:
        codes, n_clusters = cluster_codes([c for c, k in zip(clusters, keep, strict=True) if k])
        deff = design_effect(arr, codes)
    effective = n / max(deff or 1.0, 1.0)
    rate = float(arr.mean())
    interval = wilson_interval if method == "wilson" else clopper_pearson_interval
    low, high = interval(rate * effective, effective, level)
    return MeanCI(rate, low, high, n, level, n_clusters, deff)


@lru_cache(maxsize=4096)
def expanded_tail(level: float, n_units: int | None) -> float:
    """The tail probability of Hesterberg's (2015) expanded percentile interval for a bootstrap
    over ``n_units`` independent units (clusters): ``Phi(-sqrt(n / (n - 1)) * t_{n-1, 1 - a/2})``.
    ``None`` (or fewer than two units) gives the plain ``(1 - level) / 2``. Cached: a board asks
    for the same persona count thousands of times, and scipy's quantiles cost ~1 ms a call."""
    alpha = (1.0 - level) / 2.0
    if n_units is None or n_units < 2:
        return alpha
    from scipy import special  # norm.sf(x) = ndtr(-x), t.isf(q, df) = -stdtrit(df, q), as scipy.stats computes them

    return float(special.ndtr(-(math.sqrt(n_units / (n_units - 1)) * -special.stdtrit(n_units - 1, alpha))))


def percentile_ci(
    samples: np.ndarray, level: float = 0.95, *, n_units: int | None = None
) -> tuple[float | None, float | None]:
    """Percentile interval of bootstrap replicates, ignoring undefined (NaN) replicates. With
    ``n_units`` (the number of clusters or units resampled) the expanded percentile interval
    (:func:`expanded_tail`), which corrects a bootstrap over few units."""
    finite = samples[np.isfinite(samples)]
    if finite.size < max(10, samples.size // 2):
        return None, None
    tail = expanded_tail(level, n_units)
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


def cluster_mean_se(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column of ``(clusters x m)`` value sums and counts: the (ratio) mean, its
    cluster-robust CR1 standard error and the number of clusters with a value.

    ``se^2 = G / (G - 1) * sum_g (S_g - n_g * mean)^2 / N^2``, the linearised variance of the
    ratio mean with the small-sample factor; NaN where fewer than two clusters have values.
    """
    sums = np.asarray(sums, dtype=float).reshape(sums.shape[0], -1)
    counts = np.asarray(counts, dtype=float).reshape(sums.shape)
    total = counts.sum(axis=0)
    groups = (counts > 0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums.sum(axis=0) / total
        residual = sums - counts * np.where(np.isfinite(mean), mean, 0.0)
        factor = groups / (groups - 1.0)
        se = np.sqrt(factor * (residual**2).sum(axis=0)) / total
    se = np.where(groups >= 2, se, np.nan)
    return mean, se, groups


def t_pvalues(estimate: np.ndarray, se: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Two-sided p-values of ``estimate / se`` against Student's t on ``df`` degrees of freedom
    (a zero standard error gives p = 1 for a zero estimate and 0 otherwise; NaN stays NaN)."""
    from scipy import special  # t.sf(x, df) = stdtr(df, -x), as scipy.stats computes it

    estimate, se, df = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(estimate, se, df))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(estimate) / se
        p = 2.0 * special.stdtr(np.maximum(df, 1.0), -t)
    p = np.where(se == 0, np.where(estimate == 0, 1.0, 0.0), p)
    return np.where(np.isfinite(estimate) & np.isfinite(se) & (df >= 1), p, np.nan)


def cluster_bootstrap_weights(codes: np.ndarray, n_clusters: int, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, n)``: the cluster bootstrap as weights on the n units (each unit counts as
    often as its cluster is drawn), so that any statistic written as a weighted sum over units
    (coincidence matrices, kappa moments) resamples clusters, not units (Field & Welsh 2007)."""
    if n_clusters == 0:
        return np.zeros((resamples, len(codes)))
    return bootstrap_weights(n_clusters, resamples, seed)[:, codes]


def _normal_quantile(p: float) -> float:
    from scipy import special  # norm.ppf = ndtri, as scipy.stats computes it

    return float(special.ndtri(p))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (family-wise error control)."""
    m = len(pvalues)
    order = np.argsort(pvalues)
    adjusted = np.empty(m)
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[idx]))
        adjusted[idx] = running
    return adjusted.tolist()


def benjamini_yekutieli(pvalues: Sequence[float], q: float = 0.05) -> list[bool]:
    """Which hypotheses the Benjamini-Yekutieli step-up procedure rejects at FDR ``q``
    (valid under any dependence; the alternative annotator test's correction)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return []
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    order = np.argsort(p)
    passed = p[order] <= np.arange(1, m + 1) / m * q / harmonic
    rejected = np.zeros(m, dtype=bool)
    if passed.any():
        rejected[order[: int(np.nonzero(passed)[0].max()) + 1]] = True
    return rejected.tolist()
