"""Rows 3-8 of the review: the board's paired comparisons (``leaderboard.scoring.ranking.paired_ranking``,
what ``scores.rank_entries`` calls): pair intervals, Holm and max-T family-wise error (also with
20 personas, where the normal reference gave 7-11 % and 10-13 %; max-T is offered from 30),
power, rank intervals and the rank column. K models answer the same P personas x 20 items
(:func:`sim.board`).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.calibration.conftest import Mode, assert_coverage, assert_level, assert_power, record_check, record_value
from tests.calibration.sim import board, board_truths, personas, seed_of
from tide_bench.core.errors import ConfigError
from tide_bench.leaderboard.scoring.ranking import CORRECTIONS, MAX_T_MIN_PERSONAS, paired_ranking
from tide_bench.leaderboard.scoring.scores import RESAMPLES, SAFETY_ADJUSTED, ScoredEntry, rank_entries

FAST_NULL = [(6, 10, 0.15), (6, 30, 0.15)]  # 10 personas: a normal reference instead of t(9) fails (21 %)
FULL_NULL = [(k, p, s) for k in (2, 6) for p in (10, 20, 30, 50, 100) for s in (0.0, 0.15)]


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
    """Equal models: some pair declared different in at most 5 % of boards, Holm at any persona
    count, max-T from MAX_T_MIN_PERSONAS. With a model x persona interaction the paired
    differences vary by persona, so a bootstrap over items instead of personas fails here; with
    10 personas, so does Holm on a normal reference instead of t(P - 1)."""
    reps = mode.reps(400, 1000)
    rng = np.random.default_rng(seed_of("rows4-5", k, n_personas, interaction))
    persona = personas(n_personas, 20)
    labels = persona.astype(str)
    offered = [c for c in CORRECTIONS if c != "max-t" or n_personas >= MAX_T_MIN_PERSONAS]
    hits = dict.fromkeys(offered, 0)
    for _ in range(reps):
        values = board(rng, [3.0] * k, persona, interaction)
        for correction in offered:
            hits[correction] += paired_ranking(values, labels, correction=correction).n_significant > 0
    for correction in offered:
        assert_level(
            "4" if correction == "holm" else "5",
            f"FWER {correction}, {k} equal models, {n_personas} x 20, interaction {interaction}",
            hits[correction],
            reps,
            cells=mode.cells(len(FAST_NULL), len(FULL_NULL)),
        )


@pytest.mark.full_only
@pytest.mark.parametrize("n_personas", [10, 15, 20])
def test_row5_max_t_below_its_persona_count_for_the_record(
    mode: Mode, n_personas: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why max-T is not offered below MAX_T_MIN_PERSONAS: its family-wise error there (six equal
    models, interaction 0.15), measured without the guard, for docs/statistics.md."""
    from tide_bench.leaderboard.scoring import ranking

    monkeypatch.setattr(ranking, "MAX_T_MIN_PERSONAS", 0)
    reps = mode.reps(400, 2000)
    rng = np.random.default_rng(seed_of("row5-below", n_personas))
    persona = personas(n_personas, 20)
    hits = 0
    for _ in range(reps):
        values = board(rng, [3.0] * 6, persona, 0.15)
        hits += ranking.paired_ranking(values, persona.astype(str), correction="max-t").n_significant > 0
    record_value(
        "5", f"FWER max-t (not offered), 6 equal models, {n_personas} x 20, interaction 0.15", hits / reps, reps
    )


def test_row5_max_t_is_refused_below_its_persona_count() -> None:
    """A board that asks for max-T with fewer personas than it is calibrated for gets an error
    that says why and what to use; from the minimum on it ranks."""
    persona = personas(MAX_T_MIN_PERSONAS - 1, 5)
    values = board(np.random.default_rng(5), [3.0, 3.1], persona)
    with pytest.raises(ConfigError, match=r"max-t is offered from 30 personas.*from 29") as err:
        paired_ranking(values, persona.astype(str), correction="max-t")
    assert err.value.field == "rank_correction" and "holm" in (err.value.hint or "")
    assert paired_ranking(values, persona.astype(str)).correction == "holm"
    enough = personas(MAX_T_MIN_PERSONAS, 5)
    assert paired_ranking(board(np.random.default_rng(5), [3.0, 3.1], enough), enough.astype(str), correction="max-t")
    record_check("5", "max-t refused below 30 personas, with the reason and the alternative")


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
    reps = mode.reps(300, full_reps)
    rng = np.random.default_rng(seed_of("rows3-7-8", design))
    persona = personas(100, 20)
    labels = persona.astype(str)
    truth = board_truths(means, 0.1)
    true_rank = 1 + (truth[None, :] > truth[:, None]).sum(axis=1)
    simultaneous = worse = 0
    pair_share = 0.0
    for _ in range(reps):
        result = paired_ranking(board(rng, means, persona, 0.1), labels)
        inside = [lo <= t <= hi for (lo, hi), t in zip(result.rank_interval, true_rank, strict=True)]
        simultaneous += all(inside)
        worse += bool((np.array(result.rank) > true_rank).any())
        covered = [p["ci_low"] <= truth[p["a"]] - truth[p["b"]] <= p["ci_high"] for p in result.pairs]
        pair_share += float(np.mean(covered))
    cells = mode.cells(2, len(RANK_DESIGNS))
    # the pairs of one board are correlated: the board is the unit (its share of covering pairs), and
    # the binomial standard error of one pair per board bounds the error of that share from above
    assert_coverage(
        "3", f"pairwise difference CI (share of a board's pairs), design {design}", pair_share, reps, cells=cells
    )
    assert_coverage(
        "7",
        f"all rank intervals cover the true ranks at once, design {design}",
        simultaneous,
        reps,
        cells=cells,
        ceiling=1.0,  # integer ranks and 2.5-97.5 % ranges: conservative by construction (96-100 %)
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
