"""The statistics take their distribution functions from ``scipy.special``, bit for bit what
``scipy.stats`` gives, without importing ``scipy.stats`` (0.7 s of CPU in every build).

Why a test: ``scipy.stats.norm.ppf`` is ``ndtri``, ``norm.sf(x)`` is ``ndtr(-x)``,
``t.isf(q, df)`` is ``-stdtrit(df, q)``, ``t.sf(x, df)`` is ``stdtr(df, -x)`` and
``beta.ppf(q, a, b)`` is boost's beta quantile, which ``betaincinv(a, b, q)`` also computes;
a scipy release that changes one of them fails here rather than moving a board's intervals.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from tide_bench.core import stats as core

SETTINGS = settings(max_examples=300, derandomize=True, deadline=None, database=None)
LEVELS = st.sampled_from([0.8, 0.9, 0.95, 0.99, 0.5])


def _same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


@SETTINGS
@given(
    n=st.floats(0.01, 5000, allow_nan=False),
    share=st.one_of(st.just(0.0), st.floats(1e-9, 1)),  # scipy.stats overflows on subnormal counts
    level=LEVELS,
)
def test_clopper_pearson_is_scipy_stats_beta(n: float, share: float, level: float) -> None:
    events = n * share
    alpha = 1 - level
    x = min(max(events, 0.0), n)
    low = 0.0 if x <= 0 else float(stats.beta.ppf(alpha / 2, x, n - x + 1))
    high = 1.0 if x >= n else float(stats.beta.ppf(1 - alpha / 2, x + 1, n - x))
    assert core.clopper_pearson_interval(events, n, level) == (low, high)


@SETTINGS
@given(n_units=st.integers(2, 100_000), level=LEVELS)
def test_expanded_tail_is_scipy_stats_t_and_norm(n_units: int, level: float) -> None:
    alpha = (1 - level) / 2
    expected = float(stats.norm.sf(math.sqrt(n_units / (n_units - 1)) * stats.t.isf(alpha, n_units - 1)))
    assert core.expanded_tail.__wrapped__(level, n_units) == expected


EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-300, 1e300]


@SETTINGS
@given(
    estimate=st.lists(st.one_of(st.floats(-1e6, 1e6), st.sampled_from(EDGES)), min_size=1, max_size=8),
    data=st.data(),
)
def test_t_pvalues_are_scipy_stats_t(estimate: list[float], data: st.DataObject) -> None:
    n = len(estimate)
    se = np.array(data.draw(st.lists(st.one_of(st.floats(0, 1e3), st.sampled_from(EDGES)), min_size=n, max_size=n)))
    df = np.array(data.draw(st.lists(st.one_of(st.floats(0, 1e4), st.just(math.nan)), min_size=n, max_size=n)))
    est = np.array(estimate)
    with np.errstate(all="ignore"):
        p = 2.0 * stats.t.sf(np.abs(est) / se, np.maximum(df, 1.0))
        p = np.where(se == 0, np.where(est == 0, 1.0, 0.0), p)
        expected = np.where(np.isfinite(est) & np.isfinite(se) & (df >= 1), p, np.nan)
        assert np.array_equal(core.t_pvalues(est, se, df), expected, equal_nan=True)


@SETTINGS
@given(p=st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1.0, 0.5, 0.975, 0.025, 1e-300])))
def test_normal_quantile_is_scipy_stats_norm(p: float) -> None:
    assert _same(core._normal_quantile(p), float(stats.norm.ppf(p)))


def test_the_statistics_and_their_preload_import_no_scipy_stats() -> None:
    """What a build calls (the preload before its workers fork, the intervals, the p-values)
    leaves ``scipy.stats`` unimported."""
    code = (
        "import sys, numpy as np\n"
        "from tide_bench.core import stats\n"
        "stats.preload()\n"
        "stats.clopper_pearson_interval(3.0, 100.0)\n"
        "stats.expanded_tail(0.95, 100)\n"
        "stats.t_pvalues(np.array([0.5]), np.array([0.1]), np.array([10.0]))\n"
        "stats._normal_quantile(0.975)\n"
        "stats.proportion_ci([0, 1, 0, 0], method='clopper-pearson')\n"
        "stats.clustered_means(np.arange(20.0).reshape(10, 2), np.arange(10) % 5, 5, resamples=50, seed=1)\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
