"""Ratings files come from outside (spreadsheets, forms, `annotate collect`): any CSV or JSONL
gives a table or an error naming the file, never a traceback. Fuzzed through the public
reader, :func:`tide_bench.agreement.ratings.load_ratings` (and the rater table reader)."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tide_bench.agreement.ratings import Scale, load_raters, load_ratings
from tide_bench.core.errors import TideBenchError

FUZZ = settings(
    max_examples=150, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
CELL = st.one_of(
    st.sampled_from(
        [
            "",
            "3",
            "1",
            "5",
            "2.5",
            "nan",
            "inf",
            "-0",
            "٣",
            "1e309",
            "true",
            "item",
            "r1",
            "emotion_recognition",
            "a\x00b",
        ]
    ),
    st.text(max_size=8),
)
HEADER = st.one_of(
    st.just(["item_id", "rater_id", "dimension", "score"]),
    st.lists(st.sampled_from(["item_id", "rater_id", "dimension", "score", "rating", "", "item_id"]), max_size=5),
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=8,
)
RECORD = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {}, optional={k: st.one_of(CELL, JSON) for k in ("item_id", "rater_id", "dimension", "score")}
    ),
)


def _check(path: Path, scale: Any) -> None:
    try:
        table = load_ratings(path, scale=scale)
    except TideBenchError as exc:
        assert str(exc).strip()
        return
    assert all(isinstance(row.score, float) for row in table.rows)


@FUZZ
@given(
    header=HEADER,
    rows=st.lists(st.lists(CELL, max_size=5), max_size=6),
    bom=st.booleans(),
    sep=st.sampled_from([",", ";", "\t"]),
    scale=st.sampled_from([Scale(1, 5), Scale(None, None), None]),
)
def test_fuzz_ratings_csv(header: list[str], rows: list[list[str]], bom: bool, sep: str, scale: Any) -> None:
    def line(cells: list[str]) -> str:
        return sep.join('"' + c.replace('"', '""') + '"' if any(ch in c for ch in f'{sep}"\n\r') else c for c in cells)

    text = ("\ufeff" if bom else "") + "\n".join(line(r) for r in [header, *rows]) + "\n"
    path = Path(tempfile.mkdtemp()) / "ratings.csv"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _check(path, scale)
    with contextlib.suppress(TideBenchError):
        load_raters(path)


@FUZZ
@given(
    records=st.lists(RECORD, max_size=6),
    raw=st.none() | st.binary(max_size=30),
    scale=st.sampled_from([Scale(1, 5), Scale(None, None), None]),
)
def test_fuzz_ratings_jsonl(records: list[Any], raw: bytes | None, scale: Any) -> None:
    path = Path(tempfile.mkdtemp()) / "ratings.jsonl"
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    path.write_bytes(body + (raw or b""))
    _check(path, scale)


def test_a_huge_csv_field_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    path.write_text("item_id,rater_id,dimension,score\n" + "a" * 200_000 + ",r1,emotion_recognition,3\n")
    with pytest.raises(TideBenchError, match=r"ratings\.csv:2: malformed CSV: field larger than field limit"):
        load_ratings(path)
