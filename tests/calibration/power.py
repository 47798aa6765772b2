"""How sharp each calibration assertion is: its bounds, and the exact binomial probability that a
method with a stated defect still passes it.

An assertion runs ``reps`` simulated studies and compares the rate it measures with bounds at
``z`` Monte Carlo standard errors of the nominal rate (``z`` is the Bonferroni value over the
row's cells, :func:`z_for`). The *defect* an assertion must catch is fixed here, once: an
interval whose coverage is 5 points below its nominal (90 % for a 95 % interval), or a test
whose size is twice its nominal (10 % for a 5 % test). :func:`caught` is the probability that
such a method fails the assertion; the suite requires at least :data:`REQUIRED` for every
assertion that carries a claim (``conftest.assert_coverage`` / ``assert_level``), and the power
table of docs/statistics.md is computed from it at the sizes the suite ran.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

REQUIRED = 0.8  # a stated defect fails an assertion with at least this probability
COVERAGE_DEFECT = 0.05  # points of coverage below nominal
WIDE_COVERAGE = 0.99  # the "too wide" defect reported for two-sided coverage checks


def z_for(cells: int) -> float:
    """Two standard errors for one cell; the Bonferroni value ``Phi^-1(1 - 0.025 / cells)`` over more."""
    from scipy import stats

    return max(2.0, float(stats.norm.isf(0.025 / max(cells, 1))))


def mc_se(rate: float, reps: int) -> float:
    """The Monte Carlo standard error of a rate measured over ``reps`` studies."""
    return math.sqrt(max(rate * (1 - rate), 1e-12) / reps)


@dataclass(frozen=True)
class Bounds:
    """An assertion's acceptance region for a rate measured over ``reps`` studies."""

    kind: str  # "coverage" or "level"
    nominal: float
    reps: int
    cells: int
    floor: float  # 0 for a level
    ceiling: float  # 1 for a one-sided coverage check

    @classmethod
    def of(cls, kind: str, nominal: float, reps: int, cells: int, ceiling: float | None = None) -> Bounds:
        """Coverage: ``nominal -+ z se`` (two-sided; ``ceiling`` replaces the upper bound of a
        method that is conservative by construction). Level: at most ``nominal + z se``."""
        half = z_for(cells) * mc_se(nominal, reps)
        if kind == "coverage":
            top = min(1.0, nominal + half) if ceiling is None else ceiling
            return cls(kind, nominal, reps, cells, nominal - half, top)
        return cls(kind, nominal, reps, cells, 0.0, nominal + half)

    def accepts(self, rate: float) -> bool:
        return self.floor <= rate <= self.ceiling

    def pass_probability(self, true_rate: float) -> float:
        """The exact binomial probability that a method whose true rate is ``true_rate`` passes."""
        from scipy import stats

        low = math.ceil(self.floor * self.reps - 1e-9)
        high = math.floor(self.ceiling * self.reps + 1e-9)
        if high < low:
            return 0.0
        return float(stats.binom.cdf(high, self.reps, true_rate) - stats.binom.cdf(low - 1, self.reps, true_rate))

    def defect(self) -> float:
        """The rate of the defect this assertion must catch."""
        return self.nominal - COVERAGE_DEFECT if self.kind == "coverage" else 2 * self.nominal

    def caught(self) -> float:
        """The probability that the defect (:meth:`defect`) fails this assertion."""
        return 1.0 - self.pass_probability(self.defect())

    def caught_wide(self) -> float | None:
        """For a two-sided coverage check: the probability that a 99 %-coverage interval fails."""
        if self.kind != "coverage" or self.ceiling >= WIDE_COVERAGE:
            return None
        return 1.0 - self.pass_probability(WIDE_COVERAGE)
