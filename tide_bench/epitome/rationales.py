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
from dataclasses import dataclass

from tide_bench.epitome.mechanisms import KEYS

_TOKEN = re.compile(r"\w+|[^\w\s]")
_CODE = re.compile(r"^\s*(ER|IP|EX)\s*[:\-]\s*", re.IGNORECASE)
IOU_THRESHOLD = 0.5


def split_evidence(quotes: Iterable[str]) -> tuple[dict[str, list[str]], list[str]]:
    """``({key: [spans]}, unattributed)``: the judge's quotes by mechanism code."""
    spans: dict[str, list[str]] = {k: [] for k in KEYS}
    other: list[str] = []
    for quote in quotes:
        match = _CODE.match(str(quote))
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

    def token_f1(self) -> float | None:
        denominator = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denominator if denominator else None

    def iou_f1(self) -> float | None:
        if not self.span_pred or not self.span_gold:
            return 0.0 if (self.span_pred or self.span_gold) else None
        precision = self.span_matched_pred / self.span_pred
        recall = self.span_matched_gold / self.span_gold
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union else 0.0
