"""Rows 1-2 of the review: the board's mean blocks (empathy, factors, reference metrics,
safety-adjusted, per scenario) and their design effect.

``clustered_means`` is what ``leaderboard.scoring.scores.score_entry`` (and, through ``mean_ci``, the
judge summary and the study) calls: a persona-cluster bootstrap with the board's resamples and
seed, expanded for few personas. Latent ``3 + 0.8 (sqrt(ICC) u_p + sqrt(1 - ICC) e_i)``, overall
score = mean of three rounded factors, so the population mean is exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.calibration.conftest import Mode, assert_coverage, record_value
from tests.calibration.sim import overall, overall_mean, personas, seed_of
from tide_bench.core.stats import DEFAULT_SEED, cluster_codes, clustered_means
from tide_bench.leaderboard.scoring.scores import RESAMPLES

MU, SD = 3.0, 0.8
TRUTH = overall_mean(MU, SD)
UNEQUAL = 1 + np.random.default_rng(5).poisson(9, 100)  # 1..~25 items per persona

FAST = [(0.2, 50, 20), (0.5, 200, 4), (0.5, 20, 20), (0.2, "unequal", None)]
FULL = [(icc, p, m) for icc in (0.0, 0.2, 0.5) for p in (50, 200, 500) for m in (4, 20)] + [
    (0.5, 20, 20),
    (0.5, "unequal", None),
]


N_CELLS = len(FAST) + len([c for c in FULL if c not in FAST])


def _scores(rng: np.random.Generator, persona: np.ndarray, icc: float) -> np.ndarray:
    n_p = int(persona.max()) + 1
    latent = MU + SD * (np.sqrt(icc) * rng.normal(size=n_p)[persona] + np.sqrt(1 - icc) * rng.normal(size=persona.size))
    return overall(latent, rng)


def _design(n_personas: int | str, per: int | None) -> np.ndarray:
    return personas(100, UNEQUAL) if n_personas == "unequal" else personas(int(n_personas), int(per or 1))


@pytest.mark.parametrize(
    ("icc", "n_personas", "per"),
    [pytest.param(*c, id=f"icc{c[0]}-{c[1]}x{c[2]}") for c in FAST]
    + [pytest.param(*c, id=f"icc{c[0]}-{c[1]}x{c[2]}", marks=pytest.mark.full_only) for c in FULL if c not in FAST],
)
def test_row1_board_mean_interval_covers(mode: Mode, icc: float, n_personas: int | str, per: int | None) -> None:
    reps = mode.reps(1000, 1000)  # cheap (vectorised): the same size in both modes
    rng = np.random.default_rng(seed_of("row1", icc, n_personas, per))
    persona = _design(n_personas, per)
    codes, n_clusters = cluster_codes(persona.astype(str).tolist())
    hits = 0
    for _ in range(reps):
        (ci,), _ = clustered_means(
            _scores(rng, persona, icc)[:, None], codes, n_clusters, resamples=RESAMPLES, seed=DEFAULT_SEED
        )
        hits += ci.ci_low <= TRUTH <= ci.ci_high
    label = f"board mean CI, ICC {icc}, {n_personas} x {per or 'unequal'}"
    assert_coverage("1", label, hits, reps, cells=mode.cells(len(FAST), N_CELLS))


def _observed_icc(rng: np.random.Generator, icc: float) -> float:
    """One-way ANOVA ICC of the observed overall score (4,000 personas x 10 items)."""
    y = _scores(rng, personas(4000, 10), icc).reshape(4000, 10)
    means = y.mean(axis=1)
    msb = 10 * means.var(ddof=1)
    msw = ((y - means[:, None]) ** 2).sum() / (4000 * 9)
    return float((msb - msw) / (msb + 9 * msw))


@pytest.mark.parametrize(("icc", "per"), [(0.2, 20), (0.5, 4)])
def test_row2_design_effect_matches_theory(mode: Mode, icc: float, per: int) -> None:
    """The reported design effect against 1 + (m - 1) ICC of the observed scores."""
    reps = mode.reps(150, 500)
    rng = np.random.default_rng(20261201 + per)
    theory = 1 + (per - 1) * _observed_icc(rng, icc)
    persona = personas(200, per)
    codes, n_clusters = cluster_codes(persona.astype(str).tolist())
    deffs = np.array(
        [
            clustered_means(_scores(rng, persona, icc)[:, None], codes, n_clusters, resamples=10)[0][0].design_effect
            for _ in range(reps)
        ]
    )
    record_value(
        "2", f"mean design effect, theory {theory:.2f}, ICC {icc}, 200 x {per}", float(deffs.mean()), reps, rate=False
    )
    se = deffs.std(ddof=1) / np.sqrt(reps)
    # two MC standard errors, plus 3 % for the ICC's own estimate and the ratio estimator's small bias
    assert abs(deffs.mean() - theory) <= 2 * se + 0.03 * theory, (deffs.mean(), theory)
