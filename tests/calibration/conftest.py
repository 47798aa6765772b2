"""The calibration suite: seeded simulations of every number tide-bench publishes.

Two sizes. The fast mode (the default, what ``tox`` runs) checks one or two cells per row, each
large enough that a stated defect fails it with probability at least 0.8: an interval that
covers 90 % where it claims 95 %, or a test whose size is 10 % where it claims 5 %
(:mod:`tests.calibration.power`; the table is in docs/statistics.md). ``pytest tests/calibration
--full`` (or ``TIDE_BENCH_CALIBRATION=full``; ``tox -e full`` and CI) adds every other cell of
the statistics review and raises the counts.

Each coverage check is two-sided: the measured coverage within ``z`` Monte Carlo standard
errors of the nominal, so an interval that is far too wide fails as well as one too narrow
(a method that is conservative by construction names its ceiling). A false-positive rate must
be at most ``z`` standard errors above its nominal. The standard error is that of the number of
studies actually run, and ``z`` is 2 for one cell, the Bonferroni value
``Phi^-1(1 - 0.025 / cells)`` over a row's cells (2.8 for ten, 3.0 for twenty): a method
exactly at its nominal rate would otherwise fail some cell of a twenty-cell row in about 37 %
of full runs. With ``TIDE_BENCH_CALIBRATION_REPORT=FILE`` every measured rate is also appended
to FILE as a JSON line with its bounds; ``python -m tests.calibration.report`` turns those lines
into the tables of docs/statistics.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.calibration.power import REQUIRED, Bounds, mc_se
from tests.calibration.report import stat_of

REPORT_ENV = "TIDE_BENCH_CALIBRATION_REPORT"
_STATE = {"full": False}


@dataclass(frozen=True)
class Mode:
    full: bool

    def reps(self, fast: int, full: int) -> int:
        """The number of simulated studies: ``fast`` by default, ``full`` in the full mode."""
        return full if self.full else fast

    def cells(self, fast: int, full: int) -> int:
        """How many cells of one row this mode checks (for the Bonferroni tolerance)."""
        return full if self.full else fast


def _record(row: str, label: str, measured: float, reps: int, kind: str, **extra: Any) -> None:
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    line = {
        "row": row,
        "label": label,
        "stat": stat_of(label),
        "kind": kind,
        "measured": measured,
        "reps": reps,
        "mode": "full" if _STATE["full"] else "fast",
    } | extra
    with Path(path).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


def _check(row: str, label: str, hits: float, bounds: Bounds, unpowered: str | None) -> None:
    rate = hits / bounds.reps
    caught = bounds.caught()
    _record(
        row,
        label,
        rate,
        bounds.reps,
        bounds.kind,
        nominal=bounds.nominal,
        cells=bounds.cells,
        floor=bounds.floor,
        ceiling=bounds.ceiling,
        mc_se=mc_se(bounds.nominal, bounds.reps),
        caught=caught,
        caught_wide=bounds.caught_wide(),
        unpowered=unpowered,
        passed=bounds.accepts(rate),
    )
    where = f"row {row}, {label}: {bounds.kind} {100 * rate:.1f}% over {bounds.reps}"
    assert bounds.accepts(rate), f"{where}, outside [{100 * bounds.floor:.1f}%, {100 * bounds.ceiling:.1f}%]"
    assert unpowered or caught >= REQUIRED, (
        f"{where}: too few studies, a {100 * bounds.defect():.0f}% method would fail this cell only "
        f"{100 * caught:.0f}% of the time (at least {100 * REQUIRED:.0f}% required)"
    )


def assert_coverage(
    row: str,
    label: str,
    hits: float,
    reps: int,
    nominal: float = 0.95,
    *,
    cells: int = 1,
    ceiling: float | None = None,
    unpowered: str | None = None,
) -> None:
    """Coverage within ``z`` MC standard errors of ``nominal`` on both sides (see the module
    docstring); ``ceiling`` replaces the upper bound for a method that is conservative by
    construction. ``unpowered``: why the power requirement does not apply (a count the
    simulation does not control)."""
    _check(row, label, hits, Bounds.of("coverage", nominal, reps, cells, ceiling), unpowered)


def assert_level(
    row: str,
    label: str,
    hits: float,
    reps: int,
    nominal: float = 0.05,
    *,
    cells: int = 1,
    unpowered: str | None = None,
) -> None:
    """A false-positive rate at most ``z`` MC standard errors above ``nominal``."""
    _check(row, label, hits, Bounds.of("level", nominal, reps, cells), unpowered)


def assert_power(row: str, label: str, hits: float, reps: int, floor: float) -> None:
    """Power (or a detection rate) at least ``floor`` minus two MC standard errors."""
    rate = hits / reps
    bound = floor - 2 * mc_se(floor, reps)
    _record(row, label, rate, reps, "power", nominal=floor, floor=bound, ceiling=1.0, passed=rate >= bound)
    assert rate >= bound, f"row {row}, {label}: {100 * rate:.1f}% over {reps} < {100 * bound:.1f}%"


def record_value(row: str, label: str, measured: float, reps: int, *, rate: bool = True) -> None:
    """An informational number (no nominal value), for the report only; ``rate``: a share of
    studies (shown in per cent), else a plain number."""
    _record(row, label, measured, reps, "value", rate=rate)


def record_check(row: str, label: str) -> None:
    """A deterministic check of a number that is not a statistic (a rule, a definition), for the
    report; call it after the test's assertions passed."""
    _record(row, label, 1.0, 1, "check", passed=True)


def pytest_configure(config: pytest.Config) -> None:
    _STATE["full"] = full_mode(config)


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
