"""What a study would run and cost, before it runs: the ``--dry-run`` plan.

Times come from measurements where there are any: a finished stage of the same model in this
study folder (its ``measured`` record), else the study file's ``tokens_per_s`` hint (an upper
bound on generation time: every reply assumed to use ``max_gen_toks``), else "unknown". The
judge cost is the judge's own dry-run estimate on the split's items with the references as
stand-in replies (replies assumed as long as the references), times the cells to judge.

The plan is wanted before the data is at hand (TIDE is gated): when the study's data cannot be
loaded, the item count is TIDE's documented size for the split and the judge's per-item cost is
measured on the built-in sample's items, and the plan says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tide_bench.core.errors import TideBenchError
from tide_bench.data.sources import load_dataset
from tide_bench.data.splits import TRAIN_BELOW, VALIDATION_BELOW
from tide_bench.study.plan import STAGES, StagePlan, StudyPlan


def _measured_rate(plan: StudyPlan, stage: StagePlan, key: str) -> float | None:
    """A rate measured by a finished stage of the same kind and model (any condition)."""
    model = stage.cell.model.model if stage.cell.model else None
    for other in plan.stages:
        if other.stage != stage.stage or not other.record:
            continue
        same = other.cell.model.model if other.cell.model else None
        rate = (other.record.get("measured") or {}).get(key)
        if same == model and isinstance(rate, int | float) and rate > 0:
            return float(rate)
    return None


def _hours(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    return f"{seconds / 3600:.2f} h" if seconds >= 360 else f"{seconds / 60:.1f} min"


def eval_seconds(plan: StudyPlan, stage: StagePlan, n_items: int) -> tuple[float | None, str]:
    """Estimated generation time of an eval stage, and where the estimate comes from."""
    if stage.cell.model is None:
        return 0.0, "no model (the references)"
    rate = _measured_rate(plan, stage, "items_per_second")
    if rate:
        return n_items / rate, "measured in this study"
    hint = stage.cell.model.tokens_per_s
    if hint:
        max_toks = int(plan.spec.eval.get("max_gen_toks", 256))
        return n_items * max_toks / hint, "tokens_per_s hint, every reply at max_gen_toks"
    return None, "no measurement yet"


TIDE_CONVERSATIONS = 10_000  # the paper: 500 personas x 20 conversations (one client turn each, the likely shape)
SPLIT_SHARE = {
    "train": TRAIN_BELOW / 100,
    "validation": (VALIDATION_BELOW - TRAIN_BELOW) / 100,
    "test": (100 - VALIDATION_BELOW) / 100,
    "all": 1.0,
}


def split_size(spec: Any) -> tuple[int, str | None]:
    """The number of items a cell generates, and a note when it is TIDE's documented size
    because the data could not be loaded (no access yet, offline)."""
    try:
        return len(load_dataset(spec.data).items_for(spec.split)), None
    except TideBenchError as exc:
        n = round(TIDE_CONVERSATIONS * SPLIT_SHARE.get(spec.split, 1.0))
        return n, (
            f"the data could not be loaded ({exc}); {n} items assumed from TIDE's documented size "
            "(10,000 conversations, one client turn each, split 70/10/20 by persona)"
        )


def judge_cost(plan: StudyPlan, n_items: int, *, data_loaded: bool = True) -> dict[str, Any] | None:
    """The judge's estimate for one cell, and for every cell still to judge. Without the data,
    the per-item cost is measured on the built-in sample's items and scaled to ``n_items``."""
    if plan.spec.judge is None:
        return None
    from tide_bench.judging import JudgeOptions, dry_run
    from tide_bench.study.runner import stand_in_run

    judge = plan.spec.judge
    config = plan.spec.judge_config()
    stand_in = stand_in_run(plan.spec if data_loaded else replace(plan.spec, data="sample"))
    one = dry_run(stand_in, plan.out / ".estimate", config, JudgeOptions())
    cells = sum(1 for s in plan.pending() if s.stage == "judge")
    mode = "batch" if judge.get("mode") == "batch" and one.get("batch") else "sync"
    per_cell = one[mode]["cost_usd"]
    method = one["token_estimate_method"]
    if per_cell is not None and not data_loaded:
        per_cell = per_cell / max(len(stand_in.generations), 1) * n_items
        method += f"; per-item cost of the built-in sample's items, times {n_items}"
    return {
        "mode": mode,
        "per_cell_usd": per_cell,
        "cells": cells,
        "total_usd": None if per_cell is None else per_cell * cells,
        "method": method,
    }


def _width(stage: str) -> int:
    return max(12, len(stage) + 2)


def format_plan(plan: StudyPlan) -> str:
    """The grid, each stage marked done or to run, with time and cost estimates."""
    spec = plan.spec
    n_items, assumed = split_size(spec)
    limit = spec.eval.get("limit")
    if isinstance(limit, int):
        n_items = min(n_items, limit)
    lines = [
        f"study {spec.name}: data {spec.data}, split {spec.split} ({n_items} items), prompt {spec.prompt}, "
        f"judge {spec.judge['name'] if spec.judge else 'none'}",
        f"output: {plan.out}",
        *([f"note: {assumed}"] if assumed else []),
        "",
    ]
    # the optional stages (the EPITOME judge and scorer) get a column only in a study that names them
    shown = [
        st for st in STAGES if st in ("finetune", "eval", "judge", "submit") or any(s.stage == st for s in plan.stages)
    ]
    header = f"{'cell':<36}" + "".join(f"{st:<{_width(st)}}" for st in shown) + "generation time (est.)"
    lines += [header, "-" * len(header)]
    total = 0.0
    unknown = False
    for cell in plan.cells:
        marks = {s.stage: ("done" if s.done else "to run") for s in plan.for_cell(cell.id)}
        eval_stage = next(s for s in plan.for_cell(cell.id) if s.stage == "eval")
        seconds, source = eval_seconds(plan, eval_stage, n_items)
        if not eval_stage.done:
            total += seconds or 0.0
            unknown |= seconds is None
        time_text = "done" if eval_stage.done else f"{_hours(seconds)} ({source})"
        lines.append(f"{cell.id:<36}" + "".join(f"{marks.get(st, '-'):<{_width(st)}}" for st in shown) + time_text)
    device = str(spec.eval.get("device") or "default device")
    lines += [
        "",
        f"generation still to run: {_hours(total)} on {device}" + (" + cells without an estimate" if unknown else ""),
        "fine-tuning time: see each adapter card's tokens/s once one cell has trained (not estimated before)",
    ]
    cost = judge_cost(plan, n_items, data_loaded=assumed is None)
    if cost:
        per = "unknown (no price)" if cost["per_cell_usd"] is None else f"${cost['per_cell_usd']:,.2f}"
        tot = "unknown" if cost["total_usd"] is None else f"${cost['total_usd']:,.2f}"
        lines.append(
            f"judge ({cost['mode']}): {per} per cell, {tot} for the {cost['cells']} cell(s) still to judge "
            f"({cost['method']}; replies assumed as long as the references)"
        )
    lines.append(f"stages to run: {len(plan.pending())} of {len(plan.stages)}")
    return "\n".join(lines)
