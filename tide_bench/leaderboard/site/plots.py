"""The board's charts, inline SVG drawn here (no script, no network; :mod:`tide_bench.charts.svg` has
the pieces and :mod:`tide_bench.charts.style` the colours and marks).

* :func:`forest_plot`: each entry's score with its 95 % CI, best first, the rank interval beside
  it, zero-shot / fine-tuned / reference anchor told apart by colour *and* marker shape;
* :func:`size_plot`: score versus parameter count on a log axis with round ticks (100M, 200M,
  1B...), a legend, entries of the same size dodged apart, and labels in a column beside the
  axes, spaced so that no two overlap, each joined to its point by a thin line;
* :func:`pairwise_plot`: the paired difference of every two ranked entries (row minus column),
  the significant ones (after the board's multiple-testing correction) marked.

Every mark carries a ``<title>`` (the reader's browser shows it on hover): the entry, its mean
and interval, or the pair's difference. Model names are text, escaped, never markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tide_bench.charts.figure import axis_x, colour_bar, legend, size_label, titled
from tide_bench.charts.style import MARKERS, OTHER
from tide_bench.charts.svg import (
    FONT,
    Scale,
    diverging,
    line,
    log_ticks,
    mark,
    nice_ticks,
    num,
    padded,
    spread,
    svg,
    text,
    text_width,
    tick_labels,
)
from tide_bench.leaderboard.scoring.scores import REFERENCE_ANCHOR

NAME_CHARS = 44


def is_anchor(row: dict[str, Any]) -> bool:
    """A reference anchor row (TIDE's own reference replies, judged like every entry): marked by
    the scoring's ``is_reference`` flag, or left unranked with the reason "reference anchor". It
    is ranked only when the board says so (``rank_reference``); its rank is then shown."""
    return row.get("is_reference") is True or (
        row.get("rank") is None and str(row.get("unranked_reason") or "") == REFERENCE_ANCHOR
    )


def unranked_anchor(row: dict[str, Any]) -> bool:
    return is_anchor(row) and row.get("rank") is None


def style_of(row: dict[str, Any]) -> tuple[str, str, str]:
    return MARKERS["anchor"] if is_anchor(row) else MARKERS.get(str(row.get("condition")), OTHER)


def short(name: Any, limit: int = NAME_CHARS) -> str:
    text = " ".join(str(name).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _mean(row: dict[str, Any], metric: str) -> float | None:
    block = row.get(metric)
    mean = block.get("mean") if isinstance(block, dict) else None
    return float(mean) if isinstance(mean, int | float) and math.isfinite(mean) else None


def _bounds(row: dict[str, Any], metric: str) -> tuple[float, float]:
    """The interval of a row with a mean; a bound that is missing or not a finite number is the mean."""
    block, mean = row[metric], _mean(row, metric) or 0.0
    low, high = block.get("ci_low"), block.get("ci_high")
    return _finite_or(low, mean), _finite_or(high, mean)


def _finite_or(value: Any, default: float) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else default


def _legend(rows: Sequence[dict[str, Any]], x: float, y: float) -> list[str]:
    """One mark and name for each look the rows use, in a row from ``x``."""
    seen: dict[str, tuple[str, str, str]] = {}
    for r in rows:
        colour, shape, name = style_of(r)
        seen.setdefault(name, (colour, shape, name))
    return legend(seen.values(), x, y)


def _interval_text(row: dict[str, Any], metric: str) -> str:
    mean = _mean(row, metric) or 0.0
    low, high = _bounds(row, metric)
    return f"{mean:.2f} (95% CI {low:.2f}\u2013{high:.2f})"


# ---------------------------------------------------------------- forest plot


def _rank_title(width: float, column: float, top: float, bottom: float, height: float) -> str:
    """The rank axis's title: upright along the right edge where the chart is taller than it,
    else (a board of one or two entries) "rank" over the rank column."""
    title, centre = "rank (95% interval)", (top + bottom) / 2
    if text_width(title) / 2 + 2 <= min(centre, height - centre):
        return text(width - 10, centre, title, anchor="middle", rotate=90)
    return text(column, top - 8, "rank")


def _forest(rows: list[dict[str, Any]], metric: str, axis_label: str) -> tuple[float, float, list[str]]:
    k = len(rows)
    names, ranks = [short(r.get("model_name")) for r in rows], [_rank_text(r) for r in rows]
    left = max(text_width(n) for n in names) + 14
    right = max(text_width(r) for r in ranks) + 36
    width = max(720.0, left + 360 + right)
    top, row_height = 34.0, 24.0
    bottom = top + k * row_height
    spans = [b for r in rows for b in _bounds(r, metric)]
    low, high = padded(spans)
    scale = Scale(low, high, left, width - right)
    ticks = nice_ticks(low, high, 7)
    body = axis_x(scale, ticks, tick_labels(ticks), top, bottom)
    body.append(text((left + width - right) / 2, bottom + 32, axis_label, anchor="middle"))
    body.append(_rank_title(width, width - right + 10, top, bottom, bottom + 46))
    for r, name, rank, i in zip(rows, names, ranks, range(k), strict=True):
        colour, shape, _ = style_of(r)
        y = top + (i + 0.5) * row_height
        mean = _mean(r, metric)
        assert mean is not None  # forest_plot keeps only rows with a score
        lo, hi = _bounds(r, metric)
        x0, x1, xm = scale(lo), scale(hi), scale(mean)
        parts = [text(left - 8, y, name, anchor="end"), text(width - right + 10, y, rank)]
        if is_anchor(r):
            parts.append(line(xm, top, xm, bottom, colour, 1, "2 3"))
        parts += [line(x0, y, x1, y, colour, 1.4), line(x0, y - 3.5, x0, y + 3.5, colour, 1.2)]
        parts += [line(x1, y - 3.5, x1, y + 3.5, colour, 1.2)]
        parts.append(mark(shape, xm, y, colour, filled=not (r.get("rank") is None and not is_anchor(r))))
        body.append(titled(f"{r.get('model_name')}: {_interval_text(r, metric)}; rank {rank}", parts))
    body += _legend(rows, left, 14)
    return width, bottom + 46, body


def _rank_text(row: dict[str, Any]) -> str:
    if unranked_anchor(row):
        return "anchor"
    interval = row.get("rank_interval")
    if row.get("rank") is None:
        return "unranked"
    if isinstance(interval, list | tuple) and len(interval) == 2 and None not in interval:
        return str(interval[0]) if interval[0] == interval[1] else f"{interval[0]}\u2013{interval[1]}"
    return str(row["rank"])


def forest_plot(rows: Sequence[dict[str, Any]], metric: str, axis_label: str) -> str:
    """Entries with a ``metric`` score, best first, each with its 95 % CI and rank interval."""
    shown = sorted((r for r in rows if _mean(r, metric) is not None), key=lambda r: -(_mean(r, metric) or 0.0))
    if not shown:
        return ""
    width, height, body = _forest(shown, metric, axis_label)
    return svg(width, height, f"{axis_label}: each entry's mean and 95% CI, best first", body)


# ---------------------------------------------------------------- score versus size


def _dodged(values: Sequence[float]) -> list[float]:
    """log10 sizes, entries of equal size moved apart a little so their bars do not overlap."""
    groups: dict[float, list[int]] = {}
    for i, v in enumerate(values):
        groups.setdefault(v, []).append(i)
    out = list(values)
    for members in groups.values():
        for j, i in enumerate(members):
            out[i] = values[i] + (j - (len(members) - 1) / 2) * 0.035
    return out


def _size(rows: list[dict[str, Any]], metric: str, axis_label: str) -> tuple[float, float, list[str]]:
    k = len(rows)
    names = [short(r.get("model_name"), 40) for r in rows]
    left, top, plot_width = 64.0, 34.0, 400.0
    plot_height = max(240.0, 15.0 * k)
    right_edge = left + plot_width
    width = max(760.0, right_edge + 30 + max(text_width(n, FONT - 1) for n in names) + 10)
    bottom = top + plot_height
    logs = _dodged([math.log10(r["parameters"]) for r in rows])
    xs = [10**v for v in logs]
    ys = [_mean(r, metric) or 0.0 for r in rows]
    x_scale = Scale(min(xs) / 1.6, max(xs) * 1.6, left, right_edge, log=True)
    low, high = padded([b for r in rows for b in _bounds(r, metric)])
    y_scale = Scale(low, high, bottom, top)
    x_ticks = log_ticks(min(xs) / 1.6, max(xs) * 1.6)
    body = axis_x(x_scale, x_ticks, [size_label(t) for t in x_ticks], top, bottom)
    y_ticks = nice_ticks(low, high, 6)
    for t, label in zip(y_ticks, tick_labels(y_ticks), strict=True):
        y = y_scale(t)
        body += [line(left, y, right_edge, y, "#ececec", 0.8), line(left - 4, y, left, y, "#444444", 0.8)]
        body.append(text(left - 7, y, label, anchor="end"))
    body.append(line(left, top, left, bottom, "#444444", 0.8))
    body.append(text((left + right_edge) / 2, bottom + 32, "parameters (log scale)", anchor="middle"))
    body.append(text(16, (top + bottom) / 2, axis_label, anchor="middle", rotate=-90))
    fractions = [(y_scale(y) - bottom) / (top - bottom) for y in ys]  # 0 at the bottom, 1 at the top
    label_at = spread(fractions, 15.0 / plot_height, 0.0, 1.0)
    for r, name, x, y, at in zip(rows, names, xs, ys, label_at, strict=True):
        colour, shape, _ = style_of(r)
        lo, hi = _bounds(r, metric)
        px, py, ly = x_scale(x), y_scale(y), bottom - at * plot_height
        parts = [
            line(px, y_scale(lo), px, y_scale(hi), colour, 1.2),
            line(px - 3, y_scale(lo), px + 3, y_scale(lo), colour, 1.2),
            line(px - 3, y_scale(hi), px + 3, y_scale(hi), colour, 1.2),
            line(px, py, right_edge + 24, ly, colour, 0.6),
            mark(shape, px, py, colour),
            text(right_edge + 28, ly, name, size=FONT - 1),
        ]
        size = size_label(float(r["parameters"]))
        body.append(titled(f"{r.get('model_name')} ({size} parameters): {_interval_text(r, metric)}", parts))
    body += _legend(rows, left, 14)
    return width, bottom + 46, body


def size_plot(rows: Sequence[dict[str, Any]], metric: str, axis_label: str) -> str:
    """Score versus parameter count, for the entries that report one."""
    shown = [
        r
        for r in rows
        if _mean(r, metric) is not None
        and isinstance(r.get("parameters"), int | float)
        and not isinstance(r.get("parameters"), bool)
        and math.isfinite(r["parameters"])
        and r["parameters"] > 0
    ]
    if not shown:
        return ""
    width, height, body = _size(shown, metric, axis_label)
    return svg(width, height, f"{axis_label} versus model size", body)


# ---------------------------------------------------------------- pairwise differences


def _differences(
    rows: list[dict[str, Any]], cells: dict[tuple[str, str], dict[str, Any]]
) -> list[list[tuple[float, bool] | None]]:
    """Row minus column for every two entries (None on the diagonal and where no pair was compared)."""
    out: list[list[tuple[float, bool] | None]] = []
    for a in rows:
        line_of: list[tuple[float, bool] | None] = []
        for b in rows:
            pair, sign = cells.get((a["id"], b["id"])), 1.0
            if pair is None:
                pair, sign = cells.get((b["id"], a["id"])), -1.0
            if pair is None or a is b:
                line_of.append(None)
                continue
            value = _finite_or(pair.get("difference"), math.nan)
            line_of.append((sign * value, bool(pair.get("significant"))) if math.isfinite(value) else None)
        out.append(line_of)
    return out


def _pairwise(
    rows: list[dict[str, Any]], cells: dict[tuple[str, str], dict[str, Any]], axis_label: str
) -> tuple[float, float, list[str]]:
    k = len(rows)
    diff = _differences(rows, cells)
    vmax = max((abs(d[0]) for row in diff for d in row if d is not None), default=0.0) or 1.0
    cell = 36.0 if k <= 12 else max(11.0, 560.0 / k)
    font = FONT - 1 if k <= 12 else max(6.0, FONT - 1 - k / 12)
    names = [short(r.get("model_name"), 30) for r in rows]
    room = max(text_width(n, font) for n in names) + 10
    left, top = room, 10.0
    side = k * cell
    bar_x = left + side + 24
    width = bar_x + 14 + 40 + 24
    scale_label = f"row minus column ({axis_label})"
    height = max(top + side + room, text_width(scale_label, font) + 2 * top)  # the scale's label is never cut
    body = []
    for i, (a, values) in enumerate(zip(names, diff, strict=True)):
        y = top + (i + 0.5) * cell
        body.append(text(left - 6, y, a, anchor="end", size=font))
        x = left + (i + 0.5) * cell
        body.append(text(x, top + side + 6, a, anchor="end", size=font, rotate=-90))
        for j, value in enumerate(values):
            if value is None:
                continue
            d, significant = value
            x0, y0 = left + j * cell, top + i * cell
            colour = diverging(0.5 + d / (2 * vmax))
            strong = abs(d) > 0.6 * vmax
            ink = "#ffffff" if strong else "#111111"
            parts = [f'<rect x="{num(x0)}" y="{num(y0)}" width="{num(cell)}" height="{num(cell)}" fill="{colour}"/>']
            if k <= 12:
                label = f"{d:+.2f}{'*' if significant else ''}"
                parts.append(
                    text(x0 + cell / 2, y0 + cell / 2, label, anchor="middle", size=9, fill=ink, bold=significant)
                )
            elif significant:
                parts.append(f'<circle cx="{num(x0 + cell / 2)}" cy="{num(y0 + cell / 2)}" r="1.8" fill="{ink}"/>')
            note = "significant after correction" if significant else "not significant"
            body.append(
                titled(f"{rows[i].get('model_name')} minus {rows[j].get('model_name')}: {d:+.3f} ({note})", parts)
            )
    body += colour_bar(bar_x, top + side * 0.15, side * 0.7, vmax, "pairs-scale", size=font)
    body.append(text(width - 8, height / 2, scale_label, anchor="middle", rotate=90, size=font))
    return width, height, body


def pairwise_plot(rows: Sequence[dict[str, Any]], pairwise: Sequence[dict[str, Any]], axis_label: str) -> str:
    """The paired differences of the ranked entries (in board order); ``*`` or a dot marks a
    difference that is significant after the board's correction."""
    cells = {(p["a"], p["b"]): p for p in pairwise if isinstance(p, dict) and "a" in p and "b" in p}
    in_pairs = {i for pair in cells for i in pair}
    shown = [r for r in rows if r.get("id") in in_pairs]
    if len(shown) < 2:
        return ""
    width, height, body = _pairwise(shown, cells, axis_label)
    return svg(width, height, f"paired differences in {axis_label} between entries", body)


def draw_charts(
    rows: Sequence[dict[str, Any]], pairwise: Sequence[dict[str, Any]], metric: str, label: str
) -> dict[str, str]:
    """The index page's three charts as SVG, by name (a chart with nothing to show is ``""``).
    A build draws them once the entries are ranked, before the bias diagnostics add their
    fields to the rows (a few milliseconds for a board of 50)."""
    return {
        "forest": forest_plot(rows, metric, label),
        "pairwise": pairwise_plot(rows, pairwise, metric),
        "size": size_plot(rows, metric, label),
    }
