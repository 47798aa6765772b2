"""Persona-swap robustness (issue 49, part 2): the simultaneous intervals of the paired shifts and the
family-wise verdict, on TIDE-shaped swap runs at the board's persona counts.

A run answers one pair per persona and attribute (age group, gender, religious and cultural frame;
about 6 % of personas cannot be swapped on gender, as a non-binary persona cannot). Both sides of a
pair share the persona's and the message's quality (sd 0.6 on the latent, ICC 0.2), each reply
adds its own residual (sd 0.5), and side a's latent moves by ``+s_p / 2``, side b's by ``-s_p / 2``,
with ``s_p`` the attribute's shift plus a persona-by-shift interaction (sd 0.3): the model is not
equally moved for every client. A reply is flagged with a persona-clustered probability (3 %,
logit sd 1) shifted on side a by the attribute's flag effect; a flagged reply counts 1. Truths are
exact: each side's latent is normal, so its mean overall score is ``sim.overall_mean``, its flag
rate ``sim.marginal_rate``, and the two are independent, so the safety-adjusted mean is
``(1 - r) * score + r``.

* **Size** (no attribute moves anything): the share of runs whose verdict shows a shift (any of the
  family's eight simultaneous intervals excludes 0): at most 6 % (issue 49).
* **Coverage** (age moves the score by -0.4 on the latent, the religious frame the flag logit by
  +1.0, the cultural frame the score by 0.1): the share of runs on which every shift's interval
  covers its truth, and on which the verdict's own shift (the largest shown, selected) is covered;
  93-97 % in the full mode.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.calibration.conftest import Mode, mc_se, record_value
from tests.calibration.sim import logit_for_rate, marginal_rate, overall, overall_mean, seed_of
from tide_bench.core.paired_shift import paired_shifts

ATTRIBUTES = ("age_group", "gender", "religion", "culture")
SHARED_SD, ICC, RESIDUAL_SD, INTERACTION_SD, MU = 0.6, 0.2, 0.5, 0.3, 3.2
FLAG_RATE, FLAG_SD, NOT_SWAPPABLE = 0.03, 1.0, 0.06  # NOT_SWAPPABLE: gender only
SCORE_SHIFT = np.array([-0.4, 0.0, 0.0, 0.1])  # latent points, side a minus side b, by attribute
FLAG_SHIFT = np.array([0.0, 0.0, 1.0, 0.0])  # flag logit on side a, by attribute
_LOGIT0 = logit_for_rate(FLAG_RATE, FLAG_SD)
RATES = range(len(ATTRIBUTES), 2 * len(ATTRIBUTES))  # the flag-rate members, as the report passes them


def _side(rng: np.random.Generator, shared: np.ndarray, slope: np.ndarray, sign: float, logit: np.ndarray) -> tuple:
    """One side's safety-adjusted values and flags for a pair per persona."""
    score = overall(MU + shared + sign * slope / 2 + RESIDUAL_SD * rng.normal(size=shared.size), rng)
    from scipy import special

    flags = (rng.random(shared.size) < special.expit(logit)).astype(float)
    return np.where(flags > 0, 1.0, score), flags


def _run(rng: np.random.Generator, n_personas: int, effects: bool) -> tuple[np.ndarray, list[str]]:
    """``(pairs, 8)`` differences (score then flag, per attribute) and each pair's persona."""
    m = len(ATTRIBUTES)
    persona_q = SHARED_SD * math.sqrt(ICC) * rng.normal(size=n_personas)
    persona_flag = FLAG_SD * rng.normal(size=n_personas)
    swappable = rng.random(n_personas) >= NOT_SWAPPABLE
    rows, personas = [], []
    for j in range(m):
        keep = np.arange(n_personas) if ATTRIBUTES[j] != "gender" else np.flatnonzero(swappable)
        shared = persona_q[keep] + SHARED_SD * math.sqrt(1 - ICC) * rng.normal(size=keep.size)
        slope = (SCORE_SHIFT[j] if effects else 0.0) + INTERACTION_SD * rng.normal(size=keep.size)
        logit = _LOGIT0 + persona_flag[keep]
        adj_a, flag_a = _side(rng, shared, slope, 1.0, logit + (FLAG_SHIFT[j] if effects else 0.0))
        adj_b, flag_b = _side(rng, shared, slope, -1.0, logit)
        block = np.full((keep.size, 2 * m), np.nan)
        block[:, j], block[:, m + j] = adj_a - adj_b, flag_a - flag_b
        rows.append(block)
        personas += [f"p{p}" for p in keep]
    return np.vstack(rows), personas


def _truths(effects: bool) -> np.ndarray:
    """The true shift of each family member: safety-adjusted score, then flag rate, per attribute."""
    sd = math.sqrt(SHARED_SD**2 + (INTERACTION_SD / 2) ** 2 + RESIDUAL_SD**2)
    score, flag = [], []
    for j in range(len(ATTRIBUTES)):
        s = SCORE_SHIFT[j] if effects else 0.0
        r_a = marginal_rate(_LOGIT0 + (FLAG_SHIFT[j] if effects else 0.0), FLAG_SD)
        r_b = marginal_rate(_LOGIT0, FLAG_SD)
        mean_a, mean_b = overall_mean(MU + s / 2, sd), overall_mean(MU - s / 2, sd)
        score.append((1 - r_a) * mean_a + r_a - ((1 - r_b) * mean_b + r_b))
        flag.append(r_a - r_b)
    return np.array(score + flag)


def _assert_band(label: str, hits: int, reps: int, low: float, high: float, nominal: float, full: bool) -> None:
    """The measured rate inside ``[low, high]`` (the full mode), or within two Monte Carlo standard
    errors of that band (the fast mode's fewer runs)."""
    rate = hits / reps
    slack = 0.0 if full else 2 * mc_se(nominal, reps)
    record_value("persona-swap", label, rate, reps)
    assert low - slack <= rate <= high + slack, f"{label}: {100 * rate:.1f}% over {reps} runs"


@pytest.mark.parametrize("n_personas", [100, pytest.param(50, marks=pytest.mark.full_only)])
def test_verdict_size_when_no_attribute_moves_anything(mode: Mode, n_personas: int) -> None:
    reps = mode.reps(300, 2000)
    rng = np.random.default_rng(seed_of("persona-swap-size", n_personas))
    shown = 0
    for _ in range(reps):
        diffs, personas = _run(rng, n_personas, effects=False)
        found = paired_shifts(diffs, personas, rates=RATES, resamples=1000)
        shown += any(m["shown"] for m in found["members"])
    _assert_band(f"verdict size, {n_personas} personas", shown, reps, 0.0, 0.06, 0.05, mode.full)


def _t(member: dict) -> float:
    """The member's |t| as the verdict ranks shown shifts (score before flag rate)."""
    return abs(member["shift"]) / (member["se"] or 1.0)


@pytest.mark.parametrize("n_personas", [100, pytest.param(50, marks=pytest.mark.full_only)])
def test_simultaneous_intervals_cover_every_true_shift(mode: Mode, n_personas: int) -> None:
    reps = mode.reps(300, 2000)
    rng = np.random.default_rng(seed_of("persona-swap-coverage", n_personas))
    truths = _truths(effects=True)
    family = selected = shown = 0
    for _ in range(reps):
        diffs, personas = _run(rng, n_personas, effects=True)
        members = paired_shifts(diffs, personas, rates=RATES, resamples=1000)["members"]
        covered = [m["ci_low"] <= t <= m["ci_high"] for m, t in zip(members, truths, strict=True)]
        family += all(covered)
        hits = [k for k, m in enumerate(members) if m["shown"]]
        best = max(hits or range(len(ATTRIBUTES)), key=lambda k: (k < len(ATTRIBUTES), _t(members[k])))
        selected += covered[best]
        shown += bool(hits)
    record_value("persona-swap", f"power: a shift shown, {n_personas} personas", shown / reps, reps)
    _assert_band(f"simultaneous coverage, {n_personas} personas", family, reps, 0.93, 0.97, 0.95, mode.full)
    _assert_band(f"the verdict's shift covered, {n_personas} personas", selected, reps, 0.93, 1.0, 0.95, mode.full)
