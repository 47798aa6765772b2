"""Rows 15-18 of the review: ``tide-bench audit --raters`` rater-group analyses
(``agreement.groups.analyze_groups``): the rater-level permutation test, the judge-agreement
test per group, each group's mean with its interval, and the optional mixed model's p-value.

Twelve raters in two groups; every item is rated by three raters drawn at random:
``clip(rint(3 + item + leniency_r + effect [group A] + noise), 1, 5)``, item sd 0.7, rater
leniency sd 0.4 (the rater is the unit), noise sd 0.7; one judge rates every item.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from tests.calibration.conftest import Mode, assert_coverage, assert_level, record_value
from tests.calibration.sim import rounded_mean, seed_of
from tide_bench.agreement.groups import analyze_groups
from tide_bench.agreement.ratings import JudgeInfo, Rating, RatingsTable

ITEM_SD, LENIENCY_SD, NOISE_SD = 0.7, 0.4, 0.7
JUDGE = "judge:sim@00000000"


def study(rng: np.random.Generator, n_items: int, sizes: tuple[int, int], effect: float):
    group = np.repeat([0, 1], sizes)  # 0 = "A" (gets the effect)
    leniency = rng.normal(0, LENIENCY_SD, group.size)
    item = rng.normal(0, ITEM_SD, n_items)
    rows = []
    for i in range(n_items):
        for r in rng.choice(group.size, 3, replace=False):
            mu = 3 + item[i] + leniency[r] + (effect if group[r] == 0 else 0.0)
            rows.append(Rating(f"i{i}", f"r{r:02d}", "d", float(np.clip(np.rint(mu + rng.normal(0, NOISE_SD)), 1, 5))))
    judge = np.clip(np.rint(3 + item + rng.normal(0, 0.6, n_items)), 1, 5)
    rows += [Rating(f"i{i}", JUDGE, "d", float(s)) for i, s in enumerate(judge)]
    table = RatingsTable(rows=rows, judges={JUDGE: JudgeInfo(files=["sim"], n_scored=n_items, factors={"d"})})
    info = {f"r{r:02d}": {"group": "AB"[group[r]]} for r in range(group.size)}
    return table, info


@pytest.mark.parametrize(
    ("sizes", "n_items"),
    [pytest.param((9, 3), 100)]
    + [pytest.param(c[0], c[1], marks=pytest.mark.full_only) for c in (((6, 6), 100), ((6, 6), 300), ((9, 3), 300))],
)
def test_rows15_18_rater_groups_under_the_null(mode: Mode, sizes: tuple[int, int], n_items: int) -> None:
    reps = mode.reps(300, 400)
    with_mixed = mode.reps(240, 400)  # the mixed model's fit is 20x the rest of a study: fitted in these
    rng = np.random.default_rng(seed_of("rows15-18", sizes, n_items))
    truth = rounded_mean(3.0, math.sqrt(ITEM_SD**2 + LENIENCY_SD**2 + NOISE_SD**2))
    perm = judge_perm = mixed = fitted = 0
    cover = {"A": 0, "B": 0}
    for study_index in range(reps):
        table, info = study(rng, n_items, sizes, 0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # statsmodels' convergence chatter
            block = analyze_groups(table, info, [JUDGE], mixed_model=study_index < with_mixed)["columns"]["group"]["d"]
        perm += block["test"]["p"] < 0.05
        judge_perm += block["judge_agreement"][JUDGE]["test"]["p"] < 0.05
        for g in "AB":
            m = block["groups"][g]
            cover[g] += m["ci_low"] <= truth <= m["ci_high"]
        terms = (block.get("mixed_model") or {}).get("terms") or {}
        if terms:
            fitted += 1
            mixed += next(iter(terms.values()))["p_t"] < 0.05
    design = f"{sizes[0]} vs {sizes[1]} raters, {n_items} items"
    cells = mode.cells(1, 4)
    assert_level("15", f"rater-level permutation p < .05, {design}", perm, reps, cells=cells)
    assert_level("16", f"judge agreement per group p < .05, {design}", judge_perm, reps, cells=cells)
    for g, n in zip("AB", sizes, strict=True):
        assert_coverage("17", f"group-mean CI, {n} raters in the group, {design}", cover[g], reps, cells=2 * cells)
    assert fitted >= 0.95 * with_mixed
    assert_level("18", f"mixed model p < .05 (t, raters - groups df), {design}", mixed, fitted, cells=cells)


@pytest.mark.full_only
@pytest.mark.parametrize("effect", [0.3, 0.6, 1.0])
def test_row15_power_of_the_permutation_test(mode: Mode, effect: float) -> None:
    reps = mode.reps(50, 150)
    rng = np.random.default_rng(seed_of("row15-power", effect))
    hits = sum(
        analyze_groups(*study(rng, 300, (6, 6), effect), [JUDGE])["columns"]["group"]["d"]["test"]["p"] < 0.05
        for _ in range(reps)
    )
    record_value("15", f"permutation test power, group effect {effect}, 6 vs 6 raters, 300 items", hits / reps, reps)
