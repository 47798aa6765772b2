"""Model families, for the self-preference warning (a judge may favour its own family)."""

from __future__ import annotations

from functools import lru_cache

import yaml

from tide_bench.core.resources import resource_dir


@lru_cache(maxsize=1)
def _families() -> dict[str, list[str]]:
    return yaml.safe_load((resource_dir("judges") / "families.yaml").read_text(encoding="utf-8")) or {}


def family_of(model_name: str | None) -> str | None:
    name = (model_name or "").lower()
    for family, needles in _families().items():
        if any(n.lower() in name for n in needles):
            return family
    return None


def self_preference(judge_family: str | None, judge_model: str, evaluated_model: str | None) -> dict[str, object]:
    judged = family_of(evaluated_model)
    family = judge_family or family_of(judge_model)
    risk = bool(family and judged and family == judged)
    return {
        "risk": risk,
        "judge_family": family,
        "evaluated_family": judged,
        "note": (
            f"the judge ({family}) and the evaluated model ({judged}) share a family: judges tend to favour "
            "their own family; confirm with a judge from another family or with human ratings"
            if risk
            else None
        ),
    }
