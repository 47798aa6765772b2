"""The board's charts, drawn as SVG by hand (:mod:`tide_bench.charts.svg`): ticks at
round numbers on any range, 1-2-5 ticks on a log axis, labels that never overlap, a hover title
on every mark, well-formed SVG whatever a model is called, and a build that no longer imports a
plotting library (its import and drawing were a tenth of a build's CPU)."""

from __future__ import annotations

import itertools
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.leaderboard_helpers import fake_judge, judged_submission
from tide_bench.charts.svg import log_ticks, nice_ticks, padded, text_width, tick_labels
from tide_bench.leaderboard.site.plots import draw_charts, forest_plot, pairwise_plot, size_plot

ROUND_STEPS = {1.0, 2.0, 2.5, 5.0}


def _mantissa(value: float) -> float:
    return round(value / 10 ** math.floor(math.log10(value)), 3)  # float noise of a difference of large ticks


@settings(max_examples=400, derandomize=True, deadline=None)
@given(
    low=st.floats(min_value=-1e6, max_value=1e6),
    span=st.floats(min_value=1e-6, max_value=1e6),
    bins=st.integers(min_value=4, max_value=10),
)
def test_nice_ticks_are_round_evenly_spaced_and_inside_the_range(low: float, span: float, bins: int) -> None:
    span = max(span, abs(low) * 1e-5)  # a range a chart may meet: not 1e-9 of its values (float noise)
    high = low + span
    ticks = nice_ticks(low, high, bins)
    assert 2 <= len(ticks) <= bins + 1
    tolerance = 1e-9 * max(abs(low), abs(high), span)
    assert all(low - tolerance <= t <= high + tolerance for t in ticks)
    steps = [b - a for a, b in itertools.pairwise(ticks)]
    step = steps[0]
    assert all(math.isclose(s, step, rel_tol=1e-4) for s in steps)
    assert _mantissa(step) in ROUND_STEPS | {10.0}
    assert all(math.isclose(t / step, round(t / step), abs_tol=1e-4) for t in ticks)  # whole multiples
    labels = tick_labels(ticks)
    assert len({len(label.partition(".")[2]) for label in labels}) == 1  # one number of decimals
    assert all(math.isclose(float(label), t, abs_tol=step / 100) for label, t in zip(labels, ticks, strict=True))


def test_ticks_and_margins_of_extreme_ranges_are_numbers() -> None:
    for low, high in [(-1e308, 1e308), (-1.7e308, 1.7e308), (1e-300, 2e-300), (5e-324, 1e-323)]:
        ticks = nice_ticks(low, high, 7)
        assert ticks and all(math.isfinite(t) and low <= t <= high for t in ticks), (low, high, ticks)
        assert all(math.isfinite(v) for v in padded([low, high]))


def test_ticks_of_a_score_axis() -> None:
    assert nice_ticks(2.41, 3.62, 7) == [2.6, 2.8, 3.0, 3.2, 3.4, 3.6]
    assert nice_ticks(2.41, 3.9, 5) == [2.5, 2.75, 3.0, 3.25, 3.5, 3.75]
    assert tick_labels([2.5, 2.75, 3.0]) == ["2.50", "2.75", "3.00"]
    assert nice_ticks(1.0, 5.0, 7) == [1.0, 2.0, 3.0, 4.0, 5.0] and tick_labels([1.0, 2.0]) == ["1", "2"]
    assert tick_labels(nice_ticks(0.0, 1.0, 5)) == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]


@settings(max_examples=200, derandomize=True, deadline=None)
@given(low=st.floats(min_value=1e3, max_value=1e12), ratio=st.floats(min_value=1.01, max_value=1e6))
def test_log_ticks_are_1_2_5_inside_the_range(low: float, ratio: float) -> None:
    high = low * ratio
    ticks = log_ticks(low, high)
    assert len(ticks) <= 9 and ticks == sorted(ticks)
    assert all(low <= t <= high and _mantissa(t) in {1.0, 2.0, 5.0} for t in ticks)
    if ratio >= 10:
        assert ticks  # a decade always holds a power of ten


def _row(k: int, name: str, mean: float, width: float, parameters: Any = 135e6, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"m{k}",
        "model_name": name,
        "condition": "fine-tuned" if k % 2 else "zero-shot",
        "parameters": parameters,
        "rank": k + 1,
        "rank_interval": [k + 1, k + 2],
        "empathy": {"mean": mean, "ci_low": mean - width, "ci_high": mean + width},
        **extra,
    }


def _parses(svg: str) -> ET.Element:
    """The chart as XML (inline SVG in HTML is also well-formed XML here: the check that every
    name was escaped)."""
    return ET.fromstring(svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def test_size_plot_labels_never_overlap_and_every_mark_has_a_title() -> None:
    rows = [_row(k, f"Model number {k}", 3.0 + 0.001 * k, 0.1, parameters=[135e6, 1.5e9][k % 2]) for k in range(30)]
    svg = size_plot(rows, "empathy", "Empathy")
    root = _parses(svg)
    ns = "{http://www.w3.org/2000/svg}"
    labels = {t.text: float(t.get("y", 0)) for t in root.iter(f"{ns}text") if (t.text or "").startswith("Model")}
    assert len(labels) == 30
    ys = sorted(labels.values())
    assert min(b - a for a, b in itertools.pairwise(ys)) >= 13  # 11 px text, 15 px apart
    titles = [t.text or "" for t in root.iter(f"{ns}title")]
    assert len(titles) == 30 and all(re.search(r": 3\.\d\d \(95% CI 2\.\d\d\u20133\.\d\d\)", t) for t in titles)
    forest = _parses(forest_plot(rows, "empathy", "Empathy"))
    assert sum(1 for _ in forest.iter(f"{ns}title")) == 30


def test_the_forest_margin_fits_the_longest_name() -> None:
    long = "A model with a rather long and descriptive name"
    svg = forest_plot([_row(0, long, 3.0, 0.1), _row(1, "b", 2.0, 0.1)], "empathy", "Empathy")
    x_of_axis = min(
        float(x) for x in re.findall(r'<line x1="([\d.]+)" y1="[\d.]+" x2="[\d.]+" y2="[\d.]+" stroke="#e4e4e4"', svg)
    )
    assert x_of_axis >= text_width(long[:43] + "\u2026") + 8  # names are cut at 44 characters


_NAMES = st.text(
    alphabet=st.sampled_from([*"ab <>&\"'$\\=\u00e9\u4e2d\u200f\U0001f600", "\u2028"]), min_size=1, max_size=60
)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    names=st.lists(_NAMES, min_size=1, max_size=14),
    means=st.lists(st.one_of(st.floats(min_value=-1e3, max_value=1e3), st.floats()), min_size=14, max_size=14),
    widths=st.lists(st.one_of(st.floats(min_value=0, max_value=50), st.floats(), st.none()), min_size=14, max_size=14),
    sizes=st.lists(
        st.one_of(st.none(), st.floats(min_value=1, max_value=1e13), st.just(True)), min_size=14, max_size=14
    ),
    significant=st.booleans(),
)
def test_charts_are_well_formed_svg_for_any_names_and_numbers(
    names: list[str], means: list[float], widths: list[float], sizes: list[Any], significant: bool
) -> None:
    """A submitter names the model and the numbers come from the scoring: whatever they are, the
    charts are well-formed SVG with every name as text (never markup), and no error."""
    rows = [_row(k, n, means[k], widths[k] or 0.0, parameters=sizes[k]) for k, n in enumerate(names)]
    for k, row in enumerate(rows):
        if widths[k] is None:  # an interval not computed
            row["empathy"] |= {"ci_low": None, "ci_high": None}
    pairs = [
        {
            "a": a["id"],
            "b": b["id"],
            "difference": a["empathy"]["mean"] - b["empathy"]["mean"],
            "significant": significant,
        }
        for i, a in enumerate(rows)
        for b in rows[i + 1 :]
    ]
    drawn = draw_charts(rows, pairs, "empathy", "Empathy <&>")
    scored = [r for r in rows if math.isfinite(r["empathy"]["mean"])]
    assert bool(drawn["forest"]) == bool(scored)
    for svg in drawn.values():
        if svg:
            root = _parses(svg)
            assert root.get("aria-label", "").startswith(("Empathy <&>", "paired differences in empathy"))
            assert "<script" not in svg
            assert not re.search(r'="[^"]*(nan|inf)', svg), "a coordinate that is not a number"


def test_nothing_to_show_draws_nothing() -> None:
    rows = [_row(0, "a", 3.0, 0.1, parameters=None)]
    assert size_plot(rows, "empathy", "Empathy") == "" and pairwise_plot(rows, [], "empathy") == ""
    assert forest_plot([_row(0, "a", math.nan, 0.1)], "empathy", "Empathy") == ""


def test_a_build_imports_no_plotting_library(tmp_path: Path) -> None:
    with fake_judge("sk-test-charts-000") as server:
        judged_submission(tmp_path, server, "model-a", lambda i: f"Good reply [[SCORES:5,4,4]] {i.item_id}")
        judged_submission(
            tmp_path, server, "model-b", lambda i: f"Plain [[SCORES:2,3,2]] {i.item_id}", params=135_000_000
        )
    code = (
        "import sys; from tests.leaderboard_helpers import board; from tide_bench.leaderboard import build_site; "
        f"r = build_site({str(tmp_path / 'submissions')!r}, {str(tmp_path / 'site')!r}, board(), workers=1, "
        "allow_risk_gate_off=True); "
        "assert len(r.accepted) == 2, r.refused; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'plotly', 'seaborn')))"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
    page = (tmp_path / "site" / "index.html").read_text()
    assert page.count('<svg class="chart"') == 4  # forest, pairwise, size, equity


@pytest.mark.parametrize("k", [2, 12, 13, 50])
def test_pairwise_cells_show_values_up_to_12_entries_and_dots_beyond(k: int) -> None:
    rows = [_row(i, f"m{i}", 3.0 - 0.01 * i, 0.1) for i in range(k)]
    pairs = [
        {"a": a["id"], "b": b["id"], "difference": 0.25, "significant": True}
        for i, a in enumerate(rows)
        for b in rows[i + 1 :]
    ]
    svg = pairwise_plot(rows, pairs, "empathy")
    cells = k * (k - 1)
    if k <= 12:
        assert svg.count("+0.25*") == cells // 2 and svg.count("-0.25*") == cells // 2
    else:
        assert svg.count('r="1.8"') == cells and "+0.25*" not in svg
    assert svg.count("<title>") == cells


@pytest.mark.parametrize("k", [1, 2, 3, 6, 12])
def test_every_forest_label_lies_inside_the_chart(k: int) -> None:
    """The rank axis's title is turned upright only where the rows are taller than it; with few
    entries it is a header over the rank column instead (a one-entry board cut it off)."""
    rows = [_row(j, f"Model {j}", 3.0 - 0.1 * j, 0.1) for j in range(k)]
    root = _parses(forest_plot(rows, "empathy", "Empathy"))
    ns = "{http://www.w3.org/2000/svg}"
    width, height = (float(v) for v in root.get("viewBox", "").split()[2:])
    for t in root.iter(f"{ns}text"):
        x, y, extent = float(t.get("x", 0)), float(t.get("y", 0)), text_width(t.text or "")
        if "rotate" in (t.get("transform") or ""):  # upright, centred on y
            assert y - extent / 2 >= 0 and y + extent / 2 <= height, t.text
            continue
        start = {"start": x, "middle": x - extent / 2, "end": x - extent}[t.get("text-anchor", "start")]
        assert start >= 0 and start + extent <= width and 0 <= y <= height, t.text
