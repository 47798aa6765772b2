"""The suite's own yardstick (``power.py``): the bounds of an assertion and the exact probability
that a miscalibrated method passes it, against the statistics review's independent tolerance
analysis (statistics-kit/s12_suite_tolerance.py, its table in §2.2 of the round-3 review)."""

from __future__ import annotations

import pytest

from tests.calibration.power import REQUIRED, Bounds, z_for


@pytest.mark.parametrize(
    ("kind", "reps", "cells", "bound", "true_rates", "passes"),
    [
        # the review's s12 rows (one-sided, as the suite was then): P(pass) at the stated true rates
        ("coverage", 200, 4, 0.912, (0.93, 0.90, 0.85), (0.84, 0.28, 0.00)),
        ("coverage", 100, 2, 0.901, (0.93, 0.90, 0.85), (0.84, 0.45, 0.06)),
        ("level", 40, 2, 0.127, (0.075, 0.10, 0.12), (0.92, 0.79, 0.65)),
        ("level", 1000, 12, 0.070, (0.075, 0.10, 0.12), (0.26, 0.00, 0.00)),
    ],
)
def test_pass_probabilities_agree_with_the_reviews_tolerance_analysis(
    kind: str, reps: int, cells: int, bound: float, true_rates: tuple, passes: tuple
) -> None:
    one_sided = Bounds.of(kind, 0.95 if kind == "coverage" else 0.05, reps, cells, ceiling=1.0)
    assert (one_sided.floor if kind == "coverage" else one_sided.ceiling) == pytest.approx(bound, abs=5e-4)
    for rate, expected in zip(true_rates, passes, strict=True):
        assert one_sided.pass_probability(rate) == pytest.approx(expected, abs=0.006)


def test_the_old_fast_cells_were_too_small_and_the_new_ones_are_not() -> None:
    """Round 2's fast sizes (rows 9-10: 40 studies, 2 cells; row 7: 100, 2) would fail the power
    requirement; 250 and 300 studies meet it."""
    assert Bounds.of("level", 0.05, 40, 2).caught() < REQUIRED
    assert Bounds.of("coverage", 0.95, 100, 2).caught() < REQUIRED
    assert Bounds.of("level", 0.05, 250, 1).caught() >= REQUIRED
    assert Bounds.of("coverage", 0.95, 300, 2).caught() >= REQUIRED


def test_coverage_is_checked_on_both_sides() -> None:
    """A 99.9 % interval passed every one-sided check (mutation M13); two-sided, it fails."""
    bounds = Bounds.of("coverage", 0.95, 1000, 4)
    assert bounds.ceiling == pytest.approx(0.95 + z_for(4) * (0.95 * 0.05 / 1000) ** 0.5)
    assert not bounds.accepts(0.999) and bounds.accepts(0.95) and not bounds.accepts(0.90)
    assert bounds.caught_wide() == pytest.approx(1.0)
    assert Bounds.of("coverage", 0.95, 1000, 4, ceiling=1.0).caught_wide() is None  # conservative by construction
    assert z_for(1) == 2.0 and z_for(10) == pytest.approx(2.807, abs=1e-3)
