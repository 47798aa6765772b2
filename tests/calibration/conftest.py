"""The calibration suite: seeded simulations of every number tide-bench publishes.

Fast by default (sizes that run in CI in minutes); ``pytest tests/calibration --full`` (or
``TIDE_BENCH_CALIBRATION=full``) runs the Monte Carlo sizes of the statistics review
(docs/statistics.md). Each test asserts that the measured rate is within two Monte Carlo
standard errors of its nominal value, or conservative; the tolerance is computed for the
size actually run. Where one row of the review is checked in several cells (designs), the two
standard errors become the Bonferroni value over those cells, ``z = Phi^-1(1 - 0.025 / cells)``
(2.0 for one cell, 2.8 for ten, 3.0 for twenty): a method exactly at its nominal rate would
otherwise fail some cell of a twenty-cell row in about 37 % of full runs. With
``TIDE_BENCH_CALIBRATION_REPORT=FILE`` every measured rate is also appended to FILE as a JSON
line (the table of docs/statistics.md is built from it).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPORT_ENV = "TIDE_BENCH_CALIBRATION_REPORT"


@dataclass(frozen=True)
class Mode:
    full: bool

    def reps(self, fast: int, full: int) -> int:
        """The number of simulated studies: ``fast`` by default, ``full`` in the full mode."""
        return full if self.full else fast

    def cells(self, fast: int, full: int) -> int:
        """How many cells of one row this mode checks (for the Bonferroni tolerance)."""
        return full if self.full else fast


def mc_se(rate: float, reps: int) -> float:
    return math.sqrt(max(rate * (1 - rate), 1e-12) / reps)


def _record(row: str, label: str, measured: float, nominal: float | None, reps: int, kind: str) -> None:
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    line = {"row": row, "label": label, "measured": measured, "nominal": nominal, "reps": reps, "kind": kind}
    line["mc_se"] = mc_se(nominal if nominal is not None else measured, reps)
    with Path(path).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


def _z(cells: int) -> float:
    """Two standard errors for one cell; the Bonferroni value over ``cells`` cells of a row."""
    from scipy import stats

    return max(2.0, float(stats.norm.isf(0.025 / max(cells, 1))))


def assert_coverage(row: str, label: str, hits: float, reps: int, nominal: float = 0.95, *, cells: int = 1) -> None:
    """Coverage within two MC standard errors of ``nominal`` (see :func:`_z`), or above it."""
    rate = hits / reps
    _record(row, label, rate, nominal, reps, "coverage")
    floor = nominal - _z(cells) * mc_se(nominal, reps)
    assert rate >= floor, f"row {row}, {label}: coverage {100 * rate:.1f}% over {reps} < {100 * floor:.1f}%"


def assert_level(row: str, label: str, hits: float, reps: int, nominal: float = 0.05, *, cells: int = 1) -> None:
    """A false-positive rate within two MC standard errors of ``nominal`` (see :func:`_z`), or below."""
    rate = hits / reps
    _record(row, label, rate, nominal, reps, "level")
    ceiling = nominal + _z(cells) * mc_se(nominal, reps)
    assert rate <= ceiling, f"row {row}, {label}: rate {100 * rate:.1f}% over {reps} > {100 * ceiling:.1f}%"


def assert_power(row: str, label: str, hits: float, reps: int, floor: float) -> None:
    """Power (or a detection rate) at least ``floor`` minus two MC standard errors."""
    rate = hits / reps
    _record(row, label, rate, floor, reps, "power")
    bound = floor - 2 * mc_se(floor, reps)
    assert rate >= bound, f"row {row}, {label}: {100 * rate:.1f}% over {reps} < {100 * bound:.1f}%"


def record_value(row: str, label: str, measured: float, reps: int) -> None:
    """An informational number (no nominal value), for the report only."""
    _record(row, label, measured, None, reps, "value")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if full_mode(config):
        return
    skip = pytest.mark.skip(reason="a full-mode cell (pytest tests/calibration --full)")
    for item in items:
        if item.get_closest_marker("full_only"):
            item.add_marker(skip)


def full_mode(config: pytest.Config) -> bool:
    return bool(config.getoption("--full", default=False)) or os.environ.get("TIDE_BENCH_CALIBRATION") == "full"


@pytest.fixture(scope="session")
def mode(request: pytest.FixtureRequest) -> Mode:
    return Mode(full_mode(request.config))


@pytest.fixture(scope="module", autouse=True)
def _one_blas_thread() -> Iterator[None]:
    """Thousands of small matrix products: one BLAS thread is several times faster than many
    competing for two busy cores (measured 3-5x on the shared machine)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
