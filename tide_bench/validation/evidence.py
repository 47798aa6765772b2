"""Rationale agreement: the words a judge quotes for an attribute against the annotated ones.

For packs whose items carry annotated spans (EPITOME's rationales) and whose dimensions name
the code that starts the judge's quotes for them (``evidence_code``: ``ER: ...``), as the
EPITOME paper evaluates its rationale extractor: token-level F1 (T-F1) and span-level F1 at an
intersection-over-union of at least 0.5 (IOU-F1), over the replies whose annotated level is
above 0 (a reply without the mechanism has no rationale to find).

The quotes repeat the pack's texts, so they never leave the pack's cache: ``validation run``
computes each judgment's counts (:func:`item_counts`, numbers only) and the shareable run
folder keeps those; the report pools them (:func:`rationale_agreement`), with an interval
that resamples the pack's clusters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tide_bench.core.stats import DEFAULT_SEED, Estimate, bootstrap_weights, cluster_codes
from tide_bench.epitome.rationales import COUNT_FIELDS, RationaleCounts, rationale_f1, split_evidence
from tide_bench.validation.adapters.common import PackData

COUNTS_FIELD = "evidence_counts"  # the per-judgment field in a validation run's judgments


def _codes(data: PackData) -> dict[str, str]:
    return {d.name: d.evidence_code for d in data.pack.dimensions if d.evidence_code and d.name in data.human}


def has_spans(data: PackData) -> bool:
    return data.spans is not None and data.replies is not None and bool(_codes(data))


def item_counts(data: PackData, index: int, quotes: Sequence[Any] | None) -> dict[str, Any] | None:
    """The counts of one scored judgment of item ``index``: per dimension whose annotated level
    is above 0, the :class:`~tide_bench.epitome.rationales.RationaleCounts` fields; and how many
    quotes carried no known code. None for a pack without spans."""
    if not has_spans(data):
        return None
    assert data.spans is not None and data.replies is not None
    codes = _codes(data)
    spans, other = split_evidence([str(q) for q in quotes or []], tuple(codes.values()))
    out: dict[str, Any] = {"unattributed_quotes": len(other)}
    reply = data.replies[index] or ""
    for dim, code in codes.items():
        with np.errstate(all="ignore"):
            level = np.nanmean(data.human[dim][:, index])
        if np.isfinite(level) and level > 0:
            counts = RationaleCounts()
            counts.add(reply, spans[code.lower()], data.spans[dim][index])
            out[dim] = counts.as_dict()
    return out


def rationale_agreement(
    data: PackData,
    counts: Sequence[dict[str, Any] | None],
    dim: str,
    *,
    resamples: int,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """T-F1 and IOU-F1 for ``dim`` pooled over the items that have counts, with intervals."""
    rows = [(i, c[dim]) for i, c in enumerate(counts) if isinstance(c, dict) and isinstance(c.get(dim), dict)]
    out: dict[str, Any] = {"n": len(rows)}
    if not rows:
        out |= {s: Estimate.undefined("no scored judgment of a reply with this attribute").as_dict() for s in _STATS}
        return out
    matrix = np.array([[float(c.get(f, 0)) for f in COUNT_FIELDS] for _, c in rows])
    codes, n_clusters = cluster_codes([data.clusters[i] for i, _ in rows])
    per_cluster = np.zeros((n_clusters, len(COUNT_FIELDS)))
    np.add.at(per_cluster, codes, matrix)
    point = rationale_f1(per_cluster.sum(axis=0, keepdims=True))
    boot = rationale_f1(bootstrap_weights(n_clusters, resamples, seed) @ per_cluster)
    for name in _STATS:
        value = float(point[name][0])
        note = None if np.isfinite(value) else "undefined: neither the judge nor the annotators marked any words"
        estimate = Estimate.from_replicates(value if np.isfinite(value) else None, boot[name], len(rows), note)
        out[name] = estimate.as_dict()
    out["unattributed_quotes"] = int(sum(int(c.get("unattributed_quotes") or 0) for c in counts if isinstance(c, dict)))
    return out


_STATS = ("token_f1", "iou_f1")
