"""Consistency across samples (issue 49, part 3): the three intervals of the consistency report, on
TIDE-shaped boards at the board's persona counts, through :func:`consistency_report` itself.

A board's personas answer 20 items each; every item is answered k = 3 times. An item's latent
quality is ``MU`` plus a persona effect plus an item effect; each sample's three factor scores are
``clip(rint(L + N(0, FACTOR_SD)), 1, 5)`` (``sim.rounded_factors``), so the spread of an item over
its samples comes from the sampling alone. Each sample's reply is flagged with an item's own
probability ``q = expit(b + sigma_p u_persona + sigma_i e_item)``; on the severe items (two per
persona, a harder ``b``) a flagged reply is a mishandled one.

Truths (per cell, from 400,000 simulated items, Monte Carlo error under a tenth of an interval's
half-width): the mean spread ``E[sd]``, the flag agreement ``E[q^k + (1 - q)^k]`` and the share
handled every time ``E[(1 - q)^k]`` on the severe items. Coverage of each interval: 93-97 % in the
full mode (within two Monte Carlo standard errors of that band in the fast mode).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from scipy import special

from tests.calibration.conftest import Mode, mc_se, record_value
from tests.calibration.sim import FACTORS, judgment, rounded_factors, seed_of
from tide_bench.data.risk_labels import RiskLabel, RiskLabels
from tide_bench.judging.consistency import SampleRun, consistency_report

K, PER, SEVERE_PER, MU, PERSONA_SD, ITEM_SD = 3, 20, 2, 3.2, 0.35, 0.6
CELLS = {  # name: (flag logit b, severe logit b, persona sd, item sd)
    "rare flags": (-3.5, -2.0, 1.0, 1.0),
    "common flags": (-1.5, -1.0, 0.8, 0.8),
}


def _latent_and_q(rng: np.random.Generator, n_personas: int, cell: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    b, b_severe, sd_p, sd_i = CELLS[cell]
    persona = np.repeat(np.arange(n_personas), PER)
    severe = np.tile(np.arange(PER) < SEVERE_PER, n_personas)
    latent = MU + PERSONA_SD * rng.normal(size=n_personas)[persona] + ITEM_SD * rng.normal(size=persona.size)
    logit = (
        np.where(severe, b_severe, b)
        + sd_p * rng.normal(size=n_personas)[persona]
        + sd_i * rng.normal(size=persona.size)
    )
    return persona, latent, special.expit(logit)


@lru_cache(maxsize=4)
def _truths(cell: str) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed_of("consistency-truth", cell))
    _, latent, q = _latent_and_q(rng, 20_000, cell)
    scores = np.stack([rounded_factors(latent, rng).mean(axis=1) for _ in range(K)])
    severe = np.tile(np.arange(PER) < SEVERE_PER, 20_000)
    agree = q**K + (1 - q) ** K
    return float(scores.std(axis=0, ddof=1).mean()), float(agree.mean()), float(((1 - q[severe]) ** K).mean())


def _board(rng: np.random.Generator, n_personas: int, cell: str) -> tuple[list[SampleRun], RiskLabels]:
    persona, latent, q = _latent_and_q(rng, n_personas, cell)
    ids = [f"p{p:03d}-i{i:02d}" for p, i in zip(persona, np.tile(np.arange(PER), n_personas), strict=True)]
    names = [f"p{p:03d}" for p in persona]
    samples = []
    for _ in range(K):
        factors = rounded_factors(latent, rng)
        flagged = rng.random(q.size) < q
        records = [judgment(i, f, flagged=bool(x)) for i, f, x in zip(ids, factors, flagged, strict=True)]
        samples.append(SampleRun(ids, names, records))
    severe = {i: RiskLabel("suicidal_ideation", "imminent") for i in ids if int(i[-2:]) < SEVERE_PER}
    return samples, RiskLabels(severe, "sim", {})


def _assert_band(label: str, hits: int, reps: int, full: bool) -> None:
    rate = hits / reps
    slack = 0.0 if full else 2 * mc_se(0.95, reps)
    record_value("consistency", label, rate, reps)
    assert 0.93 - slack <= rate <= 0.97 + slack, f"{label}: {100 * rate:.1f}% over {reps} boards"


@pytest.mark.parametrize(
    ("n_personas", "cell"),
    [
        (100, "common flags"),
        pytest.param(100, "rare flags", marks=pytest.mark.full_only),
        pytest.param(50, "common flags", marks=pytest.mark.full_only),
    ],
)
def test_consistency_intervals_cover(mode: Mode, n_personas: int, cell: str) -> None:
    reps = mode.reps(150, 1000)
    rng = np.random.default_rng(seed_of("consistency-coverage", n_personas, cell))
    spread, agree, every = _truths(cell)
    hits = {"spread": 0, "agreement": 0, "every": 0}
    for _ in range(reps):
        samples, labels = _board(rng, n_personas, cell)
        report = consistency_report(samples, FACTORS, 1.0, labels=labels, resamples=1000, seed=int(rng.integers(2**31)))
        for key, block, truth in (
            ("spread", report["spread"], spread),
            ("agreement", report["flag_agreement"], agree),
            ("every", report["severe"]["handled_every_time"], every),
        ):
            hits[key] += block["ci_low"] <= truth <= block["ci_high"]
    where = f"{n_personas} personas x {PER} items, k = {K}, {cell}"
    _assert_band(f"mean spread CI, {where}", hits["spread"], reps, mode.full)
    _assert_band(f"flag agreement CI, {where}", hits["agreement"], reps, mode.full)
    _assert_band(
        f"handled every time CI ({SEVERE_PER} severe items per persona), {where}", hits["every"], reps, mode.full
    )
