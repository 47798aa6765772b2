"""The board's charts, drawn with matplotlib and inlined as SVG (no script, no network).

* :func:`forest_plot`: each entry's score with its 95 % CI, best first, the rank interval beside
  it, zero-shot / fine-tuned / reference anchor told apart by colour *and* marker shape;
* :func:`size_plot`: score versus parameter count on a log axis with round ticks (100M, 200M,
  1B...), a legend, entries of the same size dodged apart, and labels in a column beside the
  axes, spaced so that no two overlap, each joined to its point by a thin line;
* :func:`pairwise_plot`: the paired difference of every two ranked entries (row minus column),
  the significant ones (after the board's multiple-testing correction) marked.

Why matplotlib: it places ticks, legends and labels properly (the hand-drawn SVG it replaces
had ticks at 2.07/2.58 and overlapping bars), it is already a dependency, and its SVG output
with ``svg.fonttype: none`` keeps text as text (small, searchable, escaped by its writer).
Model names are drawn with ``parse_math=False``: a ``$`` in a name is a dollar sign.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Sequence
from typing import Any

from tide_bench.leaderboard.scoring.scores import REFERENCE_ANCHOR
from tide_bench.leaderboard.site.html import esc

MARKERS = {  # condition -> (colour, marker, legend label)
    "zero-shot": ("#2f64c9", "o", "zero-shot"),
    "fine-tuned": ("#18804a", "D", "fine-tuned"),
    "anchor": ("#6b6b6b", "*", "reference anchor"),
}
OTHER = ("#a35f00", "s", "other")
NAME_CHARS = 44
_RC = {
    "svg.fonttype": "none",
    "font.size": 9,
    "font.family": "sans-serif",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
}


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
    block, mean = row[metric], _mean(row, metric)
    low, high = block.get("ci_low"), block.get("ci_high")
    return (mean if low is None else float(low)), (mean if high is None else float(high))  # type: ignore[return-value]


def preload() -> None:
    """Import what drawing needs (a third of a second), so that a build can do it while its
    workers prepare the entries."""
    import matplotlib.backends.backend_svg
    import matplotlib.figure
    import matplotlib.ticker  # noqa: F401


def _figure(width: float, height: float, constrained: bool = False) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained" if constrained else None)


def _svg(fig: Any, prefix: str, label: str) -> str:
    """The figure as inline SVG: no XML prolog or metadata, ids prefixed (several charts share a
    page), sized to scale down with its box."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    text = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', text)
    text = text.replace("url(#", f"url(#{prefix}-").replace('xlink:href="#', f'href="#{prefix}-')
    text = text.replace("xlink:href=", "href=")
    # Inside HTML the parser puts <svg> in its namespace and SVG 2 takes a plain href: no namespace
    # URLs needed; matplotlib's global "*{...}" style is scoped to the charts.
    text = re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", text).replace('<style type="text/css">*{', "<style>svg.chart *{")
    width = re.search(r'width="([\d.]+)pt"', text)
    px = round(float(width.group(1)) * 4 / 3) if width else 720
    text = re.sub(r'<svg ([^>]*?)width="[\d.]+pt" height="[\d.]+pt"', r"<svg \1", text, count=1)
    return text.replace(
        "<svg ", f'<svg class="chart" role="img" aria-label="{esc(label)}" style="max-width:{px}px" ', 1
    )


def _draw(make: Any, prefix: str, label: str, *args: Any) -> str:
    import matplotlib

    with matplotlib.rc_context(_RC | {"svg.hashsalt": prefix}), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a glyph missing from the layout font (the browser draws the text)
        fig = make(*args)
        return _svg(fig, prefix, label) if fig is not None else ""


def _legend(ax: Any, rows: Sequence[dict[str, Any]], **kw: Any) -> None:
    from matplotlib.lines import Line2D

    seen: dict[str, tuple[str, str, str]] = {}
    for r in rows:
        colour, marker, name = style_of(r)
        seen.setdefault(name, (colour, marker, name))
    handles = [
        Line2D([], [], color=c, marker=m, linestyle="none", markersize=7 if m == "*" else 5, label=n)
        for c, m, n in seen.values()
    ]
    legend = ax.legend(handles=handles, frameon=False, **kw)
    for text in legend.get_texts():
        text.set_parse_math(False)


# ---------------------------------------------------------------- forest plot


def _forest(rows: list[dict[str, Any]], metric: str, axis_label: str) -> Any:
    from matplotlib.ticker import MaxNLocator

    k = len(rows)
    fig = _figure(7.4, max(2.4, 0.9 + 0.27 * k), constrained=True)
    ax = fig.add_subplot()
    ys = list(range(k - 1, -1, -1))
    # One errorbar call per look (colour, marker, filled), not per entry: the same marks with a
    # fraction of the artists, which is most of the time matplotlib takes to draw 50 entries.
    groups: dict[tuple[str, str, bool], list[tuple[float, float, float, float]]] = {}
    for r, y in zip(rows, ys, strict=True):
        colour, marker, _ = style_of(r)
        mean = _mean(r, metric)
        assert mean is not None  # forest_plot keeps only rows with a score
        low, high = _bounds(r, metric)
        unranked = r.get("rank") is None and not is_anchor(r)
        groups.setdefault((colour, marker, unranked), []).append((mean, y, mean - low, high - mean))
        if is_anchor(r):
            ax.axvline(mean, color=colour, linestyle=":", linewidth=1)
    for (colour, marker, unranked), points in groups.items():
        means, at, below, above = (list(v) for v in zip(*points, strict=True))
        ax.errorbar(
            means,
            at,
            xerr=[below, above],
            fmt=marker,
            color=colour,
            ecolor=colour,
            elinewidth=1.4,
            capsize=2.5,
            markersize=8 if marker == "*" else 5,
            markerfacecolor="white" if unranked else colour,
        )
    ax.set_yticks(ys, [short(r.get("model_name")) for r in rows], parse_math=False)
    ax.set_ylim(-0.7, k - 0.3)
    ax.set_xlabel(axis_label, parse_math=False)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=7, steps=[1, 2, 2.5, 5, 10]))
    ax.grid(axis="x", color="#e4e4e4", linewidth=0.8)
    ax.set_axisbelow(True)
    right = ax.twinx()
    right.set_ylim(ax.get_ylim())
    right.set_yticks(ys, [_rank_text(r) for r in rows], parse_math=False)
    right.tick_params(length=0)
    right.spines["right"].set_visible(False)
    right.set_ylabel("rank (95% interval)", parse_math=False)
    _legend(ax, rows, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=3, borderaxespad=0.2)
    return fig


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
    return _draw(
        _forest, "forest", f"{axis_label}: each entry's mean and 95% CI, best first", shown, metric, axis_label
    )


# ---------------------------------------------------------------- score versus size


def _size_label(value: float, _pos: Any = None) -> str:
    if value >= 1e9:
        return f"{value / 1e9:g}B"
    return f"{value / 1e6:g}M" if value >= 1e6 else f"{value / 1e3:g}K"


def spread(targets: Sequence[float], gap: float, low: float = 0.0, high: float = 1.0) -> list[float]:
    """Positions as close as possible to ``targets`` (same order) with at least ``gap`` between
    neighbours, inside [low, high] when they fit (labels beside a chart that never overlap)."""
    order = sorted(range(len(targets)), key=lambda i: targets[i])
    pos = [targets[i] for i in order]
    for i in range(1, len(pos)):
        pos[i] = max(pos[i], pos[i - 1] + gap)
    overflow = pos[-1] - high if pos else 0.0
    if overflow > 0:
        pos[-1] -= overflow
        for i in range(len(pos) - 2, -1, -1):
            pos[i] = min(pos[i], pos[i + 1] - gap)
    if pos and pos[0] < low:  # too many to fit: keep the gap, start at the bottom
        pos = [low + i * gap for i in range(len(pos))]
    out = [0.0] * len(pos)
    for rank, i in enumerate(order):
        out[i] = pos[rank]
    return out


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


def _size(rows: list[dict[str, Any]], metric: str, axis_label: str) -> Any:
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    k = len(rows)
    fig = _figure(8.0, max(3.8, 1.4 + 0.19 * k))
    ax = fig.add_axes((0.09, 0.13, 0.5, 0.74))
    logs = _dodged([math.log10(r["parameters"]) for r in rows])
    xs = [10**v for v in logs]
    ys = [_mean(r, metric) or 0.0 for r in rows]
    for r, x, y in zip(rows, xs, ys, strict=True):
        colour, marker, _ = style_of(r)
        low, high = _bounds(r, metric)
        ax.errorbar(
            [x],
            [y],
            yerr=[[y - low], [high - y]],
            fmt=marker,
            color=colour,
            elinewidth=1.2,
            capsize=2.5,
            markersize=8 if marker == "*" else 5,
        )
    ax.set_xscale("log")
    lo, hi = min(xs), max(xs)
    ax.set_xlim(lo / 1.6, hi * 1.6)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
    ax.set_xlabel("parameters (log scale)")
    ax.set_ylabel(axis_label, parse_math=False)
    ax.grid(color="#ececec", linewidth=0.8)
    ax.set_axisbelow(True)
    fig.canvas.draw()  # final limits, so labels can be placed in axes fractions
    y0, y1 = ax.get_ylim()
    fractions = [(y - y0) / (y1 - y0) if y1 > y0 else 0.5 for y in ys]
    axes_height_pt = ax.get_window_extent().height * 72 / fig.dpi
    gap = 1.35 * 8 / axes_height_pt
    for r, x, y, ly in zip(rows, xs, ys, spread(fractions, gap, 0.0, 1.0), strict=True):
        colour = style_of(r)[0]
        ax.annotate(
            short(r.get("model_name"), 40),
            xy=(x, y),
            xycoords="data",
            xytext=(1.04, ly),
            textcoords="axes fraction",
            va="center",
            fontsize=8,
            color="#222222",
            annotation_clip=False,
            parse_math=False,
            arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.6, "shrinkA": 0, "shrinkB": 3},
        )
    _legend(ax, rows, loc="lower left", bbox_to_anchor=(0, 1.01), ncol=3, borderaxespad=0.2)
    return fig


def size_plot(rows: Sequence[dict[str, Any]], metric: str, axis_label: str) -> str:
    """Score versus parameter count, for the entries that report one."""
    shown = [
        r
        for r in rows
        if _mean(r, metric) is not None
        and isinstance(r.get("parameters"), int | float)
        and not isinstance(r.get("parameters"), bool)
        and r["parameters"] > 0
    ]
    if not shown:
        return ""
    return _draw(_size, "size", f"{axis_label} versus model size", shown, metric, axis_label)


# ---------------------------------------------------------------- pairwise differences


def _pairwise(rows: list[dict[str, Any]], cells: dict[tuple[str, str], dict[str, Any]], axis_label: str) -> Any:
    import numpy as np

    k = len(rows)
    ids = [r["id"] for r in rows]
    diff = np.full((k, k), np.nan)
    significant = np.zeros((k, k), dtype=bool)
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            pair = cells.get((a, b))
            sign = 1.0
            if pair is None:
                pair, sign = cells.get((b, a)), -1.0
            if pair is not None and pair.get("difference") is not None:
                diff[i, j] = sign * pair["difference"]
                significant[i, j] = bool(pair.get("significant"))
    finite = diff[np.isfinite(diff)]
    vmax = float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0
    cell = 0.42 if k <= 12 else max(0.16, 5.5 / k)
    side = 1.6 + cell * k
    fig = _figure(side + 3.0, side + 0.8, constrained=True)
    ax = fig.add_subplot()
    image = ax.imshow(diff, cmap="RdBu", vmin=-vmax, vmax=vmax, interpolation="nearest", aspect="equal")
    names = [short(r.get("model_name"), 30) for r in rows]
    font = 8 if k <= 12 else max(4.5, 8 - k / 12)
    ax.set_xticks(range(k), names, rotation=90, fontsize=font, parse_math=False)
    ax.set_yticks(range(k), names, fontsize=font, parse_math=False)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    for i in range(k):
        for j in range(k):
            if i == j or not np.isfinite(diff[i, j]):
                continue
            strong = abs(diff[i, j]) > 0.6 * vmax
            if k <= 12:
                ax.text(
                    j,
                    i,
                    f"{diff[i, j]:+.2f}{'*' if significant[i, j] else ''}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if strong else "#111111",
                    fontweight="bold" if significant[i, j] else "normal",
                )
            elif significant[i, j]:
                ax.plot(j, i, marker="o", markersize=2.2, color="white" if strong else "#111111")
    bar = fig.colorbar(image, ax=ax, shrink=0.7)
    bar.set_label(f"row minus column ({axis_label})", parse_math=False)
    return fig


def pairwise_plot(rows: Sequence[dict[str, Any]], pairwise: Sequence[dict[str, Any]], axis_label: str) -> str:
    """The paired differences of the ranked entries (in board order); ``*`` or a dot marks a
    difference that is significant after the board's correction."""
    cells = {(p["a"], p["b"]): p for p in pairwise if isinstance(p, dict) and "a" in p and "b" in p}
    in_pairs = {i for pair in cells for i in pair}
    shown = [r for r in rows if r.get("id") in in_pairs]
    if len(shown) < 2:
        return ""
    return _draw(_pairwise, "pairs", f"paired differences in {axis_label} between entries", shown, cells, axis_label)
