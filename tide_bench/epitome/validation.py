"""The validation pack ``epitome``: how well a judge with the EPITOME rubric, the local scorer
and the published classifiers agree with the authors' Reddit labels, in one table.

Three kinds of rows, one set of statistics (accuracy, macro-F1, quadratic-weighted kappa per
mechanism; :mod:`.agreement`), CIs that resample seeker posts:

* a **judge**: its levels on the pack's items (:func:`pack_items` makes them: one item per pair,
  the seeker post as the message, the reply as the reply to rate, the seeker post as the
  cluster) against the labels, with every item the judge could not score counted, never
  dropped: it is taken as the level furthest from the label (a miss in every statistic) and
  the number of such items is reported; plus rationale agreement (token F1, IOU F1) of its
  quotes with the annotated spans;
* the **local scorer**: its grouped 5-fold cross-validated figures, read from its model card
  (the scorer never sees a held-out fold, so these are its out-of-sample numbers);
* the **published** figures, from ``pack.yaml`` with the status of each.

The pack is data (``pack.yaml``); the judge-validation mechanism (``tide_bench/validation/``)
runs the judge and calls :func:`judge_rows`; this module reads no judge files itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from tide_bench.core.stats import Estimate
from tide_bench.data.schema import TideItem, make_item_id
from tide_bench.epitome.agreement import STATISTICS, agreement
from tide_bench.epitome.corpus import EpitomeCorpus
from tide_bench.epitome.mechanisms import KEYS, MECHANISMS
from tide_bench.epitome.rationales import RationaleCounts, split_evidence

PACK_FILE = Path(__file__).with_name("pack.yaml")
UNSCORED = -1  # a judged item without a level (counted as a miss)


@lru_cache(maxsize=1)
def pack() -> dict[str, Any]:
    return yaml.safe_load(PACK_FILE.read_text(encoding="utf-8"))


def matches_pinned_release(corpus: EpitomeCorpus) -> bool:
    """Whether the user's files are byte for byte the release the pack pins (its revision)."""
    pinned = {f["mechanism"]: f["sha256"] for f in pack()["files"] if f.get("role") == "labels"}
    return all(corpus.files.get(key) == digest for key, digest in pinned.items())


def pack_items(corpus: EpitomeCorpus) -> list[TideItem]:
    """One item per labelled pair. The reply to rate travels as ``reference_reply`` (a pack run
    answers every item with it); duplicated pairs get ``~2``, ``~3`` suffixes so ids stay unique;
    ``persona_id`` is the seeker post, so every per-persona interval resamples posts."""
    seen: Counter = Counter()
    items = []
    for pair in corpus.pairs:
        seen[(pair.sp_id, pair.rp_id)] += 1
        k = seen[(pair.sp_id, pair.rp_id)]
        conversation = pair.rp_id if k == 1 else f"{pair.rp_id}~{k}"
        items.append(
            TideItem(
                item_id=make_item_id(pair.sp_id, conversation, 1),
                persona_id=pair.sp_id,
                conversation_id=conversation,
                turn=1,
                scenario=None,
                split="test",
                client_utterance=pair.seeker_post,
                reference_reply=pair.response_post,
                persona={"dataset": "EPITOME Reddit", "levels": dict(pair.levels)},
            )
        )
    return items


def _row(name: str, truth: Mapping[str, list[int]], predicted: Mapping[str, list[int]], clusters: list[str]) -> dict:
    row: dict[str, Any] = {"name": name, "kind": "judge"}
    for key in KEYS:
        t = np.asarray(truth[key])
        p = np.asarray(predicted[key])
        scored = p != UNSCORED
        # an unscored item can never agree: it is scored as the level furthest from the truth
        filled = np.where(scored, p, np.where(t == 0, 2, 0))
        result = agreement(t, filled, clusters)
        row[key] = {s: result[s].as_dict() for s in STATISTICS} | {
            "n": result["n"],
            "n_unscored": int((~scored).sum()),
            "confusion": result["confusion"],
        }
    return row


def judge_rows(
    corpus: EpitomeCorpus,
    judgments: Mapping[str, Mapping[str, Any]],
    name: str,
) -> dict[str, Any]:
    """A judge's row. ``judgments`` maps pack item ids to judgment records as the judge writes
    them (``status``, ``scores`` by rubric factor, ``evidence``); an item with no record or an
    unscored one counts against the judge (see the module docstring)."""
    items = pack_items(corpus)
    truth = {k: [p.levels[k] for p in corpus.pairs] for k in KEYS}
    predicted: dict[str, list[int]] = {k: [] for k in KEYS}
    counts = {k: RationaleCounts() for k in KEYS}
    unattributed = 0
    for item, pair in zip(items, corpus.pairs, strict=True):
        record = judgments.get(item.item_id) or {}
        scores = record.get("scores") if record.get("status") == "scored" else None
        for m in MECHANISMS:
            value = (scores or {}).get(m.factor)
            predicted[m.key].append(int(value) if isinstance(value, int) and 0 <= value <= 2 else UNSCORED)
        if scores:
            spans, other = split_evidence(record.get("evidence") or [])
            unattributed += len(other)
            for key in KEYS:
                if pair.levels[key] > 0:
                    counts[key].add(pair.response_post, spans[key], pair.rationales[key])
    row = _row(name, truth, predicted, [p.sp_id for p in corpus.pairs])
    for key in KEYS:
        row[key]["rationale_token_f1"] = counts[key].token_f1()
        row[key]["rationale_iou_f1"] = counts[key].iou_f1()
    row["unattributed_quotes"] = unattributed
    row["n_items"] = len(items)
    row["n_judged"] = sum(1 for i in items if i.item_id in judgments)
    return row


def scorer_row(card: Mapping[str, Any], name: str = "local EPITOME scorer (grouped 5-fold CV)") -> dict[str, Any]:
    """The local scorer's cross-validated figures from its card (and its TF-IDF baseline's)."""
    cv = card.get("cv")
    if not cv:
        return {"name": name, "kind": "local", "note": "the card has no cross-validation (trained with --folds 0)"}
    row: dict[str, Any] = {"name": name, "kind": "local", "data_sha256": (card.get("data") or {}).get("sha256")}
    for key in KEYS:
        row[key] = {
            s: Estimate(cv[s][key], *cv["ci"][s][key], n=(card.get("data") or {}).get("n_pairs")).as_dict()
            for s in STATISTICS
        }
    return row


def baseline_row(card: Mapping[str, Any]) -> dict[str, Any] | None:
    base = card.get("baseline")
    if not base:
        return None
    return scorer_row({"cv": base, "data": card.get("data")}, "TF-IDF + logistic regression (same folds)") | {
        "kind": "baseline"
    }


def published_rows() -> list[dict[str, Any]]:
    rows = []
    for ref in pack()["reference_rows"]:
        row: dict[str, Any] = {"name": ref["name"], "kind": "published", "status": " ".join(ref["status"].split())}
        for key in KEYS:
            row[key] = {
                s: {"value": ref[s][key], "ci_low": None, "ci_high": None} if s in ref else {"value": None}
                for s in STATISTICS
            }
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The side-by-side Markdown table: macro-F1 (CI) and accuracy per mechanism."""
    head = "| | " + " | ".join(f"{m.name} macro-F1 | acc." for m in MECHANISMS) + " |"
    lines = [head, "|---|" + "---:|---:|" * len(MECHANISMS)]
    for row in rows:
        cells = []
        for key in KEYS:
            block = row.get(key) or {}
            f1, acc = block.get("macro_f1") or {}, block.get("accuracy") or {}
            cells.append(_fmt(f1))
            cells.append(_fmt(acc, ci=False))
        lines.append(f"| {row['name']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fmt(block: Mapping[str, Any], ci: bool = True) -> str:
    value = block.get("value")
    if value is None:
        return "n/a"
    if ci and block.get("ci_low") is not None:
        return f"{value:.3f} [{block['ci_low']:.3f}, {block['ci_high']:.3f}]"
    return f"{value:.3f}"
