"""``cluster_totals`` sums each cluster's rows in row order: bit for bit the sparse-indicator
product it replaced, and the plain loop below (hypothesis: any codes, any floats, NaN and inf)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, seed, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import sparse

from tide_bench.core.stats import cluster_codes, cluster_totals

floats = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.floats(-1e3, 1e3)


def _in_order(codes: np.ndarray, n_clusters: int, matrix: np.ndarray) -> np.ndarray:
    out = np.zeros((n_clusters, matrix.shape[1]))
    for i, c in enumerate(codes):
        out[c] += matrix[i]
    return out


@seed(30)
@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(0, 40), k=st.integers(1, 4), n_clusters=st.integers(1, 6))
def test_cluster_totals_sum_in_row_order(data: st.DataObject, n: int, k: int, n_clusters: int) -> None:
    codes = np.asarray(data.draw(st.lists(st.integers(0, n_clusters - 1), min_size=n, max_size=n)), dtype=np.int64)
    matrix = data.draw(hnp.arrays(np.float64, (n, k), elements=floats))
    got = cluster_totals(codes, n_clusters, matrix)
    assert got.shape == (n_clusters, k)
    np.testing.assert_array_equal(got, _in_order(codes, n_clusters, matrix))
    indicator = sparse.csr_matrix((np.ones(n), (codes, np.arange(n))), shape=(n_clusters, n))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, np.asarray(indicator @ matrix))


def test_cluster_totals_shapes() -> None:
    codes = np.array([1, 0, 1])
    assert cluster_totals(codes, 2, np.array([1.0, 2.0, 3.0])).tolist() == [[2.0], [4.0]]
    cube = np.arange(12.0).reshape(3, 2, 2)  # rows of any shape are flattened
    assert cluster_totals(codes, 2, cube).tolist() == [[4.0, 5.0, 6.0, 7.0], [8.0, 10.0, 12.0, 14.0]]
    assert cluster_totals(np.zeros(0, dtype=np.int64), 3, np.zeros((0, 2))).tolist() == [[0.0, 0.0]] * 3


def test_summation_order_is_row_order() -> None:
    """1e16 + 1 - 1e16 + 1 is 1 in row order; sorted or reversed it is 0."""
    values = np.array([1e16, 1.0, -1e16, 1.0])
    assert cluster_totals(np.zeros(4, dtype=np.int64), 1, values)[0, 0] == 1.0


@seed(30)
@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="ab\x00é1", max_size=3) | st.integers(-3, 3), max_size=30))
def test_cluster_codes_number_the_labels_in_sorted_order(labels: list[str | int]) -> None:
    codes, n = cluster_codes(labels)
    distinct = sorted({str(x) for x in labels})
    assert n == len(distinct)
    assert codes.dtype == np.int64 and [distinct[c] for c in codes] == [str(x) for x in labels]


def test_labels_differing_only_by_trailing_nul_are_two_clusters() -> None:
    """A NumPy string array drops trailing NULs: "a" and "a\\x00" would have been one persona."""
    codes, n = cluster_codes(["a", "a\x00", "a"])
    assert n == 2 and codes.tolist() == [0, 1, 0]
