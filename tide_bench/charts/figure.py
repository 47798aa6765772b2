"""Charts as SVG documents: the frames (axes, legends, titled marks) shared with the board, and
the four kinds of figure the study, the audit and the fine-tuning card draw.

* :func:`interval_chart`: categories down the side, one or more panels of values with 95 %
  intervals, a series per look (the study's gains, the audit's alphas);
* :func:`scatter_chart`: values with intervals against a (log) x axis, each point labelled (gain
  versus model size);
* :func:`heatmap`: a grid of values on the red-blue scale with a colour bar (gain per scenario);
* :func:`line_chart`: lines over a shared x axis, points marked or not (the loss curve).

A figure is one ``<svg>`` that reads alone as a file and inline in a page: it names its namespace,
says what it shows in a ``<title>`` and what it holds, number by number, in a ``<desc>`` (the text
alternative a screen reader reads), and every data point is a ``<g>`` with its own ``<title>``
(a browser shows it on hover). Texts are escaped, never markup.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tide_bench.charts.style import AXIS, GRID
from tide_bench.charts.svg import (
    FONT,
    Scale,
    diverging,
    diverging_gradient,
    esc,
    line,
    log_ticks,
    mark,
    nice_ticks,
    num,
    padded,
    text,
    text_width,
    tick_labels,
)

Look = tuple[str, str, str]  # colour, marker, legend label


@dataclass(frozen=True)
class Interval:
    """A value and its 95 % interval (a missing bound draws no whisker on that side)."""

    value: float
    low: float | None = None
    high: float | None = None

    def bounds(self) -> tuple[float, float]:
        return (self.value if self.low is None else self.low, self.value if self.high is None else self.high)

    def describe(self) -> str:
        low, high = self.low, self.high
        return f"{self.value:.3g}" + ("" if low is None or high is None else f" (95% CI {low:.3g} to {high:.3g})")


@dataclass(frozen=True)
class Series:
    """Values in one look: one per category (``None`` where the category has none)."""

    name: str
    colour: str
    shape: str
    values: Sequence[Interval | None]


@dataclass(frozen=True)
class Rule:
    """A reference line across a panel (a threshold, zero, the reference row's mean)."""

    at: float
    label: str
    colour: str = AXIS
    dash: str = "4 3"


@dataclass(frozen=True)
class Panel:
    series: Sequence[Series]
    axis_label: str
    rules: Sequence[Rule] = ()


def document(width: float, height: float, title: str, description: str, body: Sequence[str]) -> str:
    """A standalone SVG (a file, or inline in a page), white behind, its title and text alternative first."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{round(width)}" '
        f'height="{round(height)}" style="max-width:{round(width)}px" viewBox="0 0 {num(width)} {num(height)}" '
        f'font-family="sans-serif" font-size="{FONT}"><title>{esc(title)}</title><desc>{esc(description)}</desc>'
        f'<rect width="{num(width)}" height="{num(height)}" fill="#ffffff"/>' + "".join(body) + "</svg>\n"
    )


def titled(title: str, parts: Sequence[str]) -> str:
    """Marks grouped under a hover title."""
    return f"<g><title>{esc(title)}</title>{''.join(parts)}</g>"


def legend(looks: Iterable[Look], x: float, y: float) -> list[str]:
    """One mark and name for each look, in a row from ``x``."""
    out = []
    for colour, shape, name in looks:
        out += [mark(shape, x + 6, y, colour), text(x + 16, y, name, size=FONT - 1)]
        x += 16 + text_width(name, FONT - 1) + 18
    return out


def _rule_legend(rules: Iterable[Rule], x: float, y: float) -> list[str]:
    out = []
    for rule in rules:
        out += [line(x, y, x + 14, y, rule.colour, 1.2, rule.dash), text(x + 18, y, rule.label, size=FONT - 1)]
        x += 18 + text_width(rule.label, FONT - 1) + 18
    return out


def _rules_width(rules: Iterable[Rule]) -> float:
    return sum(36 + text_width(r.label, FONT - 1) for r in rules)


def axis_x(scale: Scale, ticks: Sequence[float], labels: Sequence[str], top: float, bottom: float) -> list[str]:
    """Vertical grid lines at the ticks from ``top`` to ``bottom``, the axis line and the tick labels under it."""
    out = [line(scale(t), top, scale(t), bottom, GRID, 0.8) for t in ticks]
    out.append(line(scale.start, bottom, scale.end, bottom, AXIS, 0.8))
    for t, label in zip(ticks, labels, strict=True):
        out += [
            line(scale(t), bottom, scale(t), bottom + 4, AXIS, 0.8),
            text(scale(t), bottom + 13, label, anchor="middle"),
        ]
    return out


def axis_y(scale: Scale, ticks: Sequence[float], labels: Sequence[str], left: float, right: float) -> list[str]:
    """Horizontal grid lines at the ticks from ``left`` to ``right``, the axis line and the tick labels beside it."""
    out = []
    for t, label in zip(ticks, labels, strict=True):
        y = scale(t)
        out += [line(left, y, right, y, "#ececec", 0.8), line(left - 4, y, left, y, AXIS, 0.8)]
        out.append(text(left - 7, y, label, anchor="end"))
    out.append(line(left, scale.start, left, scale.end, AXIS, 0.8))
    return out


def _whiskers(x0: float, x1: float, y: float, colour: str, across: bool) -> list[str]:
    """An interval from ``x0`` to ``x1`` at ``y`` with end caps (``across``: drawn vertically)."""
    pieces = [(x0, y, x1, y), (x0, y - 3.5, x0, y + 3.5), (x1, y - 3.5, x1, y + 3.5)]
    if across:
        pieces = [(b, a, d, c) for a, b, c, d in pieces]
    return [line(*p, colour, 1.2) for p in pieces]


# ---------------------------------------------------------------- intervals by category


def _panel_range(panel: Panel) -> tuple[float, float]:
    spans = [b for s in panel.series for v in s.values if v is not None for b in v.bounds()]
    return padded(spans + [r.at for r in panel.rules] or [0.0])


def _interval_panel(
    categories: Sequence[str], panel: Panel, left: float, right: float, top: float, row_height: float
) -> list[str]:
    bottom = top + len(categories) * row_height
    low, high = _panel_range(panel)
    scale = Scale(low, high, left, right)
    ticks = nice_ticks(low, high, 6)
    body = axis_x(scale, ticks, tick_labels(ticks), top, bottom)
    body.append(text((left + right) / 2, bottom + 32, panel.axis_label, anchor="middle"))
    body += [line(scale(r.at), top, scale(r.at), bottom, r.colour, 1.2, r.dash) for r in panel.rules]
    k = len(panel.series)
    for j, series in enumerate(panel.series):
        offset = (j - (k - 1) / 2) * min(8.0, row_height / (k + 1))
        for i, (category, value) in enumerate(zip(categories, series.values, strict=True)):
            if value is None:
                continue
            y, (lo, hi) = top + (i + 0.5) * row_height + offset, value.bounds()
            parts = _whiskers(scale(lo), scale(hi), y, series.colour, across=False)
            parts.append(mark(series.shape, scale(value.value), y, series.colour))
            body.append(titled(f"{category}, {series.name}: {value.describe()}", parts))
    return body


def interval_chart(categories: Sequence[str], panels: Sequence[Panel], title: str, lead: str = "") -> str:
    """Panels side by side over the same categories (one row each, named on the left), each point
    a mark with its interval's whiskers; the legend names every series and rule once."""
    names = [" ".join(c.split()) for c in categories]
    left = max(text_width(n) for n in names) + 16 if names else 16.0
    panel_width, gap, top = 330.0, 34.0, 34.0
    row_height = max(26.0, 9.0 * max(len(p.series) for p in panels) + 8)
    width = left + len(panels) * panel_width + (len(panels) - 1) * gap + 20
    body = [text(left - 8, top + (i + 0.5) * row_height, n, anchor="end") for i, n in enumerate(names)]
    for p, panel in enumerate(panels):
        x = left + p * (panel_width + gap)
        body += _interval_panel(names, panel, x, x + panel_width, top, row_height)
    looks: dict[str, Look] = {}
    for series in (s for panel in panels for s in panel.series):
        looks.setdefault(series.name, (series.colour, series.shape, series.name))
    body += legend(looks.values(), left, 14)
    rules = {r.label: r for panel in panels for r in panel.rules}
    at = left + sum(34 + text_width(n, FONT - 1) for n in looks)
    body += _rule_legend(rules.values(), at, 14)
    width = max(width, at + _rules_width(rules.values()))
    points = "; ".join(
        f"{c}, {s.name}: {v.describe()}"
        for panel in panels
        for s in panel.series
        for c, v in zip(names, s.values, strict=True)
        if v is not None
    )
    marks = "; ".join(f"{r.label} at {r.at:.3g}" for r in rules.values())
    description = " ".join(x for x in (lead, f"Values: {points or 'none'}.", marks and f"Lines: {marks}.") if x)
    return document(width, top + len(names) * row_height + 46, title, description, body)


# ---------------------------------------------------------------- points against x


def size_label(value: float) -> str:
    """A parameter count as people write it: 135M, 1.5B, 8K."""
    if value >= 1e9:
        return f"{value / 1e9:g}B"
    return f"{value / 1e6:g}M" if value >= 1e6 else f"{value / 1e3:g}K"


@dataclass(frozen=True)
class Point:
    x: float
    y: Interval
    label: str


def scatter_chart(
    points: Sequence[Point], look: Look, axes: tuple[str, str], title: str, *, log_x: bool = False, zero: bool = True
) -> str:
    """Points with vertical intervals against ``x`` (a parameter count on a log axis with 1-2-5
    ticks when ``log_x``), each labelled beside it; a line at y = 0 when ``zero``."""
    left, top, plot_width, plot_height = 64.0, 34.0, 420.0, 260.0
    right, bottom = left + plot_width, top + plot_height
    xs = [p.x for p in points]
    x_low, x_high = (min(xs) / 1.6, max(xs) * 1.6) if log_x else padded(xs)
    x_scale = Scale(x_low, x_high, left, right, log=log_x)
    x_ticks = log_ticks(x_low, x_high) if log_x else nice_ticks(x_low, x_high, 6)
    x_labels = [size_label(t) for t in x_ticks] if log_x else tick_labels(x_ticks)
    low, high = padded([b for p in points for b in p.y.bounds()] + ([0.0] if zero else []))
    y_scale = Scale(low, high, bottom, top)
    y_ticks = nice_ticks(low, high, 6)
    body = axis_x(x_scale, x_ticks, x_labels, top, bottom) + axis_y(y_scale, y_ticks, tick_labels(y_ticks), left, right)
    body.append(text((left + right) / 2, bottom + 32, axes[0], anchor="middle"))
    body.append(text(16, (top + bottom) / 2, axes[1], anchor="middle", rotate=-90))
    if zero:
        body.append(line(left, y_scale(0.0), right, y_scale(0.0), AXIS, 1))
    colour, shape, name = look
    labels = []
    for p in points:
        px, (lo, hi) = x_scale(p.x), p.y.bounds()
        parts = _whiskers(y_scale(lo), y_scale(hi), px, colour, across=True)
        parts.append(mark(shape, px, y_scale(p.y.value), colour))
        at = size_label(p.x) if log_x else f"{p.x:.3g}"
        body.append(titled(f"{p.label} ({at}): {p.y.describe()}", parts))
        labels.append(text(px + 8, y_scale(p.y.value) - 9, p.label, size=FONT - 1))
    body += labels + legend([look], left, 14)
    width = max(right + 20, max(x_scale(p.x) + 10 + text_width(p.label, FONT - 1) for p in points) + 10)
    description = "; ".join(
        f"{p.label} at {size_label(p.x) if log_x else f'{p.x:.3g}'}: {p.y.describe()}" for p in points
    )
    return document(width, bottom + 46, title, f"{name} by {axes[0]}: {description}.", body)


@dataclass(frozen=True)
class Line:
    """One line: its points in x order; ``shape`` marks each point (``None``: the line alone)."""

    name: str
    colour: str
    shape: str | None
    xs: Sequence[float]
    ys: Sequence[float]


def _polyline(xs: Iterable[float], ys: Iterable[float], colour: str) -> str:
    points = " ".join(f"{num(x)},{num(y)}" for x, y in zip(xs, ys, strict=True))
    return f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.4"/>'


def line_chart(lines: Sequence[Line], rules: Sequence[Rule], axes: tuple[str, str], title: str) -> str:
    """Lines over one x axis (``rules`` are vertical lines at an x); a marked line's every point
    carries its own title, an unmarked line one title for the whole line."""
    left, top, plot_width, plot_height = 64.0, 34.0, 460.0, 240.0
    right, bottom = left + plot_width, top + plot_height
    xs = [x for ln in lines for x in ln.xs] + [r.at for r in rules]
    ys = [y for ln in lines for y in ln.ys]
    x_low, x_high = padded(xs or [0.0], 0.02)
    y_low, y_high = padded(ys or [0.0])
    x_scale, y_scale = Scale(x_low, x_high, left, right), Scale(y_low, y_high, bottom, top)
    x_ticks, y_ticks = nice_ticks(x_low, x_high, 7), nice_ticks(y_low, y_high, 6)
    body = axis_x(x_scale, x_ticks, tick_labels(x_ticks), top, bottom)
    body += axis_y(y_scale, y_ticks, tick_labels(y_ticks), left, right)
    body.append(text((left + right) / 2, bottom + 32, axes[0], anchor="middle"))
    body.append(text(16, (top + bottom) / 2, axes[1], anchor="middle", rotate=-90))
    body += [line(x_scale(r.at), top, x_scale(r.at), bottom, r.colour, 1.2, r.dash) for r in rules]
    for ln in lines:
        px, py = [x_scale(x) for x in ln.xs], [y_scale(y) for y in ln.ys]
        if ln.shape is None:
            body.append(titled(f"{ln.name}: {len(px)} points", [_polyline(px, py, ln.colour)]))
            continue
        body.append(_polyline(px, py, ln.colour))
        for x, y, sx, sy in zip(ln.xs, ln.ys, px, py, strict=True):
            body.append(titled(f"{ln.name} at {x:g}: {y:.4g}", [mark(ln.shape, sx, sy, ln.colour)]))
    looks = [(ln.colour, ln.shape or "line", ln.name) for ln in lines]
    body += _line_legend(looks, left, 14)
    at = left + sum(34 + text_width(n, FONT - 1) for _, _, n in looks)
    body += _rule_legend(rules, at, 14)
    description = "; ".join(
        f"{ln.name}: {len(ln.xs)} points"
        + (
            f", from {ln.ys[0]:.4g} at {ln.xs[0]:g} to {ln.ys[-1]:.4g} at {ln.xs[-1]:g}, lowest {min(ln.ys):.4g}"
            if ln.xs
            else ""
        )
        for ln in lines
    )
    marks = "".join(f"; {r.label}" for r in rules)
    width = max(right + 20, at + _rules_width(rules))
    return document(width, bottom + 46, title, f"{axes[1]} by {axes[0]}. {description}{marks}.", body)


def _line_legend(looks: Sequence[Look], x: float, y: float) -> list[str]:
    out = []
    for colour, shape, name in looks:
        out.append(line(x, y, x + 14, y, colour, 1.4))
        if shape != "line":
            out.append(mark(shape, x + 7, y, colour))
        out.append(text(x + 18, y, name, size=FONT - 1))
        x += 18 + text_width(name, FONT - 1) + 16
    return out


# ---------------------------------------------------------------- heatmap


def colour_bar(x: float, top: float, height: float, vmax: float, gradient_id: str, size: float = FONT) -> list[str]:
    """The red-blue scale from -``vmax`` (bottom) to ``vmax`` (top) as a bar with round ticks
    (``gradient_id`` must be unique on the page)."""
    scale = Scale(-vmax, vmax, top + height, top)
    out = [
        diverging_gradient(gradient_id),
        f'<rect x="{num(x)}" y="{num(top)}" width="14" height="{num(height)}" fill="url(#{gradient_id})"/>',
    ]
    ticks = nice_ticks(-vmax, vmax, 4)
    for t, label in zip(ticks, tick_labels(ticks), strict=True):
        out += [line(x + 14, scale(t), x + 18, scale(t), AXIS, 0.8), text(x + 21, scale(t), label, size=size)]
    return out


@dataclass(frozen=True)
class Cell:
    """One cell: its value (the colour), the text shown in it, its hover title; ``bold`` for a
    cell that stands out (a significant difference)."""

    value: float
    label: str
    title: str
    bold: bool = False


def heatmap(
    rows: Sequence[str], columns: Sequence[str], cells: Sequence[Sequence[Cell | None]], scale_label: str, title: str
) -> str:
    """The grid on the red-blue scale centred on 0 (blue above), with a colour bar and its ticks."""
    values = [abs(c.value) for row in cells for c in row if c is not None and math.isfinite(c.value)]
    vmax = max(values, default=0.0) or 1.0
    cw, ch, top = 64.0, 30.0, 34.0
    left = max((text_width(r) for r in rows), default=0.0) + 14
    room = max((text_width(c, FONT - 1) for c in columns), default=0.0) * 0.75 + 20
    bottom = top + len(rows) * ch
    bar_x = left + len(columns) * cw + 22
    body = [text(left - 8, top + (i + 0.5) * ch, r, anchor="end") for i, r in enumerate(rows)]
    for j, c in enumerate(columns):
        x = left + (j + 0.5) * cw
        body.append(text(x, bottom + 8, c, anchor="end", size=FONT - 1, rotate=-40))
    for i, row in enumerate(cells):
        for j, cell in enumerate(row):
            if cell is None:
                continue
            x0, y0 = left + j * cw, top + i * ch
            ink = "#ffffff" if abs(cell.value) > 0.6 * vmax else "#111111"
            parts = [
                f'<rect x="{num(x0)}" y="{num(y0)}" width="{num(cw)}" height="{num(ch)}" '
                f'fill="{diverging(0.5 + cell.value / (2 * vmax))}" stroke="#ffffff"/>',
                text(x0 + cw / 2, y0 + ch / 2, cell.label, anchor="middle", size=10, fill=ink, bold=cell.bold),
            ]
            body.append(titled(cell.title, parts))
    bar_bottom = max(bottom, top + 150.0)  # room for the colour bar's ticks however few the rows
    gradient = f"heat-{zlib.crc32(title.encode()):08x}"  # unique on a page that shows several, stable across runs
    body += colour_bar(bar_x, top, bar_bottom - top, vmax, gradient)
    width = bar_x + 70
    height = max(bottom + room, bar_bottom + 10, top + text_width(scale_label, FONT - 1) + 20)
    body.append(text(width - 10, (top + height) / 2, scale_label, anchor="middle", rotate=90, size=FONT - 1))
    description = "; ".join(c.title for row in cells for c in row if c is not None)
    return document(width, height, title, f"{scale_label}. {description or 'no cells'}.", body)
