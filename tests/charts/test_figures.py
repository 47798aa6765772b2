"""The shared chart module (:mod:`tide_bench.charts`) and the figures drawn with it outside the
board: the study report's, the audit's and the fine-tuning card's loss curve. Each is a
well-formed SVG with a title and a text alternative, and shows every point it is given: one
hover-titled mark per value (a dropped point fails the count), the numbers in its ``<desc>``."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import SVG, read_figure
from tide_bench.agreement.report import FIGURE_TITLE, render_figure
from tide_bench.charts.figure import (
    Cell,
    Interval,
    Line,
    Panel,
    Point,
    Rule,
    Series,
    heatmap,
    interval_chart,
    line_chart,
    scatter_chart,
)
from tide_bench.charts.style import GAIN, MARKERS
from tide_bench.finetune.card import loss_figure
from tide_bench.study.figures import draw, write_figures


def _gain(d: float | None, lo: float | None = None, hi: float | None = None, star: bool = False) -> dict[str, Any]:
    return {"difference": d, "ci_low": lo, "ci_high": hi, "n": 12, "n_personas": 3, "star": star}


def _mean(m: float | None) -> dict[str, Any]:
    return {"mean": m, "ci_low": None if m is None else m - 0.3, "ci_high": None if m is None else m + 0.3, "n": 12}


def _study() -> dict[str, Any]:
    """Two models: the second has no zero-shot mean, and no gain in one scenario."""
    return {
        "models": [
            {"model": "small & <odd>", "parameters": 135e6, "empathy": {
                "zero-shot": _mean(2.1), "fine-tuned": _mean(2.9), "gain": _gain(0.8, 0.4, 1.2),
                "gain_by_scenario": {"grief": _gain(0.5, 0.1, 0.9, star=True), "anger": _gain(0.0, -0.4, 0.4)}}},
            {"model": "large", "parameters": 1.5e9, "empathy": {
                "zero-shot": _mean(None), "fine-tuned": _mean(3.2), "gain": _gain(0.2, -0.1, 0.5),
                "gain_by_scenario": {"grief": _gain(-0.3, -0.7, 0.1), "anger": _gain(None)}}},
        ],
        "reference": {"empathy": _mean(4.1), "label": "TIDE reference"},
    }  # fmt: skip


def test_study_figures_show_every_point_with_the_boards_marks(tmp_path: Path) -> None:
    written = write_figures(_study(), tmp_path)
    assert [f["name"] for f in written] == [
        "gain_empathy.svg",
        "gain_vs_size_empathy.svg",
        "scenario_gains_empathy.svg",
    ]
    figures = {f["name"]: (tmp_path / f["name"]).read_text() for f in written}
    title, desc, marks = read_figure(figures["gain_empathy.svg"])
    assert title == written[0]["caption"]
    # 1 zero-shot (the other is missing) + 2 fine-tuned + 2 gains, each a titled mark
    assert len(marks) == 5 and sum("zero-shot" in m for m in marks) == 1
    assert "small & <odd>, fine-tuned: 2.9 (95% CI 2.6 to 3.2)" in marks and "TIDE reference at 4.1" in desc
    colour = MARKERS["fine-tuned"][0]  # green diamonds, as on the board
    assert figures["gain_empathy.svg"].count(f'" fill="{colour}" stroke="{colour}"') == 2 + 1  # and the legend's
    assert "&lt;odd&gt;" in figures["gain_empathy.svg"] and "<odd>" not in figures["gain_empathy.svg"]
    _, desc, marks = read_figure(figures["gain_vs_size_empathy.svg"])
    assert len(marks) == 2 and "small & <odd> (135M)" in marks[0] and "large at 1.5B" in desc
    assert GAIN[0] in figures["gain_vs_size_empathy.svg"]
    _, desc, marks = read_figure(figures["scenario_gains_empathy.svg"])
    assert len(marks) == 3  # four cells, one without a gain
    assert any("grief" in m and "Holm" in m for m in marks) and "+0.50*" in figures["scenario_gains_empathy.svg"]
    assert "+0.00" in figures["scenario_gains_empathy.svg"]  # a gain of exactly 0 is a cell, not a blank


def test_the_boards_section_draws_the_figures_from_the_results_not_the_files(tmp_path: Path) -> None:
    """The page shows what report.json says: a tampered SVG file beside it is never read."""
    from tide_bench.study.document import Figure, to_html

    drawings = {d.name: d.svg for d in draw(_study())}
    (tmp_path / "gain_empathy.svg").write_text("<svg><script>alert(1)</script></svg>")
    page = to_html([Figure("gain_empathy.svg", "gains"), Figure("gone.svg", "not drawn")], drawings)
    assert "<script>" not in page and page.count("<svg ") == 1 and "not drawn" not in page
    assert page.startswith("<figure><svg ") and page.endswith("<figcaption>gains</figcaption></figure>")


def _alpha(v: float | None) -> dict[str, Any]:
    interval = {"value": v, "ci_low": None if v is None else v - 0.1, "ci_high": None if v is None else v + 0.1}
    return {"interval": interval}


def _audit(judge_alpha: float | None) -> dict[str, Any]:
    first = {"j1": {"alpha_with_judge": _alpha(0.75)}, "j2": {"alpha_with_judge": _alpha(judge_alpha)}}
    return {
        "dimensions": {
            "emotion_recognition": {"alpha": _alpha(0.7), "judges": first},
            "empathy": {"alpha": _alpha(0.5), "judges": {"j1": {"alpha_with_judge": _alpha(0.4)}}},
        }
    }


def test_the_audit_figure_has_a_mark_for_each_factor_and_judge() -> None:
    title, desc, marks = read_figure(render_figure(_audit(0.8)))
    assert title == FIGURE_TITLE and len(marks) == 5  # 2 factors x humans + j1 twice + j2 once
    assert "empathy, with j1: 0.4 (95% CI 0.3 to 0.5)" in marks and "alpha = 0.667 at 0.667" in desc
    assert len(read_figure(render_figure(_audit(None)))[2]) == 4  # an alpha that is None draws no mark


def test_the_loss_curve_has_every_logged_step() -> None:
    history = [{"step": s, "train_loss": 3.0 - 0.01 * s} for s in range(1, 41)]
    history += [{"step": s, "val_loss": 2.5 - 0.01 * s} for s in (10, 20, 30, 40)]
    svg = loss_figure(history, 30)
    _, desc, marks = read_figure(svg)
    polylines = re.findall(r'<polyline points="([^"]+)"', svg)
    assert [len(p.split()) for p in polylines] == [40, 4]  # train, then validation
    assert marks[0] == "train (per step): 40 points" and len(marks) == 1 + 4
    assert "saved (step 30)" in desc and "lowest 2.6" in desc
    assert len(read_figure(loss_figure(history[:40], None))[2]) == 1  # no validation: the line alone


_names = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30)
_numbers = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    names=st.lists(_names, min_size=1, max_size=6),
    values=st.lists(st.one_of(st.none(), _numbers), min_size=6, max_size=6),
    spread=st.floats(min_value=0, max_value=1e3),
)
def test_every_kind_of_figure_is_well_formed_for_any_names_and_numbers(
    names: list[str], values: list[float | None], spread: float
) -> None:
    """Any text (markup, quotes, wide characters) and any finite numbers: well-formed SVG whose
    coordinates are numbers, with a mark for every value given."""
    k = len(names)
    intervals = [None if v is None else Interval(v, v - spread, v + spread) for v in values[:k]]
    given_marks = sum(v is not None for v in intervals)
    panel = Panel([Series(names[0], "#2f64c9", "o", intervals)], names[-1], [Rule(0.0, names[0])])
    grid = [[None if iv is None else Cell(iv.value, "x", n)] * 2 for n, iv in zip(names, intervals, strict=True)]
    charts = [
        (interval_chart(names, [panel], "t" + names[0]), given_marks),
        (heatmap(names, names[:2], grid, names[0], "t" + names[-1]), 2 * given_marks),
    ]
    points = [Point(10 ** (3 + i), iv, n) for i, (n, iv) in enumerate(zip(names, intervals, strict=True)) if iv]
    if points:
        charts.append(
            (
                scatter_chart(points, ("#5a6270", "s", names[0]), (names[0], names[-1]), "t" + names[0], log_x=True),
                len(points),
            )
        )
    ys = [v for v in values if v is not None]
    charts.append(
        (
            line_chart([Line(names[0], "#18804a", "D", list(range(len(ys))), ys)], [], ("x", "y"), "t" + names[0]),
            len(ys),
        )
    )
    for svg, expected in charts:
        _, _, marks = read_figure(svg)
        assert len(marks) == expected
        for number in re.findall(r' (?:x|y|x1|x2|y1|y2|cx|cy|width|height)="([^"]*)"', svg):
            assert math.isfinite(float(number)), number


def test_a_figure_is_a_standalone_svg_file() -> None:
    svg = interval_chart(["a"], [Panel([Series("s", "#000000", "o", [Interval(1.0)])], "x")], "t")
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" ') and svg.endswith("</svg>\n")
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)
    assert [child.tag for child in root][:2] == [f"{SVG}title", f"{SVG}desc"]
