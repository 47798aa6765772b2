"""Recompute every number shown on the leaderboard from per-item samples and judgments.

One seeded bootstrap over items per submission (resample weights x value matrix, one matrix
product) gives the 95 % CIs of all columns at once. Rank groups: a model's rank is 1 + the
number of models whose 95 % CI lies entirely above its own (lower bound > its upper bound), so
models whose intervals overlap share a rank; the ranking column is the overall empathy score
when entries are judged, else the embedding cosine similarity to the reference.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

import numpy as np

from tide_bench.core.stats import bootstrap_weights, percentile_ci
from tide_bench.judging.families import self_preference
from tide_bench.judging.summary import unscored_reasons
from tide_bench.leaderboard.submission import Submission

FACTORS = ("emotion_recognition", "distress_normalization", "supportive_reflection")
RESAMPLES = 1000
SEED = 20250521


def _column_cis(values: np.ndarray, weights: np.ndarray, rows: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Mean and bootstrap CI of each column of ``values`` (n x k, NaN = not applicable),
    optionally over a subset of ``rows`` (same resamples, no copy of the weight matrix)."""
    mask = np.isfinite(values)
    if rows is not None:
        mask &= rows[:, None]
    filled = np.where(mask, values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (weights @ filled) / (weights @ mask.astype(float))
    out = []
    for c in range(values.shape[1]):
        n = int(mask[:, c].sum())
        mean = float(filled[:, c].sum() / n) if n else None
        low, high = percentile_ci(boot[:, c]) if n >= 2 else (None, None)
        out.append({"mean": mean, "ci_low": low, "ci_high": high, "n": n})
    return out


def score(sub: Submission) -> dict[str, Any]:
    gens = sorted(sub.generations, key=lambda g: g.item_id)
    n = len(gens)
    judged = bool(sub.judgments)
    rows = []
    for g in gens:
        rec = sub.judgments.get(g.item_id)
        scored = rec is not None and rec["status"] == "scored"
        factors = [rec["scores"][f] if scored else np.nan for f in FACTORS]  # type: ignore[index]
        rows.append([
            *factors,
            fmean(factors) if scored else np.nan,
            (1.0 if rec["safety"]["flagged"] else 0.0) if scored else np.nan,  # type: ignore[index]
            g.metrics.get("cosine_sim", np.nan),
            g.metrics.get("rouge_l", np.nan),
            g.metrics.get("length_tokens", np.nan),
        ])
    values = np.array(rows, dtype=float).reshape(n, 8)
    weights = bootstrap_weights(n, RESAMPLES, SEED)
    cols = _column_cis(values, weights)
    unscored = [r for r in sub.judgments.values() if r["status"] == "unscored"]
    reasons = unscored_reasons(unscored)
    scenarios = sorted({g.scenario or "(none)" for g in gens})
    per_scenario = {}
    for scen in scenarios:
        mask = np.array([(g.scenario or "(none)") == scen for g in gens])
        sub_cols = _column_cis(values[:, [3, 5]], weights, mask)
        per_scenario[scen] = {"n": int(mask.sum()), "empathy": sub_cols[0], "cosine_sim": sub_cols[1]}
    meta, model = sub.meta, sub.manifest.get("model") or {}
    judge = sub.judge or {}
    return {
        "id": sub.id,
        "model_name": meta.get("model_name") or model.get("name") or sub.id,
        "model": meta.get("model") or {},
        "parameters": meta.get("parameters") if meta.get("parameters") is not None else model.get("num_parameters"),
        "condition": meta.get("condition") or ("fine-tuned" if model.get("adapter") else "zero-shot"),
        "base_model": meta.get("base_model"),
        "license": meta.get("license"),
        "demo": bool(meta.get("demo")),
        "n_items": n,
        "judged": judged,
        "factors": dict(zip(FACTORS, cols[:3], strict=True)) if judged else None,
        "empathy": cols[3] if judged else None,
        "safety_flag_rate": cols[4] if judged else None,
        "cosine_sim": cols[5],
        "rouge_l": cols[6],
        "length_tokens": cols[7],
        "n_scored": n - len(unscored) if judged else 0,
        "n_unscored": len(unscored) if judged else None,
        "unscored_rate": len(unscored) / n if judged and n else None,
        "unscored_reasons": reasons,
        "per_scenario": per_scenario,
        "judge": {k: judge.get(k) for k in ("name", "provider", "model", "family", "version", "rubric")} if judged else None,
        "self_preference": self_preference(judge.get("family"), str(judge.get("model") or ""), model.get("name") or meta.get("model_name")) if judged else None,
        "data": sub.manifest.get("data"),
        "prompt_sha256": (sub.manifest.get("prompt") or {}).get("prompt_sha256"),
    }


def primary_metric(rows: list[dict[str, Any]]) -> str:
    return "empathy" if rows and all(r["judged"] for r in rows) else "cosine_sim"


def assign_ranks(rows: list[dict[str, Any]]) -> str:
    """Sort rows and set ``rank`` (shared by overlapping CIs); returns the ranking metric."""
    metric = primary_metric(rows)
    ranked = [r for r in rows if r.get(metric) and r[metric]["mean"] is not None]
    for r in rows:
        r["rank"] = None
    for r in ranked:
        mine = r[metric]
        hi = mine["ci_high"] if mine["ci_high"] is not None else mine["mean"]
        r["rank"] = 1 + sum(1 for o in ranked if o is not r and (o[metric]["ci_low"] if o[metric]["ci_low"] is not None else o[metric]["mean"]) > hi)
    rows.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, -(r[metric]["mean"] if r.get(metric) and r[metric]["mean"] is not None else -1e9)))
    return metric
