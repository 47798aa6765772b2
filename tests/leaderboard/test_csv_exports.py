"""Every CSV tide-bench writes neutralises spreadsheet formulas (issue 32, N16).

The writers: the board's leaderboard.csv, each entry's downloads/<id>/items.csv, and the
annotation's human_ratings.csv and raters.csv. A seeded fuzz puts text starting with
``= + - @``, a tab, a carriage return, a newline, a full-width form or leading spaces before
them into every free-text field; no cell of any file may then start a formula (numbers stay
numbers)."""

from __future__ import annotations

import csv
import io
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


def test_csv_table_refuses_columns_that_do_not_make_a_table() -> None:
    from tide_bench.core.spreadsheet import csv_table

    with pytest.raises(ValueError, match="columns of lengths"):
        csv_table(["a", "b"], [[1, 2], [3]])
    with pytest.raises(ValueError, match="2 header cells"):
        csv_table(["a", "b"], [[1, 2]])
