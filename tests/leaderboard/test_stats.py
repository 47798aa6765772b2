"""The leaderboard's statistics: calibrated by seeded simulation, and each decision rule by hand.

Simulated data has TIDE's shape (personas x items, every model answering the same items);
nothing here depends on the built-in sample's size or turns.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide_bench.core.errors import ConfigError
from tide_bench.core.stats import mean_ci
from tide_bench.judging.judgment import UNSCORED_KINDS
from tide_bench.judging.summary import score_block
from tide_bench.leaderboard import build_site, load_board

# Names that the fix introduced are imported inside the tests, so that each test can be run
# (and seen to fail for its own reason) against the code before the fix.

FACTORS = ["emotion_recognition", "distress_normalization", "supportive_reflection"]
VERSION = "statsstatsstats0"


def simulate(
    means: list[float],
    n_personas: int,
    per_persona: int,
    rng: np.random.Generator,
    persona_sd: float = 0.2,
    item_sd: float = 0.5,
    noise_sd: float = 0.6,
) -> tuple[np.ndarray, np.ndarray]:
    """Judge-like overall scores (mean of three rounded 1-5 factors), items x models, and personas."""
    persona = np.repeat(np.arange(n_personas), per_persona)
    shared = rng.normal(0, persona_sd, n_personas)[persona] + rng.normal(0, item_sd, persona.size)
    columns = []
    for mu in means:
        latent = mu + shared + rng.normal(0, noise_sd, persona.size)
        columns.append(np.clip(np.rint(latent[:, None] + rng.normal(0, 0.5, (persona.size, 3))), 1, 5).mean(axis=1))
    return np.stack(columns, axis=1), persona


# --- calibration ---------------------------------------------------------------------------------


def test_persona_cluster_interval_covers_at_the_nominal_rate() -> None:
    """Items nest in personas (ICC ~0.1): the cluster bootstrap covers ~95 %; an item bootstrap ~60 %."""
    rng = np.random.default_rng(20250521)
    truth, covered = 3.0, 0
    reps = 400
    for _ in range(reps):
        persona = np.repeat(np.arange(50), 20)
        values = truth + rng.normal(0, 0.35, 50)[persona] + rng.normal(0, 1.0, persona.size)
        ci = mean_ci(values, clusters=persona, resamples=1000)
        covered += ci.ci_low <= truth <= ci.ci_high
    assert 0.92 <= covered / reps <= 0.98


def test_paired_difference_interval_covers_at_the_nominal_rate() -> None:
    from tide_bench.leaderboard.scoring.ranking import paired_ranking

    rng = np.random.default_rng(7)
    covered, reps = 0, 200
    for _ in range(reps):
        values, persona = simulate([3.0, 3.1], 40, 10, rng, persona_sd=0.3)
        # the expected difference of the rounded scores: estimated from a large draw once below
        pair = paired_ranking(values, persona.astype(str), resamples=500).pairs[0]
        covered += pair["ci_low"] <= -TRUE_DIFF <= pair["ci_high"]
    assert 0.92 <= covered / reps <= 0.98


TRUE_DIFF = float(np.diff(simulate([3.0, 3.1], 20000, 10, np.random.default_rng(0), persona_sd=0.3)[0].mean(axis=0))[0])


@pytest.mark.parametrize("correction", ["max-t", "holm"])
def test_equal_models_are_rarely_told_apart(correction: str) -> None:
    """Six equal models: family-wise false separations stay near 5 %."""
    from tide_bench.leaderboard.scoring.ranking import paired_ranking

    rng = np.random.default_rng(11)
    reps, any_separated = 150, 0
    for _ in range(reps):
        values, persona = simulate([3.0] * 6, 40, 20, rng)
        ranking = paired_ranking(values, persona.astype(str), correction=correction, resamples=1000)
        any_separated += ranking.n_significant > 0
        assert max(ranking.rank) <= 6
    assert any_separated / reps <= 0.08


def test_paired_ranking_separates_more_true_pairs_than_the_overlap_rule() -> None:
    from tide_bench.leaderboard.scoring.ranking import paired_ranking

    means = [3.00, 3.00, 3.04, 3.08, 3.12, 3.20]
    truly_different = {(a, b) for a, b in itertools.combinations(range(6), 2) if means[a] != means[b]}
    rng = np.random.default_rng(3)
    paired, overlap = 0, 0
    for _ in range(12):
        values, persona = simulate(means, 60, 40, rng)
        ranking = paired_ranking(values, persona.astype(str), resamples=500)
        paired += len({(p["a"], p["b"]) for p in ranking.pairs if p["significant"]} & truly_different)
        cis = [mean_ci(values[:, k], clusters=persona, resamples=500) for k in range(6)]
        overlap += sum(
            1 for a, b in truly_different if cis[a].ci_low > cis[b].ci_high or cis[b].ci_low > cis[a].ci_high
        )
    assert paired > 1.3 * overlap


# --- decision rules by hand -----------------------------------------------------------------------


def test_rank_is_one_plus_models_significantly_better() -> None:
    from tide_bench.leaderboard.scoring.ranking import paired_ranking

    persona = np.repeat(np.arange(30), 10).astype(str)
    rng = np.random.default_rng(0)
    base = rng.normal(3, 0.5, persona.size)
    values = np.stack([base + 1.0, base + 1.0 + rng.normal(0, 0.01, persona.size), base, base - 1.0], axis=1)
    ranking = paired_ranking(values, persona, resamples=300)
    assert ranking.rank == [1, 1, 3, 4]  # the first two do not differ: they share rank 1
    assert ranking.rank_interval[3] == (4, 4) and ranking.rank_interval[0][0] == 1 and ranking.rank_interval[1][1] == 2
    pair = next(p for p in ranking.pairs if (p["a"], p["b"]) == (2, 3))
    assert pair["difference"] == pytest.approx(1.0) and pair["significant"] and pair["n_items"] == 300


def test_pairs_use_only_items_counted_for_both() -> None:
    from tide_bench.leaderboard.scoring.ranking import paired_ranking

    persona = np.repeat(np.arange(10), 4).astype(str)
    a = np.full(40, 4.0)
    b = np.full(40, 3.0)
    b[:20] = np.nan  # infrastructure-unscored for model b
    a[:20] = 1.0  # a is bad exactly where b is missing: not counted in the pair
    pair = paired_ranking(np.stack([a, b], axis=1), persona, resamples=200).pairs[0]
    assert pair["n_items"] == 20 and pair["difference"] == pytest.approx(1.0)


def test_wilson_interval_by_hand() -> None:
    from tide_bench.core.stats import proportion_ci, wilson_interval

    low, high = wilson_interval(0, 2000)
    assert low == 0 and high == pytest.approx(0.00192, abs=2e-5)  # [0, 0.19 %], not [0, 0]
    low, high = wilson_interval(1, 2000)
    assert low == pytest.approx(0.0000883, abs=5e-6) and high == pytest.approx(0.00283, abs=2e-5)
    assert wilson_interval(10, 10)[1] == 1.0 and wilson_interval(0, 0) == (None, None)
    flags = proportion_ci(np.zeros(2000))
    assert flags.mean == 0 and flags.ci_high == pytest.approx(0.00192, abs=2e-5)


def test_design_effect_by_hand() -> None:
    from tide_bench.core.stats import design_effect

    persona = np.repeat(np.arange(20), 5)
    clustered = np.repeat(np.arange(20, dtype=float), 5)  # every item equals its persona: ICC 1
    assert design_effect(clustered, persona) == pytest.approx(5.0 * 19 / 20 * 20 / 19, rel=0.05)
    independent = np.random.default_rng(1).normal(size=100)
    assert 0.5 < design_effect(independent, persona) < 1.6
    assert design_effect(np.ones(10), np.arange(10)) is None  # no variance: undefined, not a number


def test_unscored_kinds_each_have_a_cause() -> None:
    from tide_bench.judging.judgment import UNSCORED_CAUSES, unscored_cause

    assert set(UNSCORED_CAUSES) == set(UNSCORED_KINDS)
    assert unscored_cause("empty_reply") == "model" and unscored_cause("transient_failure") == "infrastructure"
    assert unscored_cause("something_new") == "model"  # unknown: counted against the model, never in its favour


def _record(
    status: str,
    kind: str | None = None,
    scores: tuple[int, int, int] = (5, 5, 5),
    flagged: bool = False,
    item: str = "p/c/turn1",
) -> dict:
    if status == "scored":
        return {
            "item_id": item,
            "status": "scored",
            "scores": dict(zip(FACTORS, scores, strict=True)),
            "safety": {"flagged": flagged},
        }
    return {"item_id": item, "status": "unscored", "unscored_kind": kind, "scores": None, "safety": None}


def test_counted_values_per_branch() -> None:
    from tide_bench.judging.summary import counted_values

    records = [
        _record("scored", scores=(5, 4, 3)),
        _record("unscored", "empty_reply"),
        _record("unscored", "transient_failure"),
        *(_record("unscored", kind) for kind in ("malformed_output", "schema_violation", "api_rejected")),
    ]
    counted = counted_values(records, FACTORS, 1)
    assert counted[0].tolist() == [5, 4, 3, 4] and counted[1].tolist() == [1, 1, 1, 1] and np.isnan(counted[2]).all()
    # missing not at random: a reply that derails the judge counts at the minimum, never left out
    assert counted[3:].tolist() == [[1, 1, 1, 1]] * 3
    assert counted_values(records, FACTORS, 1, impute_unscored=5)[1:].tolist() == [[5] * 4] * 5


def test_judge_summary_counts_failures_at_the_minimum_with_bounds() -> None:
    records = [_record("scored", item=f"p{i}/c/turn1", flagged=i == 0) for i in range(4)]
    records += [
        _record("unscored", "empty_reply", item="p4/c/turn1"),
        _record("unscored", "transient_failure", item="p5/c/turn1"),
    ]
    block = score_block(records, FACTORS)
    assert block["empathy"]["mean"] == pytest.approx(
        (4 * 5 + 1) / 5
    )  # the empty reply counts as 1; the timeout is left out
    assert block["n_model_failures"] == 1 and block["n_infrastructure_unscored"] == 1 and block["n_items"] == 6
    assert block["empathy_bounds"] == {"worst": pytest.approx(22 / 6), "best": pytest.approx(5.0)}
    assert block["failure_rate"]["mean"] == pytest.approx(1 / 6) and block["failure_rate"]["ci_low"] > 0
    assert block["safety_flag_rate"]["mean"] == pytest.approx(1 / 4) and block["empathy"]["n_clusters"] == 5


def test_admission_by_hand() -> None:
    """The limit applies to every infrastructure kind: those left out of the means could hide weak
    items; those counted at the minimum cannot, but that many says the judge run is unhealthy."""
    from tide_bench.leaderboard.submission.admission import admission_errors

    row = {
        "infrastructure_unscored_rate": 0.01,
        "n_infrastructure_unscored": 2,
        "n_items": 200,
        "unscored_reasons": {"transient_failure": 2},
    }
    assert admission_errors(row, max_infrastructure_unscored=0.02) == []
    row |= {"infrastructure_unscored_rate": 0.05, "n_infrastructure_unscored": 10}
    (error,) = admission_errors(row, max_infrastructure_unscored=0.02)
    assert "10 of 200 items (5.0%)" in error and "--retry-unscored" in error and "transient_failure: 10" not in error
    assert admission_errors({"infrastructure_unscored_rate": None}, max_infrastructure_unscored=0.0) == []


def test_board_statistics_settings_are_checked(tmp_path: Path) -> None:
    for bad, field in (
        ("rank_correction: bonferroni", "rank_correction"),
        ("max_infrastructure_unscored: 2", "max_infrastructure_unscored"),
        ("min_scored_items: many", "min_scored_items"),
    ):
        path = tmp_path / "board.yaml"
        path.write_text(f"name: b\n{bad}\n")
        with pytest.raises(ConfigError, match=field):
            load_board(path)
    assert load_board().min_scored_items >= 100 and load_board().rank_correction == "holm"


# --- the whole build ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def judge_server():
    from tests.leaderboard_helpers import fake_judge

    with fake_judge() as server:
        yield server


def test_empty_replies_on_the_worst_items_never_outrank_an_equal_model(tmp_path: Path, judge_server) -> None:
    """Two equally good models; one goes silent on its 12 % hardest items. Dropping those items
    (the old rule) ranked it first; counted at the scale minimum it ranks below, never above."""
    from tests.leaderboard_helpers import board, scripted_submission, synthetic_snapshot

    data = synthetic_snapshot(tmp_path, 20, 10)
    n = 200
    rng = np.random.default_rng(5)
    quality = np.clip(np.rint(rng.normal(3, 1.0, (n, 3))), 1, 5).astype(int).tolist()
    worst = set(np.argsort(np.mean(quality, axis=1))[: n * 12 // 100].tolist())
    scripted_submission(tmp_path, judge_server, "honest", data, lambda k: ("scored", None, tuple(quality[k])))
    scripted_submission(
        tmp_path,
        judge_server,
        "silent",
        data,
        lambda k: ("unscored", "empty_reply", None) if k in worst else ("scored", None, tuple(quality[k])),
    )
    result = build_site(
        tmp_path / "submissions", tmp_path / "site", board(spot_check_items=0), allow_risk_gate_off=True
    )
    rows = {r["id"]: r for r in json.loads((tmp_path / "site" / "leaderboard.json").read_text())["rows"]}
    assert rows["silent"]["empathy"]["mean"] < rows["honest"]["empathy"]["mean"]
    assert rows["silent"]["rank"] >= rows["honest"]["rank"] and result.accepted[0] == "honest"
    assert rows["silent"]["failure_rate"]["mean"] == pytest.approx(len(worst) / n)
    assert (
        rows["silent"]["empathy_bounds"]["best"] > rows["honest"]["empathy"]["mean"]
    )  # how far the unscored share could move it


def test_build_refuses_infrastructure_unscored_above_the_limit_and_publishes_the_pairs(
    tmp_path: Path, judge_server
) -> None:
    from tests.leaderboard_helpers import board as board_config
    from tests.leaderboard_helpers import scripted_submission, synthetic_snapshot

    data = synthetic_snapshot(tmp_path, 12, 5)
    scripted_submission(tmp_path, judge_server, "good", data, lambda k: ("scored", None, (4, 4, 5 if k % 3 else 4)))
    scripted_submission(
        tmp_path,
        judge_server,
        "flaky",
        data,
        lambda k: ("unscored", "transient_failure", None) if k % 10 == 0 else ("scored", None, (5, 5, 5)),
        the_board=board_config(max_infrastructure_unscored=1.0),  # submit checks admission too: a lenient board
    )
    scripted_submission(tmp_path, judge_server, "weak", data, lambda k: ("scored", None, (2, 2, 3 if k % 2 else 2)))
    result = build_site(
        tmp_path / "submissions",
        tmp_path / "site",
        board_config(spot_check_items=0, min_scored_items=1),
        allow_risk_gate_off=True,
    )
    assert "--retry-unscored" in result.refused["flaky"][0] and "6 of 60 items" in result.refused["flaky"][0]
    board = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    assert [r["id"] for r in board["rows"]] == ["good", "weak"] and [r["rank"] for r in board["rows"]] == [1, 2]
    (pair,) = board["pairwise"]
    assert (pair["a"], pair["b"]) == ("good", "weak") and pair["significant"] and pair["difference"] > 1.5
    assert board["rows"][0]["rank_interval"] == [1, 1] and board["rows"][0]["empathy"]["design_effect"] is not None
    assert "significantly better" in board["rank_rule"]
    unranked = build_site(
        tmp_path / "submissions",
        tmp_path / "site2",
        board_config(spot_check_items=0, min_scored_items=61),
        allow_risk_gate_off=True,
    ).board["rows"]
    assert all(r["rank"] is None and "fewer than this board's minimum" in r["unranked_reason"] for r in unranked)


# the numbers no other test read (architecture review 2026-12-01, mutations M1, M3 and M5)

_SCENARIO_SCORES = {"scenario_0": (5, 5, 4), "scenario_1": (3, 2, 2), "scenario_2": (1, 2, 1)}


def test_per_scenario_numbers_and_bounds_are_each_items_own(tmp_path: Path, judge_server) -> None:
    """Per scenario: its items' own mean empathy (model failures at the minimum, a transient
    failure left out) and cosine; the bounds with every unscored item at the minimum / maximum,
    in leaderboard.json, the CSV and the page; and no row field of a standard entry falls to the
    model page's "Other fields" dump."""
    from tests.leaderboard_helpers import board, samples_files, scripted_submission, synthetic_snapshot
    from tide_bench.data import load_dataset
    from tide_bench.judging.rubric import load_rubric
    from tide_bench.leaderboard.scoring.columns import board_columns
    from tide_bench.leaderboard.site.entry_view import KNOWN_ROW_KEYS

    data = synthetic_snapshot(tmp_path, 6, 6)
    items = sorted(load_dataset(str(data)).items_for("test"), key=lambda i: i.item_id)
    empty, flaky = {0, 7, 14}, {20}

    def judged(k: int) -> tuple[str, str | None, Any]:
        if k in empty:
            return ("unscored", "empty_reply", None)
        if k in flaky:
            return ("unscored", "transient_failure", None)
        return ("scored", None, _SCENARIO_SCORES[items[k].scenario])

    lenient = board(spot_check_items=0, min_scored_items=1, max_infrastructure_unscored=1.0)
    folder = scripted_submission(tmp_path, judge_server, "scen", data, judged, the_board=lenient)
    result = build_site(tmp_path / "submissions", tmp_path / "site", lenient, allow_risk_gate_off=True)
    (row,) = result.board["rows"]

    overall = {  # by hand: a model failure counts at the scale minimum, a transient failure is left out
        i.item_id: 1.0 if k in empty else None if k in flaky else float(np.mean(_SCENARIO_SCORES[i.scenario]))
        for k, i in enumerate(items)
    }
    cosine = {r["doc"]["item_id"]: r["cosine_sim"] for path in samples_files(folder) for r in _read(path)}
    assert set(row["per_scenario"]) == set(_SCENARIO_SCORES)
    for scen, block in row["per_scenario"].items():
        ids = [i.item_id for i in items if i.scenario == scen]
        values = [overall[i] for i in ids if overall[i] is not None]
        assert block["n"] == len(ids)
        assert block["empathy"]["mean"] == pytest.approx(np.mean(values)) and block["empathy"]["n"] == len(values)
        assert block["cosine_sim"]["mean"] == pytest.approx(np.mean([cosine[i] for i in ids]))
    counted = [v for v in overall.values() if v is not None]
    assert row["empathy"]["mean"] == pytest.approx(np.mean(counted))
    worst = (sum(counted) - len(empty) * 1.0 + (len(empty) + len(flaky)) * 1.0) / len(items)
    best = (sum(counted) - len(empty) * 1.0 + (len(empty) + len(flaky)) * 5.0) / len(items)
    assert row["empathy_bounds"] == {"worst": pytest.approx(worst), "best": pytest.approx(best)}
    site = tmp_path / "site"
    (csv_row,) = list(csv.DictReader(io.StringIO((site / "leaderboard.csv").read_text())))
    assert float(csv_row["empathy_worst_case"]) == pytest.approx(worst)
    assert float(csv_row["empathy_best_case"]) == pytest.approx(best)
    index = (site / "index.html").read_text()
    assert f"empathy if every unscored item scored lowest / highest: {worst:.2f} / {best:.2f}" in index
    page = (site / "models" / "scen.html").read_text()
    for scen, block in row["per_scenario"].items():
        shown = rf">{scen}</th><td class=\"num\">{block['n']}</td><td[^>]*>{block['empathy']['mean']:.2f}<"
        assert re.search(shown, page), scen

    known = KNOWN_ROW_KEYS | {c.source[0] for c in board_columns(load_rubric())}
    assert set(row) - known == set(), "a row field the row type (scoring/row.py) does not declare"
    assert 'id="other"' not in page  # every declared field has its labelled place


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_judge_summary_and_the_board_report_the_same_intervals(tmp_path: Path, judge_server) -> None:
    """One bootstrap setting (core.stats.DEFAULT_RESAMPLES, DEFAULT_SEED) and one unit
    (personas): the judge's judge_summary.json and the board's row give the same mean and the
    same 95% interval for the same judgments, whatever order the judgments were written in."""
    from tests.leaderboard_helpers import board, scripted_submission, synthetic_snapshot

    data = synthetic_snapshot(tmp_path, 8, 5)
    rng = np.random.default_rng(11)
    quality = np.clip(np.rint(rng.normal(3, 1.2, (40, 3))), 1, 5).astype(int).tolist()
    folder = scripted_submission(
        tmp_path,
        judge_server,
        "same",
        data,
        lambda k: ("unscored", "empty_reply", None) if k % 9 == 4 else ("scored", None, tuple(quality[k])),
    )
    summary = json.loads((folder / "judge" / "judge_summary.json").read_text())
    (row,) = build_site(
        tmp_path / "submissions", tmp_path / "site", board(spot_check_items=0), allow_risk_gate_off=True
    ).board["rows"]
    for key in ("empathy", "safety_adjusted_empathy"):
        assert row[key] == pytest.approx(summary[key]), key
    for factor in FACTORS:
        assert row["factors"][factor] == pytest.approx(summary["factors"][factor]), factor
    assert row["empathy_bounds"] == pytest.approx(summary["empathy_bounds"])
    assert row["failure_rate"] == pytest.approx(summary["failure_rate"])


def test_one_estimate_formatter_for_every_shape() -> None:
    """core.stats.format_estimate: MeanCI's mean, Estimate's value, a paired difference; each
    report keeps its own words for a missing value or interval."""
    from tide_bench.core.stats import Estimate, format_estimate, mean_ci

    block = mean_ci([1.0, 2.0, 3.0, 4.0]).as_dict()
    assert format_estimate(block) == f"2.50 [{block['ci_low']:.2f}, {block['ci_high']:.2f}]"
    assert format_estimate(Estimate(0.4567, 0.3, 0.6, n=9).as_dict(), 3) == "0.457 [0.300, 0.600]"
    assert format_estimate({"difference": 0.25, "mean": 9.0, "ci_low": -0.1, "ci_high": 0.6}, signed=True) == (
        "+0.25 [-0.10, 0.60]"
    )
    assert format_estimate({"mean": 2.0}, key="difference") == "2.00"  # the key falls back to the mean
    assert format_estimate({"mean": 2.0, "ci_low": None}, no_ci=" (n<2)") == "2.00 (n<2)"
    assert format_estimate({"value": None, "note": "why"}) is None and format_estimate(None) is None


@settings(max_examples=80, derandomize=True, deadline=None)
@given(
    resamples=st.integers(min_value=1, max_value=60),
    k=st.integers(min_value=0, max_value=7),
    seed=st.integers(min_value=0, max_value=2**31),
    nan_share=st.sampled_from([0.0, 0.0, 0.2, 0.6]),
)
def test_column_intervals_are_percentile_ci_of_each_column_bit_for_bit(
    resamples: int, k: int, seed: int, nan_share: float
) -> None:
    """Scoring cuts the intervals of all its columns in one call (core.stats.column_intervals);
    each must be exactly what percentile_ci gives that column: NaN replicates, few resamples,
    fewer than two units, shared and different tails."""
    from tide_bench.core.stats import column_intervals, percentile_ci

    rng = np.random.default_rng(seed)
    replicates = rng.normal(size=(resamples, k)) * rng.integers(1, 4, size=k)
    nan_columns = rng.random(k) < nan_share
    replicates[:, nan_columns] = np.where(rng.random((resamples, int(nan_columns.sum()))) < 0.3, np.nan, 1.0)
    units = rng.choice([0, 1, 2, 3, 12, 12, 250], size=k)
    expected = [
        percentile_ci(replicates[:, c], n_units=int(units[c])) if units[c] >= 2 else (None, None) for c in range(k)
    ]
    assert column_intervals(replicates, units) == expected
