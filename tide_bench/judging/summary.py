"""``judge_summary.json``: what the judgments say, with n, CIs and every unscored item counted.

The overall empathy score of an item is the mean of its three factor scores; means carry
95 % percentile-bootstrap CIs (:func:`tide_bench.core.stats.mean_ci`). Unscored items are
never silently dropped: ``n_items = n_scored + n_unscored`` and the reasons are counted.
"""

from __future__ import annotations

from collections import Counter
from statistics import fmean
from typing import Any

from tide_bench.core.hashing import sha256_file
from tide_bench.core.provenance import utc_now
from tide_bench.core.stats import mean_ci
from tide_bench.generation.run_dir import MANIFEST_NAME, RunDirectory
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.families import self_preference
from tide_bench.judging.records import served_models
from tide_bench.judging.usage import Usage

OVERALL = "empathy"


def item_overall(record: dict[str, Any]) -> float:
    return fmean(record["scores"].values())


def score_block(records: list[dict[str, Any]], factor_keys: list[str]) -> dict[str, Any]:
    """n, unscored and mean/CI per factor and overall, for one group of records."""
    scored = [r for r in records if r["status"] == "scored"]
    block: dict[str, Any] = {
        "n_items": len(records),
        "n_scored": len(scored),
        "n_unscored": len(records) - len(scored),
        "factors": {f: mean_ci([r["scores"][f] for r in scored]).as_dict() for f in factor_keys},
        OVERALL: mean_ci([item_overall(r) for r in scored]).as_dict(),
        "safety_flag_rate": mean_ci([1.0 if r["safety"]["flagged"] else 0.0 for r in scored]).as_dict(),
    }
    return block


def unscored_reasons(records: list[dict[str, Any]]) -> dict[str, int]:
    return dict(sorted(Counter(r["unscored_kind"] for r in records if r["status"] == "unscored").items()))


def _usage_of(records: list[dict[str, Any]]) -> Usage:
    total = Usage()
    for r in records:
        total.add(Usage(**r["usage"]))
    return total


def summarize_judgments(
    records: list[dict[str, Any]],
    run: RunDirectory,
    config: JudgeConfig,
    *,
    mode: str,
    calls_made: int,
    new_usage: Usage,
) -> dict[str, Any]:
    keys = config.rubric.factor_keys
    groups: dict[str, dict[str, list[dict[str, Any]]]] = {"turn": {}, "scenario": {}}
    for r in records:
        groups["turn"].setdefault(str(r["turn"]), []).append(r)
        groups["scenario"].setdefault(r["scenario"] or "(none)", []).append(r)
    all_usage = _usage_of(records)
    batch_usage = _usage_of([r for r in records if r["mode"] == "batch"])
    sync_usage = _usage_of([r for r in records if r["mode"] != "batch"])
    costs = [sync_usage.cost(config.prices), batch_usage.cost(config.prices, batch=True)]
    return {
        "schema_version": 1,
        "generated_at": utc_now(),
        "judge": config.identity(),
        "mode": mode,
        "run": {
            "model": run.model_name,
            "data": run.manifest.get("data"),
            "prompt_sha256": (run.manifest.get("prompt") or {}).get("prompt_sha256"),
            "n_generations": len(run.generations),
            "folder": str(run.root),
            "run_json_sha256": sha256_file(run.root / MANIFEST_NAME) if (run.root / MANIFEST_NAME).is_file() else None,
        },
        "served_models": served_models(records),
        **score_block(records, keys),
        "unscored_reasons": unscored_reasons(records),
        "n_safety_flagged": sum(1 for r in records if r["status"] == "scored" and r["safety"]["flagged"]),
        "by_turn": {g: score_block(rs, keys) for g, rs in sorted(groups["turn"].items())},
        "by_scenario": {g: score_block(rs, keys) for g, rs in sorted(groups["scenario"].items())},
        "tokens": {"all_judgments": all_usage.as_dict(), "this_run": new_usage.as_dict()},
        "calls_this_run": calls_made,
        "cost_usd": {
            "all_judgments": None if any(c is None for c in costs) else round(sum(c for c in costs if c is not None), 6),
            "this_run": None if new_usage.cost(config.prices, batch=mode == "batch") is None else round(new_usage.cost(config.prices, batch=mode == "batch") or 0.0, 6),
            "source": "the API's usage fields x judges/prices.yaml" if config.prices else "no price entry for this model",
        },
        "self_preference": self_preference(config.family, config.model, run.model_name),
    }
