"""Every CSV tide-bench writes neutralises spreadsheet formulas (issue 32, N16).

The writers: the board's leaderboard.csv, each entry's downloads/<id>/items.csv, and the
annotation's human_ratings.csv and raters.csv. A seeded fuzz puts text starting with
``= + - @``, a tab, a carriage return, a newline, a full-width form or leading spaces before
them into every free-text field; no cell of any file may then start a formula (numbers stay
numbers)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_STARTS = ["=", "+", "-", "@", "\t", "\r", "\n", "  =", " +", "\uff1d", "\uff20"]
HOSTILE = st.tuples(st.sampled_from(_STARTS), st.text(max_size=12)).map("".join)
FORMULA = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _unsafe_cells(text: str) -> list[str]:
    bad = []
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            if cell.lstrip(" ").startswith(FORMULA):
                try:
                    float(cell)
                except ValueError:
                    bad.append(cell)
    return bad


@settings(max_examples=60, derandomize=True, deadline=None)
@given(name=HOSTILE, license=HOSTILE, condition=HOSTILE, reply=HOSTILE, scenario=HOSTILE, persona=HOSTILE)
def test_board_and_item_csvs(name: str, license: str, condition: str, reply: str, scenario: str, persona: str) -> None:
    import tempfile

    from tide_bench.judging.rubric import load_rubric
    from tide_bench.leaderboard.scoring.columns import board_columns
    from tide_bench.leaderboard.site.entry_files import items_csv
    from tide_bench.leaderboard.site.exports import write_exports

    row = {"id": name, "model_name": name, "license": license, "condition": condition, "prompt_condition": condition,
           "parameters": -5, "rank": None, "rank_interval": None, "judged": False}  # fmt: skip
    board = {"name": name, "rows": [row], "ranking_metric": "cosine_sim", "rank_rule": "r", "demo": False}
    with tempfile.TemporaryDirectory() as folder:
        write_exports(Path(folder), board, board_columns(load_rubric()))
        assert _unsafe_cells((Path(folder) / "leaderboard.csv").read_text()) == []
    payload = {"factors": [("f", "F")], "records": [{"id": name, "status": "scored", "scores": [3], "reply": reply}]}
    item = SimpleNamespace(persona_id=persona, scenario=scenario, turn=1)
    assert _unsafe_cells(items_csv(payload, {name: item})) == []


@settings(max_examples=60, derandomize=True, deadline=None)
@given(rater=HOSTILE, item=HOSTILE, demographics=st.lists(HOSTILE, min_size=1, max_size=4), role=HOSTILE)
def test_annotation_csvs(rater: str, item: str, demographics: list[str], role: str) -> None:
    import tempfile

    from tide_bench.annotation.collect import DEMOGRAPHICS, Collection, write_outputs

    collection = Collection(
        rows=[(item, rater, "empathy", 3)],
        raters={rater: {**{k: demographics[i % len(demographics)] for i, k in enumerate(DEMOGRAPHICS)}, "role": role}},
    )
    with tempfile.TemporaryDirectory() as folder:
        ratings, raters = Path(folder) / "ratings.csv", Path(folder) / "raters.csv"
        write_outputs(collection, ratings, raters)
        assert _unsafe_cells(ratings.read_text()) == [] and _unsafe_cells(raters.read_text()) == []


@settings(max_examples=40, derandomize=True, deadline=None)
@given(pack=HOSTILE, judge=HOSTILE, dimension=HOSTILE, proxy=HOSTILE)
def test_validation_report_and_judges_board_csvs(pack: str, judge: str, dimension: str, proxy: str) -> None:
    """The judges board reads report files a user passes (--report), so every one of its cells,
    not only the judge's name, is neutralised; so is the report's own --csv."""
    import json
    import tempfile

    from tide_bench.validation.board import build_board
    from tide_bench.validation.report import CSV_COLUMNS, write_csv

    stats = {"n": 3} | {name: {"value": -0.5} for name in CSV_COLUMNS[4:]}
    report = {
        "pack": pack,
        "judges": {judge: {"dimensions": {dimension: stats}}},
        "dimensions": {dimension: {"judge_factor": "emotion_recognition", "proxy_for": proxy}},
    }
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.json"
        path.write_text(json.dumps(report), encoding="utf-8")
        build_board([path], Path(folder) / "board")
        assert _unsafe_cells((Path(folder) / "board" / "judges.csv").read_text(encoding="utf-8")) == []
        write_csv(report, Path(folder) / "report.csv")
        assert _unsafe_cells((Path(folder) / "report.csv").read_text(encoding="utf-8")) == []


_PIECES = [*_STARTS, ",", '"', "'", " ", "a", "é", "\x00", "\u2028", "\r\n"]
_CELL = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.sampled_from(_PIECES), max_size=6).map("".join),
    st.text(max_size=20),
)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(rows=st.lists(st.lists(_CELL, min_size=0, max_size=6), max_size=6))
def test_the_fast_csv_text_is_what_csv_writer_writes_from_safe_rows(rows: list[list[object]]) -> None:
    """items.csv is written by core.spreadsheet.csv_text, not csv.writer (a tenth of a board
    build's CPU): byte for byte the same text, every cell spreadsheet-safe, on any cells."""
    from tide_bench.core.spreadsheet import csv_text, safe_row

    buffer = io.StringIO()
    csv.writer(buffer).writerows(safe_row(row) for row in rows)
    assert csv_text(rows) == buffer.getvalue()


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(range(4)), min_size=2, max_size=5),
    height=st.integers(min_value=1, max_value=6),
    data=st.data(),
)
def test_csv_text_of_rows_of_one_length_is_what_csv_writer_writes(kinds: list[int], height: int, data: object) -> None:
    """Rows of one length are written a column at a time (a column of plain text or numbers in one
    step): still byte for byte what csv.writer writes, whatever one cell of a column holds."""
    from tide_bench.core.spreadsheet import csv_table, csv_text, safe_row

    cells = {
        0: st.one_of(st.none(), st.integers(), st.floats(), st.booleans()),
        1: st.sampled_from(["a", "b c", "Zo\u00eb", "101/conversation_1/turn1", ""]),
        2: _CELL,
        3: st.lists(st.sampled_from([*_PIECES, "\n", "\r"]), max_size=4).map("".join),  # text only, formula starts too
    }
    columns = [data.draw(st.lists(cells[k], min_size=height, max_size=height)) for k in kinds]  # type: ignore[attr-defined]
    odd = data.draw(st.one_of(st.none(), st.tuples(st.integers(0, len(kinds) - 1), st.integers(0, height - 1), _CELL)))  # type: ignore[attr-defined]
    if odd is not None:  # one cell unlike its column's others
        columns[odd[0]][odd[1]] = odd[2]
    rows = [list(row) for row in zip(*columns, strict=True)]
    buffer = io.StringIO()
    csv.writer(buffer).writerows(safe_row(row) for row in rows)
    assert csv_text(rows) == buffer.getvalue()
    body = [list(column) for column in zip(*rows[1:], strict=True)] or [[] for _ in rows[0]]
    assert csv_table(rows[0], body) == buffer.getvalue()  # the same table given as its header and columns


@settings(max_examples=150, derandomize=True, deadline=None)
@given(
    pool=st.one_of(
        st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=6),
        st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.5, math.nan, -1e-05, 1e16]), min_size=1, max_size=6),
        st.lists(st.integers(-(10**20), 10**20), min_size=1, max_size=6),
        st.lists(st.booleans(), min_size=1, max_size=2),
        st.just([None]),
    ),
    height=st.integers(min_value=60, max_value=200),
    data=st.data(),
)
def test_long_columns_of_few_values_are_what_csv_writer_writes(pool: list[object], height: int, data: object) -> None:
    """A long column of one type and few values (scores, turns, mean scores) is written one text
    per distinct value: still what csv.writer writes, with 0.0 beside -0.0 and NaNs among them."""
    from tide_bench.core.spreadsheet import csv_table, safe_row

    column = data.draw(st.lists(st.sampled_from(pool), min_size=height, max_size=height))  # type: ignore[attr-defined]
    ids = [f"item{i}" for i in range(height)]
    buffer = io.StringIO()
    csv.writer(buffer).writerows(safe_row(row) for row in [["id", "value"], *zip(ids, column, strict=True)])
    assert csv_table(["id", "value"], [ids, column]) == buffer.getvalue()


@pytest.mark.parametrize(
    "cell", ["a\nb", "a\rb", 'say "hi"', "a,b", "  =1+1", "\uff1dSUM(A1)", "-2", "@x", "\tx", "plain", ""]
)
@pytest.mark.parametrize("at", [0, 1, 2])
def test_one_special_cell_in_a_column_of_plain_text(cell: str, at: int) -> None:
    """One cell that needs quoting or a ``'`` among plain ones, first, in the middle or last."""
    from tide_bench.core.spreadsheet import csv_text, safe_row

    rows = [["h1", "h2"], ["plain", "x"], ["text", "y"], ["more", "z"]]
    rows[1 + at][0] = cell
    buffer = io.StringIO()
    csv.writer(buffer).writerows(safe_row(row) for row in rows)
    assert csv_text(rows) == buffer.getvalue()


def test_csv_table_refuses_columns_that_do_not_make_a_table() -> None:
    from tide_bench.core.spreadsheet import csv_table

    with pytest.raises(ValueError, match="columns of lengths"):
        csv_table(["a", "b"], [[1, 2], [3]])
    with pytest.raises(ValueError, match="2 header cells"):
        csv_table(["a", "b"], [[1, 2]])


def test_csv_text_hands_other_cell_types_to_csv_writer() -> None:
    import numpy as np

    from tide_bench.core.spreadsheet import csv_text

    class Label(str):
        pass

    rows = [["=a", np.float64(0.5)], [Label("+b"), 1], ["only"], [""]]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerows([["'=a", np.float64(0.5)], ["'+b", 1], ["only"], [""]])
    assert csv_text(rows) == buffer.getvalue()
