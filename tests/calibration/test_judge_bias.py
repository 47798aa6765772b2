"""Rows 26-29 of the review: the judge-bias diagnostics (``leaderboard.scoring.bias``,
``leaderboard.scoring.padding``, ``agreement.halo``).

Length boards: entries answer the same P personas x m items; reference length
``ref_i ~ U(40, 120)`` word tokens; the judge's overall score
``y_ij = a_j + b tanh((len_ij - ref_i) / s) + persona_p + item_i + noise`` (continuous, so the
truth is exact). N1: replies track the reference length, item effects unrelated to length.
N2: replies do not track it, item difficulty correlates +-0.3 with it (the former estimator:
100 % wrong verdicts). N3: no judge bias, a model's longer replies are truly better (no
observational estimator can tell this from a judge's preference: the verdict reads it as an
association, and the padding probe, which holds the reply fixed, shows no effect).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.calibration.conftest import Mode, assert_coverage, assert_level, assert_power, record_check, record_value
from tests.calibration.sim import FACTORS, personas, seed_of
from tide_bench.leaderboard.scoring.bias import ItemTable, length_bias, preference_leakage
from tide_bench.leaderboard.scoring.padding import padding_effect

ENTRIES = [(3.0, -20), (3.2, 30)]
RESAMPLES = 1000  # the kit's; the board's own count is larger


def length_board(rng, n_p: int, m: int, b: float, mode: str = "N1", corr: float = 0.0, replies=None):
    persona = personas(n_p, m)
    n = persona.size
    ref = rng.uniform(40, 120, n)
    zref = (ref - ref.mean()) / ref.std()
    item = 0.4 * (corr * zref + np.sqrt(1 - corr**2) * rng.normal(size=n))
    shared = rng.normal(0, 0.3, n_p)[persona] + item
    if replies is None:
        centre = 80 if mode == "N2" else ref
        replies = [np.maximum(1, centre + shift + rng.normal(0, 25, n)) for _, shift in ENTRIES]
    scale = float(np.std(np.concatenate([r - ref for r in replies])))
    tables, quality = [], []
    for (a, _), reply in zip(ENTRIES, replies, strict=True):
        q = a + shared + rng.normal(0, 0.5, n)
        if mode == "N3":
            diff = reply - ref
            q = q + 0.3 * (diff - diff.mean()) / diff.std()
        y = q + b * np.tanh((reply - ref) / scale)
        factors = y[:, None] + rng.normal(0, 0.05, (n, 3))
        ids = [f"{p}/c{i}/turn1" for i, p in enumerate(persona)]
        tables.append(
            ItemTable([str(p) for p in persona], factors, factors.mean(axis=1), np.zeros(n, bool), reply, ref, ids)
        )
        quality.append(q)
    return tables, quality, scale


CELLS = {
    "N1 null, 30 x 8": (30, 8, 0.0, "N1", 0.0),
    "N1 null, 100 x 20": (100, 20, 0.0, "N1", 0.0),
    "N2 null, item difficulty corr -0.3": (100, 20, 0.0, "N2", -0.3),
    "N2 null, item difficulty corr +0.3": (100, 20, 0.0, "N2", 0.3),
    "N3 no judge bias, longer replies truly better": (100, 20, 0.0, "N3", 0.0),
    "planted b = 0.3, 30 x 8": (30, 8, 0.3, "N1", 0.0),
    "planted b = 0.3, 100 x 20": (100, 20, 0.3, "N1", 0.0),
    "planted b = 0.6, 30 x 8": (30, 8, 0.6, "N1", 0.0),
}
FAST = ("N1 null, 30 x 8", "N2 null, item difficulty corr -0.3", "planted b = 0.3, 30 x 8")


@pytest.mark.parametrize("cell", [pytest.param(c, marks=() if c in FAST else pytest.mark.full_only) for c in CELLS])
def test_rows26_27_length_slope_verdict_and_lc(mode: Mode, cell: str) -> None:
    """The association verdict holds its level under both nulls (two-sided 5 %), has power under
    a planted slope; the slope's and the length-controlled score's intervals cover."""
    n_p, m, b, kind, corr = CELLS[cell]
    reps = mode.reps(300, 400)
    rng = np.random.default_rng(seed_of("rows26-27", cell))
    verdicts = slope_hits = lc_hits = lc_n = 0
    for _ in range(reps):
        tables, _, _ = length_board(rng, n_p, m, b, kind, corr)
        per_entry, board = length_bias(tables, resamples=RESAMPLES)
        verdicts += board["verdict"] != "no association with length shown"
        s = board["slope"]
        slope_hits += s["ci_low"] <= b <= s["ci_high"]
        if kind == "N1":
            for (a, _), e in zip(ENTRIES, per_entry, strict=True):
                lc_hits += e["empathy_lc"]["ci_low"] <= a <= e["empathy_lc"]["ci_high"]
                lc_n += 1
    if kind == "N3":  # an association that is real: reported as such, never as the judge's preference
        record_value("26", f"'scores rise with length' (an association), {cell}", verdicts / reps, reps)
        return
    if b == 0:
        assert_level("26", f"length verdict (two-sided), {cell}", verdicts, reps, cells=mode.cells(4, 6))
    else:
        assert_power("26", f"length verdict power, {cell}", verdicts, reps, 0.9)
    assert_coverage("26", f"length slope CI, {cell}", slope_hits, reps, cells=mode.cells(3, 7))
    if lc_n:
        assert_coverage("27", f"empathy_lc CI, {cell}", lc_hits, lc_n, cells=mode.cells(2, 5))


@pytest.mark.parametrize(("b", "kind"), [(0.0, "N1"), (0.0, "N3"), (0.3, "N1")])
def test_row26_padding_probe_tests_the_judge(mode: Mode, b: float, kind: str) -> None:
    """The padding probe: the same replies with 40 neutral tokens appended, judged again (a new
    judge noise draw). A judge indifferent to length is accused in at most 5 % of boards, also
    when longer replies are truly better (N3); a judge with b = 0.3 is caught."""
    reps = mode.reps(300, 400)
    rng = np.random.default_rng(seed_of("row26-padding", b, kind))
    accused = 0
    for _ in range(reps):
        tables, quality, scale = length_board(rng, 30, 8, b, kind)
        t, q = tables[0], quality[0]
        padded_len = t.reply_tokens + 40
        y = q + b * np.tanh((padded_len - t.reference_tokens) / scale)
        factors = y[:, None] + rng.normal(0, 0.05, (y.size, 3))
        padded = ItemTable(
            t.personas, factors, factors.mean(axis=1), t.failure, padded_len, t.reference_tokens, t.item_ids
        )
        # the original judged again too: the judge's noise is drawn anew for both
        y0 = q + b * np.tanh((t.reply_tokens - t.reference_tokens) / scale)
        f0 = y0[:, None] + rng.normal(0, 0.05, (y.size, 3))
        original = ItemTable(
            t.personas,
            f0,
            f0.mean(axis=1) + rng.normal(0, 0.3, y.size),
            t.failure,
            t.reply_tokens,
            t.reference_tokens,
            t.item_ids,
        )
        padded.counted = padded.counted + rng.normal(0, 0.3, y.size)
        accused += padding_effect(original, padded, resamples=RESAMPLES)["verdict"].startswith("the judge")
    label = f"padding probe verdict, judge b = {b}, {kind}, 30 x 8"
    if b == 0:
        assert_level("26", label, accused, reps, cells=mode.cells(4, 6))
    else:
        assert_power("26", label, accused, reps, 0.9)


def test_row27_degenerate_design_is_n_a() -> None:
    """Issue 34 item 2: every reply has one length (the token cap): no estimate, the reason."""
    rng = np.random.default_rng(27)
    tables, _, _ = length_board(rng, 30, 8, 0.0, replies=[np.full(240, 64.0), np.full(240, 64.0)])
    per_entry, board = length_bias(tables, resamples=RESAMPLES)
    assert board["slope"]["value"] is None and board["verdict"].startswith("no verdict")
    assert all(e["empathy_lc"]["mean"] is None and "one length" in e["empathy_lc"]["note"] for e in per_entry)


# --- row 28: halo against people ------------------------------------------------------------------


def halo_study(rng, n_items: int, rho: float, judge_sd: float, impression: float, raters: int = 5):
    """People rate the true factor qualities; the judge rates ``impression * mean + (1 - impression) *
    factor`` (1: one impression for all three factors, 0: a faithful judge), each with its own noise."""
    from tide_bench.agreement.ratings import JudgeInfo, Rating, RatingsTable

    persona = np.arange(n_items) // 10
    base = 0.6 * rng.normal(size=persona.max() + 1)[persona] + 0.6 * rng.normal(size=n_items)
    truth = 3 + base[:, None] + rng.normal(0, np.sqrt(0.72 * (1 - rho) / rho), (n_items, 3))
    ids = [f"run/{p}/c{i}/turn1" for i, p in enumerate(persona)]
    rows = []
    for i in range(n_items):
        for r in rng.choice(raters, 3, replace=False):
            scores = np.clip(np.rint(truth[i] + rng.normal(0, 0.7, 3)), 1, 5)
            rows += [Rating(ids[i], f"h{r}", f, float(x)) for f, x in zip(FACTORS, scores, strict=True)]
        source = impression * truth[i].mean() + (1 - impression) * truth[i]
        judged = np.clip(np.rint(source + rng.normal(0, judge_sd, 3)), 1, 5)
        rows += [Rating(ids[i], "judge:sim@0", f, float(x)) for f, x in zip(FACTORS, judged, strict=True)]
    table = RatingsTable(
        rows=rows, judges={"judge:sim@0": JudgeInfo(files=["sim"], n_scored=n_items, factors=set(FACTORS))}
    )
    return table, ids


HALO_CELLS = {
    "faithful judge, less noisy than people": (0.6, 0.3, 0.0),
    "faithful judge, noisier than people": (0.6, 0.9, 0.0),
    "faithful judge, factors truly correlated 0.95": (0.95, 0.3, 0.0),
    "one-impression judge, noise sd 0.4": (0.6, 0.4, 1.0),
    "one-impression judge, noise sd 0.6": (0.6, 0.6, 1.0),
    "half-impression judge, noise sd 0.4": (0.6, 0.4, 0.5),
}


@pytest.mark.parametrize(
    ("cell", "n_items"),
    [
        ("faithful judge, less noisy than people", 67),
        ("one-impression judge, noise sd 0.4", 67),
    ]
    + [
        pytest.param(c, n, marks=pytest.mark.full_only)
        for c in HALO_CELLS
        for n in (67, 200)
        if (c, n) not in (("faithful judge, less noisy than people", 67), ("one-impression judge, noise sd 0.4", 67))
    ],
)
def test_row28_halo_against_people(mode: Mode, cell: str, n_items: int) -> None:
    """`tide-bench audit`'s halo verdict (the shipped annotation design: 5 raters, 3 per item):
    a faithful judge is accused in at most 5 % of studies whatever its noise; a one-impression
    judge is caught (the board's former r > .9 rule: 0 %)."""
    from tide_bench.agreement.audit import resampling_units
    from tide_bench.agreement.halo import halo_comparison

    rho, judge_sd, one = HALO_CELLS[cell]
    reps = mode.reps(300, 400)
    rng = np.random.default_rng(seed_of("row28", cell, n_items))
    flagged = 0
    for _ in range(reps):
        table, ids = halo_study(rng, n_items, rho, judge_sd, one)
        weights, units = resampling_units(sorted(set(ids)), RESAMPLES, 20250521)
        result = halo_comparison(table, "judge:sim@0", list(FACTORS), sorted(set(ids)), weights, n_units=units)
        flagged += result["verdict"].startswith("halo")
    label = f"halo {'detection' if one else 'accusation'}, {cell}, {n_items} items x 3 of 5 raters"
    if one:
        if n_items == 67 and judge_sd <= 0.4 and one == 1.0:
            assert_power("28", label, flagged, reps, 0.8)
        else:
            record_value("28", label, flagged / reps, reps)
    else:
        assert_level("28", label, flagged, reps, cells=mode.cells(1, 6))


@pytest.mark.parametrize(
    ("judge_family", "trained_on_tide", "risk"),
    [("claude", True, True), ("gpt", True, False), ("claude", False, False)],
)
def test_row29_preference_leakage_is_a_rule(judge_family: str, trained_on_tide: bool, risk: bool) -> None:
    """Not a statistic: a fine-tuned entry trained on references of the judge's own family is
    flagged, with the cross-family re-judge command."""
    data = {"source": "hub:yenopoya/TIDE", "is_synthetic_sample": not trained_on_tide}
    manifest = {"model": {"adapter": {"path": "a", "card": {"data": data}}}}
    row = {"condition": "fine-tuned", "judge": {"family": judge_family, "model": judge_family}}
    result = preference_leakage(row, manifest, {})
    assert result["risk"] is risk and (result["rejudge_command"] is not None) is risk
    record_check(
        "29", f"preference leakage rule, flagged iff the judge's family wrote the training references ({risk})"
    )
