"""What every pack adapter returns: items, human ratings and published judge ratings as arrays.

An *item* is one rated reply: one message and one reply, no persona (the item adapter,
:mod:`tide_bench.validation.items`, turns it into what a tide-bench judge reads). Ratings are
``raters x items`` matrices per dimension (NaN = not rated); a single-rater pack (one expert
consensus per reply) has one row. ``handling`` counts every value that was not used and why,
so that no rating disappears without a trace.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tide_bench.core.errors import DataError
from tide_bench.validation.manifest import Pack

MODES = ("tide", "authors")
# Raters x items cells of one dimension's matrix: a panel pack holds thousands. A file that makes
# every rating a rater of its own (a 400 KB CounselBench file of 6,000 questions each rated by a
# new id asked for 1.1 GB) is refused before the matrix is made.
MAX_CELLS = 5_000_000


def rating_matrices(dims: list[str], raters: int, items: int, path: Path) -> dict[str, np.ndarray]:
    """One NaN ``raters x items`` matrix per dimension, or a clear error when the file asks for a
    matrix no panel has."""
    if raters * items > MAX_CELLS:
        raise DataError(
            f"{raters:,} raters x {items:,} items is more than {MAX_CELLS:,} ratings per dimension: no panel rates "
            "that many (is every rating given a rater id of its own?)",
            path=path,
        )
    return {d: np.full((raters, items), np.nan) for d in dims}


@dataclass
class PackData:
    pack: Pack
    mode: str
    item_ids: list[str]
    clusters: list[str]  # per item: the unit the bootstrap resamples (a context, or the item itself)
    responders: list[str | None]  # per item: who wrote the reply (a key of the manifest's responders)
    raters: list[str]
    human: dict[str, np.ndarray]  # dimension -> raters x items
    published: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # judge -> dimension -> items
    messages: list[str | None] | None = None
    replies: list[str | None] | None = None
    handling: Counter[str] = field(default_factory=Counter)
    judge_handling: dict[str, Counter[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # dimension -> per item, the annotated words that carry it (EPITOME's rationales), for the
    # judge's quoted evidence to be compared with; None for packs without spans
    spans: dict[str, list[list[str]]] | None = None
    data_sha256: str | None = None  # the rated files' identity, where a local model must match it

    def index(self) -> dict[str, int]:
        return {item: i for i, item in enumerate(self.item_ids)}

    def reply_words(self) -> np.ndarray | None:
        """Each reply's length in words (NaN where the text is unknown), for the length-bias slope."""
        if self.replies is None:
            return None
        return np.array([len(r.split()) if isinstance(r, str) else np.nan for r in self.replies], dtype=float)


def check_mode(pack: Pack, mode: str) -> None:
    if mode not in pack.modes:
        raise DataError(
            f"pack {pack.name} has no mode {mode!r}", hint=f"modes: {', '.join(pack.modes)} (see docs/validation.md)"
        )


def scale_value(value: float, pack: Pack, mode: str, handling: Counter[str], what: str) -> float:
    """A score as the mode counts it: tide-bench keeps the pack's scale only (0 marks an unrated
    reply in MentalAlign); the authors' mode keeps every parsable number, as their code does."""
    low, high = pack.scale
    if mode == "authors" or (low <= value <= high and float(value).is_integer()):
        if not low <= value <= high:
            handling[f"{what}: kept out-of-range value {value:g} (authors' mode)"] += 1
        return float(value)
    label = "0 (unrated)" if value == 0 else f"{value:g} (out of range)"
    handling[f"{what}: dropped {label}"] += 1
    return float("nan")
