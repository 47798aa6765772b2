"""A model's EPITOME scores summarised: per mechanism the mean expected level (0-2) and the
share of replies at each predicted level, overall and per scenario, with confidence intervals
that resample the data's clusters (TIDE personas, EmpatheticDialogues speakers)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from tide_bench.core.stats import mean_ci
from tide_bench.epitome.mechanisms import KEYS, LEVEL_NAMES, LEVELS, MECHANISMS, metric_name


def _block(rows: Sequence[dict[str, Any]], clusters: Sequence[Hashable]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in KEYS:
        name = metric_name(key)
        values = np.asarray([r.get(name, np.nan) for r in rows], dtype=float)
        levels = [r.get(f"{name}_level") for r in rows]
        known = [lv for lv in levels if isinstance(lv, int)]
        out[name] = mean_ci(values, clusters=list(clusters)).as_dict() | {
            "level_share": {LEVEL_NAMES[lv]: (known.count(lv) / len(known) if known else None) for lv in LEVELS}
        }
    return out


def summarize(
    rows: Sequence[dict[str, Any]], clusters: Sequence[Hashable], scenarios: Sequence[str] | None = None
) -> dict[str, Any]:
    """``rows`` from :meth:`EpitomeScorer.score`, one cluster label (and scenario) per row."""
    summary: dict[str, Any] = {
        "n_items": len(rows),
        "metric": "expected level 0-2 (0 none, 1 weak, 2 strong) per mechanism: "
        + ", ".join(f"{metric_name(m.key)} = {m.name}" for m in MECHANISMS),
        "intervals": "95% percentile bootstrap over clusters (personas; ED speakers)",
        "overall": _block(rows, clusters),
    }
    if scenarios is not None:
        groups: dict[str, list[int]] = {}
        for i, scenario in enumerate(scenarios):
            groups.setdefault(scenario or "(none)", []).append(i)
        summary["by_scenario"] = {
            name: {"n_items": len(idx)} | _block([rows[i] for i in idx], [clusters[i] for i in idx])
            for name, idx in sorted(groups.items())
        }
    return summary
