"""The colours and marks every chart uses, so that a condition looks the same on the board, in
the study's figures and in the audit's: zero-shot a blue circle, fine-tuned a green diamond, a
reference anchor a grey star, anything else an orange square. Colour is never the only cue: each
look pairs a colour with a marker shape (readers who cannot tell the colours apart, and print).
"""

from __future__ import annotations

MARKERS = {  # condition -> (colour, marker, legend label)
    "zero-shot": ("#2f64c9", "o", "zero-shot"),
    "fine-tuned": ("#18804a", "D", "fine-tuned"),
    "anchor": ("#6b6b6b", "*", "reference anchor"),
}
OTHER = ("#a35f00", "s", "other")
GAIN = ("#5a6270", "s", "gain")  # a gain is neither condition: grey squares, beside the blue and green
INK = "#222222"  # text
AXIS = "#444444"  # axis lines and ticks
GRID = "#e4e4e4"  # grid lines

# Further series (the audit's judges) after a first one: the board's looks in turn, then more
# colour-and-shape pairs, each distinct from the ones before it.
SERIES = (
    MARKERS["zero-shot"][:2],
    MARKERS["fine-tuned"][:2],
    OTHER[:2],
    ("#8e3fb0", "o"),
    ("#b8245a", "D"),
    ("#137d8c", "s"),
)


def series_style(k: int) -> tuple[str, str]:
    """The colour and marker of the ``k``-th series (cycling past the end of :data:`SERIES`)."""
    return SERIES[k % len(SERIES)]
