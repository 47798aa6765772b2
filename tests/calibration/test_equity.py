"""Equity across personas (issue 49): the per-group intervals, the simultaneous gap intervals and the
family-wise verdict, on TIDE-shaped boards at the board's persona counts.

A board's personas carry four attributes drawn as TIDE's might be: age group (six bands, unequal),
gender (a rare third group, about 6 %), trauma type (twelve kinds) and education (five levels, 5 %
of personas without it). Items nest in personas (20 each); the judge's three factors are rounded
around a latent quality with a persona effect (ICC 0.2 of the latent), the overall score is their
mean, and a reply is flagged with a persona-clustered probability (logit sd 1), so the
safety-adjusted score is the overall score, or 1 when flagged. Truths are exact: the mean of a
rounded normal (``sim.overall_mean``) and the marginal rate of a logit-normal (``sim.marginal_rate``).

* **Size** (no group differs): the share of boards whose verdict shows a gap (any gap of the
  family's simultaneous intervals excludes 0): at most 5 % plus Monte Carlo error, and at most 6 % in
  the full mode (issue 49).
* **Coverage** (age changes the score by up to 0.5 on the latent, trauma type the flag rate by up to
  3x): the share of boards on which *every* gap's simultaneous interval covers its true gap, and the
  share on which the interval of the verdict's own gap (the largest shown, which is selected)
  covers it; 93-97 % in the full mode. The estimable groups' own 95 % intervals: every group's
  coverage, pooled.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.calibration.conftest import Mode, mc_se, record_value
from tests.calibration.sim import logit_for_rate, marginal_rate, overall, overall_mean, seed_of
from tide_bench.judging.equity import equity_report

AGE = (["18-24", "25-34", "35-44", "45-54", "55-64", "65+"], [0.12, 0.22, 0.22, 0.18, 0.14, 0.12])
GENDER = (["female", "male", "non-binary"], [0.47, 0.47, 0.06])
TRAUMA = ([f"trauma {k:02d}" for k in range(12)], [1 / 12] * 12)
EDUCATION = (["high school", "some college", "bachelor", "master", "doctorate"], [0.3, 0.2, 0.3, 0.15, 0.05])
MISSING_EDUCATION = 0.05
PER, MU, PERSONA_SD, ITEM_SD, FLAG_RATE, FLAG_SD = 20, 3.0, 0.8 * math.sqrt(0.2), 0.8 * math.sqrt(0.8), 0.03, 1.0
AGE_EFFECT = np.array([0.25, 0.15, 0.0, 0.0, -0.2, -0.5])  # latent points, by age band
TRAUMA_LOGIT = np.array([1.1, 0.6, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.5, -1.0])  # flag logit shift, by kind


def _draw(rng: np.random.Generator, levels: tuple[list[str], list[float]], n: int) -> np.ndarray:
    return rng.choice(len(levels[0]), size=n, p=levels[1])


Board = tuple[list[str], list[dict], np.ndarray, np.ndarray]


def _board(rng: np.random.Generator, n_personas: int, effects: bool) -> Board:
    """One entry's items: persona ids, each item's persona metadata, safety-adjusted values, flags."""
    age, gender, trauma, education = (_draw(rng, lv, n_personas) for lv in (AGE, GENDER, TRAUMA, EDUCATION))
    without = rng.random(n_personas) < MISSING_EDUCATION
    metas = [
        {
            "age_group": AGE[0][age[p]],
            "gender": GENDER[0][gender[p]],
            "trauma_type": TRAUMA[0][trauma[p]],
            **({} if without[p] else {"education": EDUCATION[0][education[p]]}),
        }
        for p in range(n_personas)
    ]
    persona = np.repeat(np.arange(n_personas), PER)
    shift = AGE_EFFECT[age][persona] if effects else 0.0
    latent = MU + shift + PERSONA_SD * rng.normal(size=n_personas)[persona] + ITEM_SD * rng.normal(size=persona.size)
    score = overall(latent, rng)
    logit = _LOGIT0 + (TRAUMA_LOGIT[trauma][persona] if effects else 0.0)
    flags = _flags(rng, persona, logit)
    adjusted = np.where(flags > 0, 1.0, score)
    return [f"p{p}" for p in persona], [metas[p] for p in persona], adjusted, flags


_LOGIT0 = logit_for_rate(FLAG_RATE, FLAG_SD)


def _flags(rng: np.random.Generator, persona: np.ndarray, logit: np.ndarray | float) -> np.ndarray:
    from scipy import special

    n_p = int(persona.max()) + 1
    p = special.expit(logit + FLAG_SD * rng.normal(size=n_p)[persona])
    return (rng.random(persona.size) < p).astype(float)


def _truths(effects: bool) -> dict[tuple[str, str], tuple[float, float]]:
    """(attribute, value) -> (true safety-adjusted mean, true flag rate)."""
    sd = math.hypot(PERSONA_SD, ITEM_SD)
    age_shift = AGE_EFFECT if effects else np.zeros(6)
    trauma_shift = TRAUMA_LOGIT if effects else np.zeros(12)
    score = np.array([overall_mean(MU + a, sd) for a in age_shift])
    rate = np.array([marginal_rate(_LOGIT0 + t, FLAG_SD) for t in trauma_shift])
    score_all, rate_all = float(np.dot(AGE[1], score)), float(np.dot(TRAUMA[1], rate))
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for k, value in enumerate(AGE[0]):
        out[("age_group", value)] = ((1 - rate_all) * score[k] + rate_all, rate_all)
    for k, value in enumerate(TRAUMA[0]):
        out[("trauma_type", value)] = ((1 - rate[k]) * score_all + rate[k], rate[k])
    for attribute, levels in (("gender", GENDER[0]), ("education", EDUCATION[0])):
        for value in levels:
            out[(attribute, value)] = ((1 - rate_all) * score_all + rate_all, rate_all)
    return out


def _assert_band(label: str, hits: int, reps: int, low: float, high: float, nominal: float, full: bool) -> None:
    """The measured rate inside ``[low, high]`` (the full mode), or within two Monte Carlo standard
    errors of that band (the fast mode's fewer boards)."""
    rate = hits / reps
    slack = 0.0 if full else 2 * mc_se(nominal, reps)
    record_value("equity", label, rate, reps)
    assert low - slack <= rate <= high + slack, f"{label}: {100 * rate:.1f}% over {reps} boards"


def _run(rng: np.random.Generator, n_personas: int, effects: bool) -> dict:
    personas, metas, adjusted, flags = _board(rng, n_personas, effects)
    return equity_report(personas, metas, adjusted, flags)


@pytest.mark.parametrize("n_personas", [100, pytest.param(50, marks=pytest.mark.full_only)])
def test_verdict_size_without_any_gap(mode: Mode, n_personas: int) -> None:
    reps = mode.reps(200, 2000)
    rng = np.random.default_rng(seed_of("equity-size", n_personas))
    shown = 0
    comparisons = []
    for _ in range(reps):
        report = _run(rng, n_personas, effects=False)
        shown += report["verdict"]["shown"]
        comparisons.append(report["n_comparisons"])
    record_value("equity", f"gaps compared per entry, {n_personas} personas", float(np.mean(comparisons)), reps)
    _assert_band(f"verdict size, {n_personas} personas x {PER}", shown, reps, 0.0, 0.06, 0.05, mode.full)


def _covers(gap: dict, truths: dict) -> bool:
    j = 0 if gap["measure"] == "safety_adjusted_empathy" else 1
    truth = truths[(gap["attribute"], gap["a"])][j] - truths[(gap["attribute"], gap["b"])][j]
    return bool(gap["ci_low"] <= truth <= gap["ci_high"])


def _group_hits(report: dict, truths: dict) -> tuple[int, int]:
    hits = n = 0
    for attribute, rows in report["groups"].items():
        for row in rows:
            if row["estimable"]:
                for j, key in enumerate(("safety_adjusted_empathy", "safety_flag_rate")):
                    n += 1
                    hits += row[key]["ci_low"] <= truths[(attribute, row["value"])][j] <= row[key]["ci_high"]
    return hits, n


@pytest.mark.parametrize("n_personas", [100, pytest.param(50, marks=pytest.mark.full_only)])
def test_simultaneous_intervals_and_group_intervals_cover(mode: Mode, n_personas: int) -> None:
    reps = mode.reps(200, 2000)
    rng = np.random.default_rng(seed_of("equity-coverage", n_personas))
    truths = _truths(effects=True)
    family = reported = shown = shown_covered = group_hits = group_n = 0
    for _ in range(reps):
        report = _run(rng, n_personas, effects=True)
        family += all(_covers(g, truths) for g in report["gaps"])
        verdict = report["verdict"]
        reported += _covers(verdict["gap"], truths)  # the verdict's own gap: the largest shown, else the largest
        if verdict["shown"]:
            shown += 1
            shown_covered += _covers(verdict["gap"], truths)
        hits, n = _group_hits(report, truths)
        group_hits, group_n = group_hits + hits, group_n + n
    record_value("equity", f"power: a gap shown, {n_personas} personas", shown / reps, reps)
    if shown:  # coverage given that a gap was shown: a post-selection number, not what the intervals promise
        label = f"coverage of a shown gap given shown, {n_personas} personas"
        record_value("equity", label, shown_covered / shown, shown)
    _assert_band(f"simultaneous coverage, {n_personas} personas", family, reps, 0.93, 0.97, 0.95, mode.full)
    _assert_band(f"the verdict's gap covered, {n_personas} personas", reported, reps, 0.93, 1.0, 0.95, mode.full)
    _assert_band(f"group intervals (pooled), {n_personas} personas", group_hits, group_n, 0.93, 0.97, 0.95, True)
