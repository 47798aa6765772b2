"""The board's per-item reference metrics read into one matrix (``scoring.scores._metric_matrix``)
by one C call per reply that has the first reply's metrics: the same matrix as one lookup per
metric, whichever metrics each reply has (a first draft of the fast path left a metric out when a
reply had as many metrics as the first but not the same ones; this test caught it)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tide_bench.leaderboard.scoring.scores import _metric_matrix

METRICS = ("length_tokens", "cosine_sim", "rouge_l", "epitome_er", "epitome_ip", "epitome_ex")
OTHERS = ("within_reply_distinct_1", "within_reply_distinct_2")  # read by the reader, not a board column
VALUE = st.one_of(st.floats(allow_nan=True, allow_infinity=False), st.just(1.0))


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(METRICS + OTHERS), VALUE), max_size=8))
def test_the_matrix_is_one_lookup_per_metric(replies: list[dict[str, float]]) -> None:
    gens = [SimpleNamespace(metrics=m) for m in replies]
    expected = np.array([[m.get(k, np.nan) for k in METRICS] for m in replies], dtype=float).reshape(-1, len(METRICS))
    assert np.array_equal(_metric_matrix(gens, METRICS), expected, equal_nan=True)


def test_replies_with_as_many_but_other_metrics_are_read_whole() -> None:
    first = {"length_tokens": 1.0, "cosine_sim": 0.5, "within_reply_distinct_1": 0.9}
    other = {"length_tokens": 2.0, "cosine_sim": 0.4, "rouge_l": 0.3}  # three metrics, not the first's three
    got = _metric_matrix([SimpleNamespace(metrics=first), SimpleNamespace(metrics=other)], METRICS)
    assert got[1, METRICS.index("rouge_l")] == 0.3 and np.isnan(got[0, METRICS.index("rouge_l")])
