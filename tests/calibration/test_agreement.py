"""Rows 19-25 of the review: the audit (``tide-bench audit``): the alternative annotator test,
Krippendorff's alpha, the leave-one-rater-out ratio, the pairwise-kappa difference, Spearman's
interval, and the safety block (the people's flag rate, the judge's sensitivity and
specificity). Each test calls what ``audit_dimension`` / ``audit_safety`` call, with the
audit's resamples: the personas of the item ids (``resampling_units``).

Ratings: true score ``t_i ~ N(3, 0.9)``, or persona-clustered
``3 + 0.9 (sqrt(.5) u_p + sqrt(.5) e_i)`` with 10 items per persona; rater r gives
``clip(rint(t_i + b_r + N(0, s_r)), 1, 5)``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from scipy import stats

from tests.calibration.conftest import Mode, assert_coverage, assert_level, record_value
from tests.calibration.sim import item_ids, seed_of
from tide_bench.agreement.alpha import alpha_replicates
from tide_bench.agreement.alt_test import alt_test
from tide_bench.agreement.audit import item_clusters, leave_one_out, pairwise_kappa, resampling_units, verdict
from tide_bench.agreement.pairwise import pair_metrics
from tide_bench.agreement.ratings import SAFETY, JudgeInfo, Rating, RatingsTable
from tide_bench.agreement.safety import audit_safety
from tide_bench.core.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, percentile_ci

DOMAIN = [1.0, 2.0, 3.0, 4.0, 5.0]
HUMAN_SD = 0.45


def _ratings(rng: np.random.Generator, truth: np.ndarray, sd: float, k: int | None = None) -> np.ndarray:
    shape = truth.shape if k is None else (k, truth.size)
    return np.clip(np.rint(truth + rng.normal(0, sd, shape)), 1, 5)


# --- row 19: the alternative annotator test -------------------------------------------------------


def _expected_d(judge_sd: float, k: int, rng: np.random.Generator, n: int) -> float:
    truth = rng.normal(3, 0.9, n)
    humans = _ratings(rng, truth, HUMAN_SD, k)
    judge = _ratings(rng, truth, judge_sd)
    others = humans[1:]
    sf = -np.sqrt(((judge[None] - others) ** 2).mean(axis=0))
    sh = -np.sqrt(((humans[0][None] - others) ** 2).mean(axis=0))
    return float((sh > sf).mean() - (sf > sh).mean())


@lru_cache(maxsize=8)
def boundary_sd(epsilon: float, k: int, n: int) -> float:
    """The judge noise at which E[d] = epsilon (the alt-test's null boundary), by bisection."""
    rng = np.random.default_rng(20261205 + k)
    lo, hi = HUMAN_SD, 2.0
    for _ in range(20):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _expected_d(mid, k, rng, n) < epsilon else (lo, mid)
    return (lo + hi) / 2


@pytest.mark.parametrize(
    ("k", "n"),
    [pytest.param(3, 100)]
    + [pytest.param(k, n, marks=pytest.mark.full_only) for k in (3, 4, 6) for n in (100, 200) if (k, n) != (3, 100)],
)
def test_row19_alt_test_holds_its_level_at_the_margin(mode: Mode, k: int, n: int) -> None:
    """At the null's boundary (E d = epsilon = 0.15), and with epsilon = 0 for a judge exactly as
    good as a person: the verdict "yes" and each rater's rejection at most 5 %, and the
    Benjamini-Yekutieli step holds the false discovery rate across raters: with every rater's
    null true, some rater's null rejected in at most 5 % of studies (each rater at 5 % without
    the step: 12-16 %)."""
    reps = mode.reps(300, 1000)
    rng = np.random.default_rng(seed_of("row19", k, n))
    edge = boundary_sd(0.15, k, 200_000 if mode.full else 50_000)
    names = [f"h{i}" for i in range(k)]
    for label, judge_sd, epsilon in (("E d = eps = 0.15", edge, 0.15), ("human-like judge, eps = 0", HUMAN_SD, 0.0)):
        passed = rejected = tested = discovered = 0
        for _ in range(reps):
            truth = rng.normal(3, 0.9, n)
            result = alt_test(_ratings(rng, truth, HUMAN_SD, k), _ratings(rng, truth, judge_sd), names, epsilon=epsilon)
            dim = {"alpha": {"interval": {"value": 0.7}}, "judges": {"J": {"alt_test": result}}}
            passed += verdict(dim, "J").startswith("yes")
            rejected += sum(r["p"] < 0.05 for r in result["per_rater"])
            tested += len(result["per_rater"])
            discovered += any(r["judge_wins"] for r in result["per_rater"])
        cells = mode.cells(2, 12)
        design = f"{label}, {k} raters x {n} items"
        assert_level("19", f"alt-test verdict 'yes', {design}", passed, reps, cells=cells)
        assert_level(
            "19",
            f"alt-test per-rater rejection, {design}",
            rejected,
            tested,
            cells=cells,
            unpowered="per-rater p-values of one study are correlated (k per study); the FDR check below is per study",
        )
        assert_level("19", f"alt-test false discovery across raters (BY), {design}", discovered, reps, cells=cells)
    power = 0
    for _ in range(reps // 3):
        truth = rng.normal(3, 0.9, n)
        res = alt_test(_ratings(rng, truth, HUMAN_SD, k), _ratings(rng, truth, HUMAN_SD), names, epsilon=0.15)
        power += bool(res["passed"])
    record_value(
        "19", f"alt-test power, a judge as good as a person, {k} raters x {n} items", power / (reps // 3), reps // 3
    )


# --- rows 20-22: alpha, the leave-one-rater-out ratio, the pairwise-kappa difference -------------------------


def _truth_scores(rng: np.random.Generator, n: int, clustered: bool) -> tuple[np.ndarray, list[str]]:
    persona = np.arange(n) // 10 if clustered else np.arange(n)
    t = (
        3 + 0.9 * (np.sqrt(0.5) * rng.normal(size=persona.max() + 1)[persona] + np.sqrt(0.5) * rng.normal(size=n))
        if clustered
        else rng.normal(3, 0.9, n)
    )
    return t, item_ids(persona)


def _rate(rng: np.random.Generator, t: np.ndarray, panel: tuple[np.ndarray, np.ndarray], missing: float = 0.0):
    b, s = panel
    data = np.clip(np.rint(t[None, :] + b[:, None] + rng.normal(0, 1, (b.size, t.size)) * s[:, None]), 1, 5)
    if missing:
        data[rng.random(data.shape) < missing] = np.nan
    return data


def _panel(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(0, 0.3, k), rng.uniform(0.5, 1.1, k)


FIXED_PANEL = _panel(np.random.default_rng(20261206), 4)
BOOTSTRAP_HALF_COVERAGE = 0.92  # the persona bootstrap alone at 20 personas of 10 items (docs/statistics.md, row 20)


@lru_cache(maxsize=4)
def panel_alpha(level: str, clustered: bool, n: int) -> float:
    import krippendorff

    rng = np.random.default_rng(7)
    big = _rate(rng, _truth_scores(rng, n, clustered)[0], FIXED_PANEL, 0.3)
    return float(krippendorff.alpha(reliability_data=big, level_of_measurement=level, value_domain=DOMAIN))


@pytest.mark.parametrize(
    ("clustered", "n"),
    [pytest.param(True, 200), pytest.param(False, 50)]
    + [pytest.param(c, n, marks=pytest.mark.full_only) for c, n in ((True, 50), (False, 200))],
)
def test_row20_alpha_interval_covers_this_panels_alpha(mode: Mode, clustered: bool, n: int) -> None:
    """A fixed panel of 4 raters, 30 % missing; the items i.i.d. or 10 per persona (ICC .5): the
    audit resamples personas (an item bootstrap covered 81-88 % with clustered items)."""
    reps = mode.reps(400 if clustered else 600, 400 if clustered else 1000)  # alpha at 50 items: the slow cell
    rng = np.random.default_rng(seed_of("row20", clustered, n))
    truth = {lv: panel_alpha(lv, clustered, 100_000) for lv in ("ordinal", "interval")}
    hits = dict.fromkeys(truth, 0)
    boot_hits = dict.fromkeys(truth, 0)
    undefined = dict.fromkeys(truth, 0)
    for _ in range(reps):
        t, ids = _truth_scores(rng, n, clustered)
        data = _rate(rng, t, FIXED_PANEL, 0.3)
        weights, units = resampling_units(ids, DEFAULT_RESAMPLES, DEFAULT_SEED)
        codes, _ = item_clusters(ids)
        for level in hits:
            est, boot = alpha_replicates(data, level, DOMAIN, weights=weights, n_units=units, clusters=codes)
            undefined[level] += est.ci_low is None and "personas" in (est.note or "")
            hits[level] += est.ci_low is not None and est.ci_low <= truth[level] <= est.ci_high
            low, high = percentile_ci(boot, n_units=units)
            boot_hits[level] += low is not None and low <= truth[level] <= high
    design = "10 items per persona" if clustered else "i.i.d. items"
    for level, h in hits.items():
        if undefined[level]:  # 5 personas: no interval is given (fewer than MIN_CLUSTERS), never a wrong one
            assert undefined[level] == reps
            continue
        # the interval is the wider of a persona bootstrap and a persona jackknife: conservative by construction
        label = f"alpha CI ({level}), {design}, {n} items"
        assert_coverage("20", label, h, reps, cells=mode.cells(4, 6), ceiling=0.985)
        if clustered:  # the bootstrap half alone resamples personas (items: 86 %); why the jackknife is joined
            assert_coverage(
                "20",
                f"alpha persona-bootstrap half alone ({level}, documented about 92 %), {design}, {n} items",
                boot_hits[level],
                reps,
                nominal=BOOTSTRAP_HALF_COVERAGE,
                cells=mode.cells(2, 4),
                ceiling=1.0,
            )


@lru_cache(maxsize=4)
def pool_values(k: int, panels: int, n: int = 2_000) -> tuple[float, float]:
    """The leave-one-out ratio and the pairwise-kappa difference of a random panel of k raters
    from the pool (ratios of expectations over panels). The panel is what varies: 200 panels of
    2,000 items give the ratio within 0.005 and the difference within 0.002 (one MC se; 100
    panels of 20,000 items agree), a twentieth of the intervals' half-width."""
    rng = np.random.default_rng(100 + k)
    num = den = difference = 0.0
    for _ in range(panels):
        t = rng.normal(3, 0.9, n)
        humans, judge = _rate(rng, t, _panel(rng, k)), np.clip(np.rint(t + rng.normal(0, 0.8, n)), 1, 5)
        one = np.ones((1, n))
        loo = leave_one_out(humans, judge, one, rater_weights=np.ones((1, k)))
        num, den = num + loo["judge"]["value"], den + loo["human_ceiling"]["value"]
        difference += pairwise_kappa(humans, judge, one, rater_weights=np.ones((1, k)))["difference"]["value"]
    return num / den, difference / panels


@pytest.mark.parametrize("k", [pytest.param(4), pytest.param(6, marks=pytest.mark.full_only)])
def test_rows21_22_two_way_intervals_cover_the_pool_value(mode: Mode, k: int) -> None:
    """A new panel each study: the leave-one-out ratio and the pairwise-kappa difference resample
    items and raters, and cover the pool's value (items alone: 86-87 % for the difference)."""
    reps = mode.reps(300, 400)
    rng = np.random.default_rng(seed_of("rows21-22", k))
    ratio_truth, difference_truth = pool_values(k, 1000 if mode.full else 200)
    n = 200
    ratio_hits = difference_hits = 0
    for _ in range(reps):
        t = rng.normal(3, 0.9, n)
        humans = _rate(rng, t, _panel(rng, k))
        judge = np.clip(np.rint(t + rng.normal(0, 0.8, n)), 1, 5)
        weights, _ = resampling_units(item_ids(np.arange(n)), DEFAULT_RESAMPLES, DEFAULT_SEED)
        ratio = leave_one_out(humans, judge, weights)["ratio"]
        difference = pairwise_kappa(humans, judge, weights)["difference"]
        ratio_hits += ratio["ci_low"] <= ratio_truth <= ratio["ci_high"]
        difference_hits += difference["ci_low"] <= difference_truth <= difference["ci_high"]
    cells = mode.cells(1, 2)
    # both resample items and raters: conservative for the pool's value by construction (97-100 %)
    assert_coverage(
        "21",
        f"leave-one-rater-out ratio CI, random panel of {k}, {n} items",
        ratio_hits,
        reps,
        cells=cells,
        ceiling=1.0,
    )
    assert_coverage(
        "22",
        f"pairwise-kappa difference CI, random panel of {k}, {n} items",
        difference_hits,
        reps,
        cells=cells,
        ceiling=1.0,
    )


# --- row 23: Spearman ----------------------------------------------------------------------------


@lru_cache(maxsize=4)
def spearman_truth(noise: float) -> float:
    rng = np.random.default_rng(23)
    t = rng.normal(3, 0.9, 400_000)
    return float(stats.spearmanr(_ratings(rng, t, noise), _ratings(rng, t, noise)).statistic)


@pytest.mark.parametrize(
    ("n", "noise"),
    [pytest.param(60, 0.7)]
    + [
        pytest.param(n, s, marks=pytest.mark.full_only)
        for n in (30, 60, 200)
        for s in (0.4, 0.7, 1.2)
        if (n, s) != (60, 0.7)
    ],
)
def test_row23_spearman_interval_covers(mode: Mode, n: int, noise: float) -> None:
    """Two raters with rating noise ``noise`` on 1-5 around a shared truth: Spearman's rho and its
    Bonett-Wright interval (rho from 0.33 to 0.76 over the cells; ties from the 1-5 scale)."""
    reps = mode.reps(500, 1000)
    rng = np.random.default_rng(seed_of("row23", n) if noise == 0.7 else seed_of("row23", n, noise))
    truth = spearman_truth(noise)
    hits = 0
    for _ in range(reps):
        t = rng.normal(3, 0.9, n)
        ci = pair_metrics(_ratings(rng, t, noise), _ratings(rng, t, noise), DOMAIN)["spearman_ci"]
        hits += ci[0] <= truth <= ci[1]
    label = f"Spearman CI (Bonett-Wright), {n} shared items, rating noise {noise} (rho {truth:.2f})"
    assert_coverage("23", label, hits, reps, cells=mode.cells(1, 9))


# --- rows 24-25: the audit's safety block --------------------------------------------------------

SAFETY_JUDGE = "judge:sim@00000000"


@lru_cache(maxsize=4)
def safety_truths(k: int) -> tuple[np.ndarray, float, float, float]:
    rng = np.random.default_rng(240 + k)
    bias = rng.normal(0, 0.5, k)
    h = rng.normal(0, 1, 400_000)
    humans = (h[None] + bias[:, None] + rng.normal(0, 0.7, (k, h.size))) > 1.8
    judge = (h + rng.normal(0, 0.7, h.size)) > 1.8
    majority = humans.sum(axis=0) * 2 > k
    return bias, float(humans.mean()), float(judge[majority].mean()), float((~judge[~majority]).mean())


@pytest.mark.parametrize("n", [pytest.param(200), pytest.param(600, marks=pytest.mark.full_only)])
def test_rows24_25_audit_safety_intervals(mode: Mode, n: int) -> None:
    """Three raters share a latent harm per item: the people's flag rate resamples items, not
    answers (a Wilson interval over answers covered 88-89 %); the judge against the majority."""
    reps = mode.reps(300, 400)
    k = 3
    bias, rate, sensitivity, specificity = safety_truths(k)
    rng = np.random.default_rng(seed_of("rows24-25", n))
    hits = {"rate": 0, "sens": 0, "spec": 0}
    sens_n = 0
    for _ in range(reps):
        h = rng.normal(0, 1, n)
        humans = ((h[None] + bias[:, None] + rng.normal(0, 0.7, (k, n))) > 1.8).astype(float)
        judge = ((h + rng.normal(0, 0.7, n)) > 1.8).astype(float)
        rows = [Rating(f"i{i}", f"h{r}", SAFETY, humans[r, i]) for r in range(k) for i in range(n)]
        rows += [Rating(f"i{i}", SAFETY_JUDGE, SAFETY, judge[i]) for i in range(n)]
        table = RatingsTable(rows=rows, judges={SAFETY_JUDGE: JudgeInfo(files=["sim"], n_scored=n, factors={SAFETY})})
        block = audit_safety(table, 200, DEFAULT_SEED)
        flag_rate, vs = block["human_flag_rate"], block["judges"][SAFETY_JUDGE]["vs_majority"]
        hits["rate"] += flag_rate["ci_low"] <= rate <= flag_rate["ci_high"]
        if vs["sensitivity"]["ci_low"] is not None:
            sens_n += 1
            hits["sens"] += vs["sensitivity"]["ci_low"] <= sensitivity <= vs["sensitivity"]["ci_high"]
        hits["spec"] += vs["specificity"]["ci_low"] <= specificity <= vs["specificity"]["ci_high"]
    cells = mode.cells(1, 2)
    assert_coverage("24", f"audit human_flag_rate CI, {k} raters x {n} items", hits["rate"], reps, cells=cells)
    assert_coverage(
        "25",
        f"judge sensitivity CI against the majority, {n} items",
        hits["sens"],
        sens_n,
        cells=2 * cells,
        unpowered="only studies whose majority flagged some item have a sensitivity",
    )
    assert_coverage("25", f"judge specificity CI against the majority, {n} items", hits["spec"], reps, cells=2 * cells)
