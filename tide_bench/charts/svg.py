"""The pieces every chart of tide-bench is drawn with, as SVG text: axis ticks at round
numbers, text widths for margins, marks and a diverging colour scale (the board's charts, the
study's figures, the audit's figure and the fine-tuning card's loss curve).

Why by hand and not with a plotting library: the charts of a board of 50 took matplotlib about
a second of CPU (its import half of it), a tenth of a whole build, for three small figures. What
a plotting library did for them is here, each piece tested on its own: ticks at 1, 2, 2.5 or
5 x 10^k (:func:`nice_ticks`; the earlier hand-drawn charts had ticks at 2.07 and 2.58), ticks
at 1-2-5 on a log axis (:func:`log_ticks`), margins from the width the labels will take
(:func:`text_width`, an estimate for a sans-serif face that errs wide) and labels set apart so
that none overlap (:func:`spread`). Every text is escaped (:func:`esc`).
"""

from __future__ import annotations

import html
import math
import sys
import unicodedata
from collections.abc import Sequence

FONT = 12  # px, the charts' text


def esc(value: str) -> str:
    """``value`` as SVG (XML) text or attribute content: ``& < > " '`` escaped."""
    return html.escape(value, quote=True)


# Advance widths of a sans-serif face (Helvetica, Arial, DejaVu Sans), in em, rounded up.
_NARROW = frozenset("ijl|!.,:;'`")
_THIN = frozenset("fIrt()[]{}/\\- ")
_WIDE = frozenset("mwMW@%")
_DIGITS = frozenset("0123456789")


def char_width(ch: str) -> float:
    """One character's width in em (wide East Asian characters take a full em)."""
    if ch in _NARROW:
        return 0.28
    if ch in _THIN:
        return 0.36
    if ch in _WIDE:
        return 0.9
    if ch in _DIGITS:
        return 0.58
    if ch.isascii():
        return 0.7 if ch.isupper() else 0.56
    return 1.0 if unicodedata.east_asian_width(ch) in ("W", "F") else 0.62


def text_width(text: str, size: float = FONT) -> float:
    """The width ``text`` takes at ``size`` px, estimated a little wide (a margin that is too
    small cuts a name; one too large only leaves space)."""
    return sum(map(char_width, text)) * size


def num(value: float) -> str:
    """A coordinate: one decimal is finer than a pixel."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def nice_ticks(low: float, high: float, bins: int) -> list[float]:
    """At most ``bins + 1`` ticks inside [low, high], a step of 1, 2, 2.5 or 5 times a power of
    ten (the smallest such step that fits), each a whole multiple of the step."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else []
    raw = (high / 2 - low / 2) * (2 / max(1, bins))  # in halves: no overflow on any finite range
    if not raw > 0:  # a span too small for a float step
        return [low]
    scale = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0, 20.0):
        step = factor * scale
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
        if last - first <= bins:
            return [_clean(k * step) for k in range(first, last + 1)]
    return [low, high]  # not reached: a step of 20 x scale always fits


def _clean(value: float) -> float:
    """``value`` without the float noise of ``k * step`` (0.30000000000000004 -> 0.3)."""
    return 0.0 if value == 0 else round(value, 12 - math.floor(math.log10(abs(value))))


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """The ticks with as many decimals as their step needs, all the same (2.50, 2.75, 3.00)."""
    if not ticks:
        return []
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else max(1.0, abs(ticks[0]))
    decimals = next(
        (d for d in range(16) if all(abs(round(t, d) - t) <= step * 1e-6 for t in ticks)),
        15,
    )
    return [f"{t:.{decimals}f}" for t in ticks]


def log_ticks(low: float, high: float, most: int = 9) -> list[float]:
    """Ticks at 1, 2 and 5 times a power of ten inside [low, high] (> 0); at powers of ten alone,
    then every other one, where those would be more than ``most``."""
    if not (0 < low < high):
        return []
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for mantissas, every in (((1, 2, 5), 1), ((1,), 1), ((1,), 2), ((1,), 3)):
        ticks = [
            float(m * 10**e)
            for e in range(first, last + 1)
            if e % every == 0
            for m in mantissas
            if low <= m * 10**e <= high
        ]
        if len(ticks) <= most:
            return ticks
    return ticks


class Scale:
    """A linear (or log10) map from data to pixels."""

    def __init__(self, low: float, high: float, start: float, end: float, *, log: bool = False) -> None:
        self.log = log
        self.low, self.high = (math.log10(low), math.log10(high)) if log else (low, high)
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        v = math.log10(value) if self.log else value
        half = self.high / 2 - self.low / 2  # in halves: no overflow on any finite range
        return self.start + (self.end - self.start) * ((v / 2 - self.low / 2) / half if half else 0.5)


def padded(values: Sequence[float], fraction: float = 0.05) -> tuple[float, float]:
    """The range of ``values`` widened by ``fraction`` of its span at each end (by 0.5, or a
    millionth of their size, when all are equal as far as an axis can tell), as a plotting
    library's margins do. Computed in halves: no float overflows, whatever the values."""
    low, high = min(values), max(values)
    size = max(1.0, abs(low), abs(high))
    half = high / 2 - low / 2
    pad = max(0.5, size * 1e-6) if half <= 5e-10 * size else half * 2 * fraction
    return max(low - pad, -sys.float_info.max), min(high + pad, sys.float_info.max)


def text(
    x: float,
    y: float,
    content: str,
    *,
    anchor: str = "start",
    size: float = FONT,
    fill: str = "#222222",
    rotate: float | None = None,
    bold: bool = False,
) -> str:
    """One line of text, vertically centred on ``y``."""
    extra = f' font-size="{num(size)}"' if size != FONT else ""
    extra += f' fill="{fill}"' if fill != "#222222" else ""
    extra += ' font-weight="bold"' if bold else ""
    if rotate is not None:
        extra += f' transform="rotate({num(rotate)} {num(x)} {num(y)})"'
    return f'<text x="{num(x)}" y="{num(y)}" dy="0.35em" text-anchor="{anchor}"{extra}>{esc(content)}</text>'


def line(x1: float, y1: float, x2: float, y2: float, colour: str, width: float = 1.0, dash: str = "") -> str:
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{colour}" '
        f'stroke-width="{num(width) if width != int(width) else int(width)}"{extra}/>'
    )


def _star(x: float, y: float, outer: float) -> list[tuple[float, float]]:
    inner = outer * 0.4
    return [
        (x + r * math.sin(math.pi * k / 5), y - r * math.cos(math.pi * k / 5))
        for k in range(10)
        for r in ((outer if k % 2 == 0 else inner),)
    ]


def mark(shape: str, x: float, y: float, colour: str, *, filled: bool = True) -> str:
    """A data point: ``o`` circle, ``D`` diamond, ``*`` star, ``s`` square (matplotlib's names);
    ``filled=False`` draws it hollow (white inside)."""
    paint = f'fill="{colour if filled else "#ffffff"}" stroke="{colour}" stroke-width="1.2"'
    if shape == "o":
        return f'<circle cx="{num(x)}" cy="{num(y)}" r="4.5" {paint}/>'
    if shape == "s":
        return f'<rect x="{num(x - 4)}" y="{num(y - 4)}" width="8" height="8" {paint}/>'
    points = _star(x, y, 7.5) if shape == "*" else [(x, y - 5.5), (x + 4.5, y), (x, y + 5.5), (x - 4.5, y)]
    return f'<polygon points="{" ".join(f"{num(px)},{num(py)}" for px, py in points)}" {paint}/>'


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


# ColorBrewer's RdBu, red (low) to blue (high), as matplotlib's "RdBu".
_RDBU = (
    "#67001f",
    "#b2182b",
    "#d6604d",
    "#f4a582",
    "#fddbc7",
    "#f7f7f7",
    "#d1e5f0",
    "#92c5de",
    "#4393c3",
    "#2166ac",
    "#053061",
)


def diverging(fraction: float) -> str:
    """The colour at ``fraction`` (0 red, 0.5 white, 1 blue) of the red-blue scale."""
    f = min(1.0, max(0.0, fraction)) * (len(_RDBU) - 1)
    i = min(int(f), len(_RDBU) - 2)
    a, b = _RDBU[i], _RDBU[i + 1]
    t = f - i
    mixed = (round(int(a[k : k + 2], 16) * (1 - t) + int(b[k : k + 2], 16) * t) for k in (1, 3, 5))
    return "#" + "".join(f"{c:02x}" for c in mixed)


def diverging_gradient(gradient_id: str) -> str:
    """The scale as a vertical ``linearGradient`` (bottom to top: red to blue)."""
    last = len(_RDBU) - 1
    stops = "".join(f'<stop offset="{k / last:.2f}" stop-color="{c}"/>' for k, c in enumerate(_RDBU))
    return f'<defs><linearGradient id="{gradient_id}" x1="0" y1="1" x2="0" y2="0">{stops}</linearGradient></defs>'


def svg(width: float, height: float, label: str, body: Sequence[str]) -> str:
    """The chart: inline SVG (no namespace URL needed inside HTML), scaled down with its box."""
    return (
        f'<svg class="chart" role="img" aria-label="{esc(label)}" style="max-width:{round(width)}px" '
        f'viewBox="0 0 {num(width)} {num(height)}" font-family="sans-serif" font-size="{FONT}">'
        + "".join(body)
        + "</svg>"
    )
