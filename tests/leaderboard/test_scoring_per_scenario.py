"""Per-scenario cells of a board row, and the estimate blocks every score is written as."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tide_bench.core.stats import Estimate, MeanCI, cluster_codes
from tide_bench.leaderboard.scoring.scores import _per_scenario


def test_each_scenario_gets_its_own_items_and_counts() -> None:
    """Scenarios are told apart as the strings they are: two names that differ only by a trailing
    NUL are two scenarios (a NumPy string array had merged them), each with its own n and mean."""
    rng = np.random.default_rng(3)
    scenarios = ["grief", "grief\x00", "sleep"] * 40
    values = np.column_stack([rng.integers(1, 6, 120).astype(float), rng.uniform(0, 1, 120)])
    values[scenarios.index("grief\x00"), 0] = 5.0
    codes, n_clusters = cluster_codes([str(i % 30) for i in range(120)])
    cells = _per_scenario(scenarios, values, codes, n_clusters, judged=True, cosine_applies=True, resamples=200, seed=1)
    assert list(cells) == ["grief", "grief\x00", "sleep"]
    for name, cell in cells.items():
        mine = np.array([s == name for s in scenarios])
        assert cell["n"] == 40
        assert cell["empathy"]["mean"] == pytest.approx(values[mine, 0].mean(), rel=1e-12)
        assert cell["cosine_sim"]["mean"] == pytest.approx(values[mine, 1].mean(), rel=1e-12)


def test_estimate_blocks_are_the_dataclasses_fields() -> None:
    """``as_dict`` (written for every score of every entry) is ``dataclasses.asdict``, key for key
    and in the same order, numpy numbers included."""
    blocks = [
        MeanCI(np.float64(3.25), 3.0, 3.5, 120, 0.95, 30, 1.7),
        MeanCI(None, None, None, 0),
        Estimate(0.41, 0.2, 0.6, 80, None),
        Estimate(None, note="undefined"),
    ]
    for block in blocks:
        made, expected = block.as_dict(), dataclasses.asdict(block)
        assert made == expected and list(made) == list(expected)
        assert [type(v) for v in made.values()] == [type(v) for v in expected.values()]
