"""``tide-bench annotate plan``: will this annotation design be able to pass a good judge?

The audit's verdict is the alternative annotator test (:mod:`tide_bench.agreement.alt_test`).
Its power depends on the design: with 5 raters x 40 items at overlap 3, a judge *exactly as
good as a person* passes in only about 22 % of studies (shared/reviews statistics section 2,
``s5b``); about 120 items per rater are needed for 80 %. This estimates the chance by seeded
simulation of the design :func:`tide_bench.annotation.assign.spread` actually builds:

* each unit has a latent quality ``t ~ N(3, 0.9)``; a person's rating is
  ``clip(round(t + N(0, 0.45)), 1, 5)`` (the statistics kit's rating model);
* the judge rates every unit the same way (``judge_sd`` = the human's: as good as a person),
  or with less noise (clearly better) or more;
* the test runs exactly as the audit runs it (epsilon, q = 0.05, 30 items per rater).

The pass rate comes with its Monte Carlo standard error.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from tide_bench.agreement.alt_test import DEFAULT_EPSILON, MIN_ITEMS_PER_RATER, alt_test
from tide_bench.annotation.assign import AssignmentOptions, spread
from tide_bench.core.errors import ConfigError
from tide_bench.core.stats import DEFAULT_SEED

HUMAN_SD = 0.45
LATENT_MEAN, LATENT_SD = 3.0, 0.9
TARGET_POWER = 0.8


@dataclass(frozen=True)
class PlanOptions:
    raters: int = AssignmentOptions.raters
    per_rater: int = AssignmentOptions.per_rater
    overlap: int = AssignmentOptions.overlap
    epsilon: float = DEFAULT_EPSILON
    judge_sd: float = HUMAN_SD
    replications: int = 400
    seed: int = DEFAULT_SEED


MAX_CELLS = 2_000_000  # rater x item cells of one simulated study (16 MB of ratings)


def _ratings(rng: np.random.Generator, truth: np.ndarray, sd: float, k: int | None = None) -> np.ndarray:
    shape = truth.shape if k is None else (k, truth.size)
    return np.clip(np.rint(truth + rng.normal(0.0, sd, shape)), 1, 5)


def _check(options: PlanOptions) -> int:
    if options.raters < 2 or options.per_rater < 1 or not 2 <= options.overlap <= options.raters:
        raise ConfigError(
            "needs at least 2 raters, 1 item per rater and 2 <= overlap <= raters (the test needs overlap)"
        )
    if options.replications < 10:
        raise ConfigError("--replications must be at least 10")
    if not (0 <= options.epsilon < 1 and math.isfinite(options.judge_sd) and options.judge_sd >= 0):
        raise ConfigError("epsilon must be in [0, 1) and judge sd non-negative")
    units = (options.raters * options.per_rater) // options.overlap
    if options.raters * units > MAX_CELLS:
        raise ConfigError(
            f"{options.raters} raters x {units} items is {options.raters * units:,} simulated ratings per study; "
            f"at most {MAX_CELLS:,} are simulated (a real panel rates a few thousand)",
            hint="plan a smaller study: --raters and --items as the panel will have them",
        )
    return units


def simulate(options: PlanOptions) -> dict[str, Any]:
    """The share of simulated studies in which the judge passes, and the design's facts."""
    units = _check(options)
    rng = np.random.default_rng(options.seed)
    assign_rng = random.Random(options.seed)
    names = [f"rater-{r + 1}" for r in range(options.raters)]
    passed = skipped = 0
    for _ in range(options.replications):
        truth = rng.normal(LATENT_MEAN, LATENT_SD, units)
        full = _ratings(rng, truth, HUMAN_SD, options.raters)
        data = np.full_like(full, np.nan)
        for unit, chosen in enumerate(spread(units, options.raters, options.overlap, assign_rng)):
            data[chosen, unit] = full[chosen, unit]
        result = alt_test(data, _ratings(rng, truth, options.judge_sd), names, epsilon=options.epsilon)
        passed += bool(result["passed"])
        skipped += len(result["skipped_raters"])
    rate = passed / options.replications
    return {
        "raters": options.raters,
        "items_per_rater": options.per_rater,
        "overlap": options.overlap,
        "units": units,
        "epsilon": options.epsilon,
        "judge_sd": options.judge_sd,
        "human_sd": HUMAN_SD,
        "replications": options.replications,
        "seed": options.seed,
        "pass_rate": rate,
        "mc_se": math.sqrt(max(rate * (1 - rate), 1e-12) / options.replications),
        "raters_skipped_per_study": skipped / options.replications,
        "min_items_per_rater": MIN_ITEMS_PER_RATER,
        "target": TARGET_POWER,
        "meets_target": rate >= TARGET_POWER,
    }


def smallest_design(options: PlanOptions, candidates: tuple[int, ...] = (40, 60, 80, 100, 120, 150, 200)) -> int | None:
    """The fewest items per rater (of ``candidates``) whose simulated pass rate reaches the target."""
    for n in candidates:
        if simulate(PlanOptions(**{**options.__dict__, "per_rater": n}))["pass_rate"] >= TARGET_POWER:
            return n
    return None
