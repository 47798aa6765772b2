"""Rows 3-8 of the review: the board's paired comparisons (``leaderboard.scoring.ranking.paired_ranking``,
what ``scores.rank_entries`` calls): pair intervals, Holm and max-T family-wise error (also with
20 personas, where the normal reference gave 7-11 % and 10-13 %), power, rank intervals and the
rank column. K models answer the same P personas x 20 items (:func:`sim.board`).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.calibration.conftest import Mode, assert_coverage, assert_level, assert_power, record_value
from tests.calibration.sim import board, board_truths, personas, seed_of
from tide_bench.leaderboard.scoring.ranking import CORRECTIONS, paired_ranking
from tide_bench.leaderboard.scoring.scores import RESAMPLES, SAFETY_ADJUSTED, ScoredEntry, rank_entries

FAST_NULL = [(6, 20, 0.0)]
FULL_NULL = [(k, p, s) for k in (2, 6) for p in (20, 50, 100) for s in (0.0, 0.15)]


@pytest.mark.parametrize(
    ("k", "n_personas", "interaction"),
    [pytest.param(*c, id=f"{c[0]}models-{c[1]}p-int{c[2]}") for c in FAST_NULL]
    + [
        pytest.param(*c, id=f"{c[0]}models-{c[1]}p-int{c[2]}", marks=pytest.mark.full_only)
        for c in FULL_NULL
        if c not in FAST_NULL
    ],
)
def test_rows4_5_equal_models_family_wise_error(mode: Mode, k: int, n_personas: int, interaction: float) -> None:
    """Equal models: some pair declared different in at most 5 % of boards, Holm and max-T."""
    reps = mode.reps(400, 500)
    rng = np.random.default_rng(seed_of("rows4-5", k, n_personas, interaction))
    persona = personas(n_personas, 20)
    labels = persona.astype(str)
    hits = dict.fromkeys(CORRECTIONS, 0)
    for _ in range(reps):
        values = board(rng, [3.0] * k, persona, interaction)
        for correction in CORRECTIONS:
            hits[correction] += paired_ranking(values, labels, correction=correction).n_significant > 0
    for correction, row in (("holm", "4"), ("max-t", "5")):
        assert_level(
            row,
            f"FWER {correction}, {k} equal models, {n_personas} x 20, interaction {interaction}",
            hits[correction],
            reps,
            cells=mode.cells(len(FAST_NULL), len(FULL_NULL)),
        )


RANK_DESIGNS = {
    "A six close": ([3.00, 3.03, 3.06, 3.10, 3.15, 3.25], 500),
    "B six separated": ([3.0, 3.1, 3.2, 3.3, 3.4, 3.5], 500),
    "C ten 0.02 apart": ([3.0 + 0.02 * j for j in range(10)], 300),
    "D two tied": ([3.00, 3.00 + 1e-9, 3.10, 3.20], 300),
}


@pytest.mark.parametrize(
    "design",
    [pytest.param("A six close"), pytest.param("D two tied")]
    + [pytest.param(d, marks=pytest.mark.full_only) for d in ("B six separated", "C ten 0.02 apart")],
)
def test_rows3_7_8_pair_intervals_rank_intervals_and_ranks(mode: Mode, design: str) -> None:
    means, full_reps = RANK_DESIGNS[design]
    reps = mode.reps(100, full_reps)
    rng = np.random.default_rng(seed_of("rows3-7-8", design))
    persona = personas(100, 20)
    labels = persona.astype(str)
    truth = board_truths(means, 0.1)
    true_rank = 1 + (truth[None, :] > truth[:, None]).sum(axis=1)
    simultaneous = worse = pair_hits = pair_n = 0
    for _ in range(reps):
        result = paired_ranking(board(rng, means, persona, 0.1), labels)
        inside = [lo <= t <= hi for (lo, hi), t in zip(result.rank_interval, true_rank, strict=True)]
        simultaneous += all(inside)
        worse += bool((np.array(result.rank) > true_rank).any())
        for p in result.pairs:
            pair_hits += p["ci_low"] <= truth[p["a"]] - truth[p["b"]] <= p["ci_high"]
            pair_n += 1
    cells = mode.cells(2, len(RANK_DESIGNS))
    assert_coverage("3", f"pairwise difference CI, design {design}", pair_hits, pair_n, cells=cells)
    assert_coverage(
        "7", f"all rank intervals cover the true ranks at once, design {design}", simultaneous, reps, cells=cells
    )
    assert_level("8", f"some published rank worse than the true rank, design {design}", worse, reps, cells=cells)


@pytest.mark.parametrize(
    ("n_personas", "interaction", "delta", "floor"),
    [pytest.param(100, 0.0, 0.10, 0.9)]
    + [
        pytest.param(p, s, d, None, marks=pytest.mark.full_only)
        for p in (50, 100)
        for s in (0.0, 0.15)
        for d in (0.05, 0.10, 0.20)
        if (p, s, d) != (100, 0.0, 0.10)
    ],
)
def test_row6_power_of_the_paired_test(
    mode: Mode, n_personas: int, interaction: float, delta: float, floor: float | None
) -> None:
    """Informational: how often a truly better model is shown better (right direction)."""
    reps = mode.reps(100, 500)
    rng = np.random.default_rng(seed_of("row6", n_personas, interaction, delta))
    persona = personas(n_personas, 20)
    right = wrong = 0
    for _ in range(reps):
        pair = paired_ranking(board(rng, [3.0, 3.0 + delta], persona, interaction), persona.astype(str)).pairs[0]
        if pair["significant"]:
            right += pair["difference"] < 0
            wrong += pair["difference"] > 0
    label = f"power, difference {delta} (latent), {n_personas} x 20, interaction {interaction}"
    if floor is None:
        record_value("6", label, right / reps, reps)
    else:
        assert_power("6", label, right, reps, floor)
    assert wrong <= max(1, reps // 100)


def test_rank_entries_ranks_as_paired_ranking() -> None:
    """The board's rank_entries gives exactly paired_ranking's ranks and rank intervals, on the
    metric the board ranks by (the safety-adjusted empathy of judged entries)."""
    rng = np.random.default_rng(20261202)
    persona = personas(60, 20)
    values = board(rng, [3.0, 3.05, 3.1, 3.2], persona, 0.1)
    items = [f"{p}/c{j}/turn1" for j, p in enumerate(persona)]
    entries = [
        ScoredEntry(
            {
                "id": f"m{c}",
                "judged": True,
                "is_reference": False,
                "empathy": {"mean": float(values[:, c].mean())},
                SAFETY_ADJUSTED: {"mean": float(values[:, c].mean())},
                "n_scored": len(items),
                "safety_flag_rate": None,
                "rank": None,
            },
            items,
            persona.astype(str).tolist(),
            {"empathy": values[:, c], SAFETY_ADJUSTED: values[:, c]},
        )
        for c in range(4)
    ]
    assert rank_entries(entries, min_scored_items=1)["ranking_metric"] == SAFETY_ADJUSTED
    direct = paired_ranking(values, persona.astype(str), resamples=RESAMPLES)
    by_id = {e.row["id"]: (e.row["rank"], tuple(e.row["rank_interval"])) for e in entries}
    assert all(by_id[f"m{c}"] == (direct.rank[c], tuple(direct.rank_interval[c])) for c in range(4))
