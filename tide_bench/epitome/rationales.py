"""Rationale spans: the words of a reply that carry a mechanism.

The authors' files give them per mechanism (``rationales``, ``|``-separated); the EPITOME
judge gives them as evidence quotes prefixed with the mechanism's code (``ER: ...``,
``IP: ...``, ``EX: ...``; judges/rubric_epitome.yaml). Agreement is measured as the paper
measures its rationale extractor: token-level F1 over the reply's tokens (T-F1) and span-level
F1 where a predicted span matches an annotated one at intersection-over-union of at least 0.5
(IOU-F1, after DeYoung et al.'s ERASER), both pooled over the replies whose annotated level is
1 or 2 (a level-0 reply has no rationale to find).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from tide_bench.epitome.mechanisms import KEYS

_TOKEN = re.compile(r"\w+|[^\w\s]")
IOU_THRESHOLD = 0.5
CODES = tuple(k.upper() for k in KEYS)  # ER, IP, EX: the prefixes of the EPITOME judge's quotes


def split_evidence(quotes: Iterable[str], codes: Sequence[str] = CODES) -> tuple[dict[str, list[str]], list[str]]:
    """``({code in lower case: [spans]}, unattributed)``: the judge's quotes by their code
    (``ER: ...``; the mechanism keys er/ip/ex for the default codes)."""
    pattern = re.compile(r"^\s*(" + "|".join(map(re.escape, codes)) + r")\s*[:\-]\s*", re.IGNORECASE)
    spans: dict[str, list[str]] = {c.lower(): [] for c in codes}
    other: list[str] = []
    for quote in quotes:
        match = pattern.match(str(quote))
        text = str(quote)[match.end() :].strip().strip('"').strip() if match else str(quote).strip()
        if match and text:
            spans[match.group(1).lower()].append(text)
        elif text:
            other.append(text)
    return spans, other


def _tokens(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _TOKEN.finditer(text.lower())]


def token_mask(reply: str, spans: Sequence[str]) -> list[bool]:
    """Which tokens of ``reply`` fall inside one of ``spans`` (each found case-insensitively,
    whitespace-normalised; a span not found in the reply marks nothing)."""
    norm = " ".join(reply.split()).lower()
    tokens = _tokens(norm)
    mask = [False] * len(tokens)
    for span in spans:
        needle = " ".join(str(span).split()).lower()
        if not needle:
            continue
        at = norm.find(needle)
        while at >= 0:
            for i, (a, b) in enumerate(tokens):
                if a >= at and b <= at + len(needle):
                    mask[i] = True
            at = norm.find(needle, at + 1)
    return mask


def _runs(mask: Sequence[bool]) -> list[tuple[int, int]]:
    runs, start = [], None
    for i, on in enumerate([*mask, False]):
        if on and start is None:
            start = i
        elif not on and start is not None:
            runs.append((start, i))
            start = None
    return runs


@dataclass
class RationaleCounts:
    """Pooled counts for T-F1 and IOU-F1 over many replies."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    span_matched_pred: int = 0
    span_pred: int = 0
    span_matched_gold: int = 0
    span_gold: int = 0
    n: int = 0

    def add(self, reply: str, predicted: Sequence[str], annotated: Sequence[str]) -> None:
        pred, gold = token_mask(reply, predicted), token_mask(reply, annotated)
        self.n += 1
        self.tp += sum(p and g for p, g in zip(pred, gold, strict=True))
        self.fp += sum(p and not g for p, g in zip(pred, gold, strict=True))
        self.fn += sum(g and not p for p, g in zip(pred, gold, strict=True))
        pred_runs, gold_runs = _runs(pred), _runs(gold)
        self.span_pred += len(pred_runs)
        self.span_gold += len(gold_runs)
        self.span_matched_pred += sum(any(_iou(p, g) >= IOU_THRESHOLD for g in gold_runs) for p in pred_runs)
        self.span_matched_gold += sum(any(_iou(p, g) >= IOU_THRESHOLD for p in pred_runs) for g in gold_runs)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def token_f1(self) -> float | None:
        value = float(rationale_f1(np.array([list(self.as_dict().values())], dtype=float))["token_f1"][0])
        return value if np.isfinite(value) else None

    def iou_f1(self) -> float | None:
        value = float(rationale_f1(np.array([list(self.as_dict().values())], dtype=float))["iou_f1"][0])
        return value if np.isfinite(value) else None


COUNT_FIELDS = tuple(RationaleCounts.__dataclass_fields__)  # the columns rationale_f1 reads, in order


def rationale_f1(counts: np.ndarray) -> dict[str, np.ndarray]:
    """T-F1 and IOU-F1 of pooled counts, one row per pool (columns :data:`COUNT_FIELDS`), in
    batches (a bootstrap's resamples at once). NaN where undefined: T-F1 without any annotated
    or predicted token; IOU-F1 without any span on either side (0 when only one side has spans)."""
    c = dict(zip(COUNT_FIELDS, np.asarray(counts, dtype=float).T, strict=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        denominator = 2 * c["tp"] + c["fp"] + c["fn"]
        token = np.where(denominator > 0, 2 * c["tp"] / np.where(denominator > 0, denominator, 1), np.nan)
        precision = c["span_matched_pred"] / c["span_pred"]
        recall = c["span_matched_gold"] / c["span_gold"]
        both = (c["span_pred"] > 0) & (c["span_gold"] > 0)
        pr = precision + recall
        iou = np.where(both, np.where(pr > 0, 2 * precision * recall / np.where(pr > 0, pr, 1), 0.0), np.nan)
        iou = np.where(~both & ((c["span_pred"] > 0) | (c["span_gold"] > 0)), 0.0, iou)
    return {"token_f1": token, "iou_f1": iou}


def _iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union else 0.0
