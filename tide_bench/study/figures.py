"""The study report's figures, drawn from its results (``report.json``) as SVG with the board's
colours and marks (:mod:`tide_bench.charts`): a file beside ``report.md`` for each, and the same
drawing inline in the board's section.

* ``gain_<metric>.svg``: zero-shot and fine-tuned means per model with their 95 % intervals (the
  reference row's mean as a dotted line on judged empathy), and beside them the paired gain;
* ``gain_vs_size_<metric>.svg``: the paired gain against model size on a log axis (the
  knowledge-transfer ceiling);
* ``scenario_gains_<metric>.svg``: the paired gain per model and scenario as a red-blue heatmap,
  ``*`` marking a cell that differs from 0 after Holm's correction over all the figure's cells.

Every point carries its numbers in a hover title and in the figure's text alternative.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from tide_bench.charts.figure import (
    Cell,
    Interval,
    Panel,
    Point,
    Rule,
    Series,
    heatmap,
    interval_chart,
    scatter_chart,
)
from tide_bench.charts.style import GAIN, MARKERS
from tide_bench.core.jsonio import atomic_write_text
from tide_bench.generation.reference import LABEL

METRICS = ("empathy", "cosine_sim")
LABELS = {"empathy": "judged empathy (1-5)", "cosine_sim": "cosine similarity to the reference"}


class Drawing(NamedTuple):
    name: str  # the file beside report.md
    caption: str
    svg: str


def _interval(block: dict[str, Any] | None, centre: str) -> Interval | None:
    """An interval block (``mean`` or ``difference`` with ``ci_low``/``ci_high``) as a chart value."""
    if not block or block.get(centre) is None:
        return None
    return Interval(block[centre], block.get("ci_low"), block.get("ci_high"))


def _gain_figure(result: dict[str, Any], metric: str, models: list[dict[str, Any]], caption: str) -> str:
    series = [
        Series(look[2], look[0], look[1], [_interval(m[metric].get(condition), "mean") for m in models])
        for condition in ("zero-shot", "fine-tuned")
        for look in (MARKERS[condition],)  # the board's own colours and marks for the two conditions
    ]
    anchor = result.get("reference") or {}
    mean = (anchor.get("empathy") or {}).get("mean")
    rules = (
        [Rule(mean, anchor.get("label", LABEL), MARKERS["anchor"][0], "2 3")]
        if metric == "empathy" and mean is not None
        else []
    )
    gains = Series("gain (paired)", GAIN[0], GAIN[1], [_interval(m[metric]["gain"], "difference") for m in models])
    panels = [
        Panel(series, f"{LABELS[metric]} (95% CI, personas resampled)", rules),
        Panel([gains], "gain: fine-tuned minus zero-shot (paired)", [Rule(0.0, "no gain", "#000000", "")]),
    ]
    return interval_chart([str(m["model"]) for m in models], panels, caption)


def _size_figure(metric: str, sized: list[dict[str, Any]], caption: str) -> str:
    points = [
        Point(float(m["parameters"]), gain, str(m["model"]))
        for m in sized
        if (gain := _interval(m[metric]["gain"], "difference")) is not None
    ]
    axes = ("parameters (log scale)", f"gain in {LABELS[metric]}")
    return scatter_chart(points, (GAIN[0], GAIN[1], "gain (paired)"), axes, caption, log_x=True) if points else ""


def _scenario_figure(metric: str, models: list[dict[str, Any]], scenarios: list[str], caption: str) -> str:
    def cell(model: dict[str, Any], scenario: str) -> Cell | None:
        block = model[metric]["gain_by_scenario"].get(scenario) or {}
        gain = _interval(block, "difference")
        if gain is None:
            return None
        star = bool(block.get("star"))
        note = ", differs from 0 after Holm's correction" if star else ""
        title = f"{model['model']}, {scenario}: gain {gain.describe()}, n = {block.get('n')}{note}"
        return Cell(gain.value, f"{gain.value:+.2f}{'*' if star else ''}", title, bold=star)

    grid = [[cell(m, s) for s in scenarios] for m in models]
    scale = f"gain in {LABELS[metric]}, fine-tuned minus zero-shot"
    return heatmap([str(m["model"]) for m in models], scenarios, grid, scale, caption)


def draw(result: dict[str, Any]) -> list[Drawing]:
    """Every figure the results hold data for, in the report's order."""
    out = []
    for metric in METRICS:
        models = [m for m in result["models"] if (m.get(metric) or {}).get("gain")]
        if not models:
            continue
        label = LABELS[metric]
        caption = f"Zero-shot and fine-tuned {label} per model (95% intervals)"
        out.append(Drawing(f"gain_{metric}.svg", caption, _gain_figure(result, metric, models, caption)))
        sized = [m for m in models if m.get("parameters")]
        caption = f"Gain from fine-tuning in {label} against model size"
        if sized and (svg := _size_figure(metric, sized, caption)):
            out.append(Drawing(f"gain_vs_size_{metric}.svg", caption, svg))
        scenarios = sorted({s for m in models for s in m[metric].get("gain_by_scenario", {})})
        if scenarios:
            caption = f"Gain in {label} per scenario (* Holm-adjusted p <= 0.05)"
            out.append(
                Drawing(f"scenario_gains_{metric}.svg", caption, _scenario_figure(metric, models, scenarios, caption))
            )
    return out


def write_figures(result: dict[str, Any], folder: Path) -> list[dict[str, str]]:
    """The figures as SVG files in ``folder``; returns each one's file name and caption."""
    written = []
    for drawing in draw(result):
        atomic_write_text(folder / drawing.name, drawing.svg)
        written.append({"name": drawing.name, "caption": drawing.caption})
    return written
