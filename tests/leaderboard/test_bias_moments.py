"""The bias diagnostics' moments (``leaderboard.bias._unpack``) equal, bit for bit, the
cell-by-cell definition: every cell of each entry's centred cross-product matrix is
``S_ij - S_i * S_j / n`` (0 where the entry has no rows), the matrix symmetric. The build
computes each pair once and mirrors it (``a * b == b * a`` in floating point), which must not
move a single bit of the board's diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

from tide_bench.leaderboard.scoring.bias import _unpack


def _by_cell(sums: np.ndarray, k: int, v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    upper = list(zip(*np.triu_indices(v), strict=True))
    s = sums.reshape(sums.shape[0], k, -1)
    n, first, second = s[..., 0], s[..., 1 : 1 + v], s[..., 1 + v :]
    cross = np.zeros((*n.shape, v, v))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = first / n[..., None]
        for i in range(v):
            for j in range(v):
                pair = upper.index((min(i, j), max(i, j)))
                cell = second[..., pair] - first[..., i] * first[..., j] / n
                cross[..., i, j] = np.where(n > 0, cell, 0.0)
    return n, mean, cross


@pytest.mark.parametrize("v", [1, 2, 3, 4, 6])
def test_unpack_is_the_cell_by_cell_definition_bit_for_bit(v: int) -> None:
    rng = np.random.default_rng(v)
    k, width = 7, 1 + v + v * (v + 1) // 2
    sums = rng.normal(size=(40, k * width)) * 10.0 ** rng.integers(-3, 4, size=(40, k * width))
    sums[:, :: width * 3] = 0.0  # entries without rows in a resample
    sums[1, 2], sums[2, 3], sums[3, 1] = np.nan, np.inf, -0.0
    got = _unpack(sums, k, v)
    n, mean, cross = _by_cell(sums, k, v)
    assert got.cross.shape == (40, k, v, v)
    for mine, theirs in ((got.n, n), (got.mean, mean), (got.cross, cross)):
        assert np.array_equal(np.ascontiguousarray(mine).view(np.int64), np.ascontiguousarray(theirs).view(np.int64))
