"""Reading JSONL written by others: lm-eval's NaN metrics, and located errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import iter_jsonl


def test_lm_eval_nan_metrics_are_read(tmp_path: Path) -> None:
    """lm-eval writes NaN for an undefined per-item metric (distinct-2 of a one-word reply)."""
    path = tmp_path / "samples.jsonl"
    path.write_text('{"distinct_2": NaN, "rouge_l": 0.5}\n\n{"length_tokens": Infinity}\n')
    rows = list(iter_jsonl(path, DataError))
    assert [n for n, _ in rows] == [1, 3]
    assert math.isnan(rows[0][1]["distinct_2"]) and rows[0][1]["rouge_l"] == 0.5 and math.isinf(rows[1][1]["length_tokens"])


def test_a_broken_line_is_located(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(DataError, match=r"samples\.jsonl:2: invalid JSON"):
        list(iter_jsonl(path, DataError))
