"""What a study would run and cost, before it runs: the ``--dry-run`` plan.

Times come from measurements where there are any: a finished stage of the same model in this
study folder (its ``measured`` record), else the study file's ``tokens_per_s`` hint (an upper
bound on generation time: every reply assumed to use ``max_gen_toks``), else "unknown". The
judge cost is the judge's own dry-run estimate on the split's items with the references as
stand-in replies (replies assumed as long as the references), times the cells to judge; a cell's
K samples (``samples:``) cost K times its generation and its judging, and the seeker's-view and
EPITOME judges are priced the same way, each on its own configuration.

The plan is wanted before the data is at hand (TIDE is gated): when the study's data cannot be
loaded, the item count is TIDE's documented size for the split and the judge's per-item cost is
measured on the built-in sample's items, and the plan says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tide_bench.core.errors import TideBenchError
from tide_bench.data.sources import RISK_SUPPLEMENT, load_dataset
from tide_bench.data.splits import TRAIN_BELOW, VALIDATION_BELOW
from tide_bench.generation.run_dir import Generation, RunDirectory
from tide_bench.study.backend import resolve_backend
from tide_bench.study.plan import STAGES, StagePlan, StudyPlan
from tide_bench.study.rates import Rates, assumed_rates, load_rates, size_billions


def _measured_rate(plan: StudyPlan, stage: StagePlan, key: str) -> float | None:
    """A rate measured by a finished stage of the same kind and model (any condition)."""
    model = stage.cell.model.model if stage.cell.model else None
    for other in plan.stages:
        if other.stage != stage.stage or not other.record:
            continue
        same = other.cell.model.model if other.cell.model else None
        rate = (other.record.get("measured") or {}).get(key)
        if same == model and isinstance(rate, int | float) and not isinstance(rate, bool) and rate > 0:
            return float(rate)
    return None


def _hours(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds >= 360:
        return f"{seconds / 3600:.2f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.1f} s"


@dataclass
class Workload:
    """What one cell's GPU stages process: from the data when it loads, else TIDE's documented sizes."""

    test_items: int
    train_items: int
    validation_items: int
    tokens_per_example: float
    note: str | None = None


def _device(plan: StudyPlan) -> str:
    device = str(plan.spec.eval.get("device") or "cuda")
    return "cpu" if device.startswith("cpu") else "cuda"


def cell_size(cell: Any) -> float | None:
    if cell.model is None:
        return None
    return size_billions(cell.model.parameters, cell.model.model, cell.model.id)


def finetune_seconds(plan: StudyPlan, stage: StagePlan, work: Workload, rates: Rates) -> tuple[float | None, str]:
    """Training time of a finetune stage: tokens to train on / tokens per second, and the rate's source."""
    lora = plan.spec.lora()
    examples = work.train_items if not lora.get("limit_examples") else min(work.train_items, lora["limit_examples"])
    epochs = int(lora.get("epochs", 3))
    steps = lora.get("max_steps")
    per_step = int(lora.get("batch_size") or 0) * int(lora.get("grad_accum") or 0) or SEQUENCES_PER_STEP
    tokens = (steps * per_step if steps else examples * epochs) * work.tokens_per_example
    evaluations = (epochs if not steps else max(1, steps // max(1, int(lora.get("eval_steps") or steps)))) + 1
    validation = min(work.validation_items, lora.get("limit_examples") or work.validation_items)
    tokens += evaluations * validation * work.tokens_per_example * rates.validation_cost
    measured = _measured_rate(plan, stage, "tokens_per_second")
    if measured:
        return tokens / measured, "measured in this study"
    per_token = rates.finetune_seconds_per_token(_device(plan), cell_size(stage.cell))
    if per_token is None:
        return None, "no rate for this model size" if cell_size(stage.cell) is None else "no rate"
    return tokens * per_token, rates.source if not rates.measured else f"rates from {rates.source}"


def study_backend(plan: StudyPlan) -> tuple[str, str]:
    """The backend the study's eval stages use on this machine, and why (:mod:`.backend`)."""
    return resolve_backend(plan.spec.eval.get("backend"), plan.spec.eval.get("device"))


def eval_seconds(
    plan: StudyPlan, stage: StagePlan, n_items: int, rates: Rates | None = None, backend: str | None = None
) -> tuple[float | None, str]:
    """Estimated generation time of an eval stage (through ``backend``, by default the study's), and
    where the estimate comes from."""
    if stage.cell.model is None:
        return 0.0, "no model (the references)"
    rate = _measured_rate(plan, stage, "items_per_second")
    if rate:
        return n_items / rate, "measured in this study"
    max_toks = int(plan.spec.eval.get("max_gen_toks", 256))
    hint = stage.cell.model.tokens_per_s
    if hint:
        return n_items * max_toks / hint, "tokens_per_s hint, every reply at max_gen_toks"
    if rates is not None:
        backend = backend or study_backend(plan)[0]
        tps = rates.generate_tokens_per_s(_device(plan), backend, cell_size(stage.cell))
        if tps:
            label = rates.source if not rates.measured else f"rates from {rates.source}"
            return n_items * max_toks / tps, f"{label} ({backend}), every reply at max_gen_toks"
    return None, "no measurement yet"


@dataclass
class CellEstimate:
    cell: Any
    finetune_s: float | None
    eval_s: float | None  # the cell's run and, with samples:, its K sampled runs
    sources: dict[str, str]
    gpus: int
    samples_s: float | None = 0.0  # of eval_s: the K sampled runs

    @property
    def seconds(self) -> float | None:
        parts = [self.finetune_s, self.eval_s]
        return None if None in parts else sum(p for p in parts if p)


def estimate_cells(plan: StudyPlan, work: Workload, rates: Rates, backend: str | None = None) -> list[CellEstimate]:
    """The GPU time still to spend on each cell (stages done count zero), generating through
    ``backend`` (by default the study's)."""
    out = []
    for cell in plan.cells:
        seconds: dict[str, float | None] = {"finetune": 0.0, "eval": 0.0, "samples": 0.0}
        sources: dict[str, str] = {}
        for stage in plan.for_cell(cell.id):
            if stage.stage not in seconds:
                continue
            if stage.done:
                sources[stage.stage] = "done"
                continue
            if stage.stage == "finetune":
                seconds["finetune"], sources["finetune"] = finetune_seconds(plan, stage, work, rates)
            else:  # the run, or its K samples: K times the items at the same rate
                k = plan.spec.samples_for(cell.model, cell.condition) if stage.stage == "samples" else 1
                n = work.test_items * k
                seconds[stage.stage], sources[stage.stage] = eval_seconds(plan, stage, n, rates, backend)
        if "eval" not in sources and "samples" in sources:
            sources["eval"] = sources["samples"]  # a cell whose run is done and its samples are not
        generation = (
            None
            if None in (seconds["eval"], seconds["samples"])
            else (seconds["eval"] or 0) + (seconds["samples"] or 0)
        )
        gpus = plan.spec.resources_for(cell.model).gpus_per_cell
        out.append(CellEstimate(cell, seconds["finetune"], generation, sources, gpus, seconds["samples"]))
    return out


def cell_cost(plan: StudyPlan, cell: Any) -> float:
    """A cell's expected cost, for scheduling the most expensive first (estimates where there are
    any; else the model's size, fine-tuned cells three times their zero-shot ones)."""
    est = _cached_estimates(plan).get(cell.id)
    if est is not None and est.seconds is not None:
        return est.seconds
    size = cell_size(cell) or (0.0 if cell.model is None else 1.0)
    return size * (3.0 if cell.condition == "fine-tuned" else 1.0)


def _cached_estimates(plan: StudyPlan) -> dict[str, CellEstimate]:
    cached = getattr(plan, "_estimates", None)
    if cached is None:
        try:
            cached = {e.cell.id: e for e in estimate_cells(plan, workload(plan.spec), assumed_rates())}
        except TideBenchError:
            cached = {}
        plan._estimates = cached  # type: ignore[attr-defined]
    return cached


def makespan(estimates: list[CellEstimate], slots: int) -> float | None:
    """Wall time of the cells on ``slots`` workers, longest first to the least loaded (what the
    local executor's workers do)."""
    seconds = sorted((e.seconds for e in estimates if e.seconds), reverse=True)
    if any(e.seconds is None for e in estimates):
        return None
    loads = [0.0] * max(1, slots)
    for s in seconds:
        loads[loads.index(min(loads))] += s
    return max(loads)


SEQUENCES_PER_STEP = 16  # tide_bench.finetune.config's default micro-batch x accumulation (that package loads torch)
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
    from tide_bench.judging import dry_run

    config = plan.spec.judge_config()
    options = replace(plan.spec.judge_options(), cache_path=None)  # the study's own options, a scratch cache
    stand_in = stand_in_run(plan.spec if data_loaded else replace(plan.spec, data="sample"))
    cells = sum(1 for s in plan.pending() if s.stage == "judge")
    mode, per_cell, method = _per_cell_cost(plan, "judge", stand_in, n_items, data_loaded)
    if per_cell is not None and not data_loaded:
        method += f"; per-item cost of the built-in sample's items, times {n_items}"
    supplement_cells = sum(
        1 for s in plan.pending() if s.stage == "judge" and plan.spec.answers_supplement(s.cell.model)
    )
    battery = None
    if supplement_cells:  # each such cell's run on the risk supplement, its severe items judged k times
        battery = dry_run(
            stand_in_run(replace(plan.spec, data=RISK_SUPPLEMENT, split="all")), plan.out / ".estimate", config, options
        )
        severe = battery["severe_samples"]
        method += (
            f"; plus, in {supplement_cells} cell(s), the risk supplement's {battery['n_items']} items, its "
            f"{severe['n_severe_items']} severe items judged {severe['k']} times (majority): "
            f"{battery['n_calls']} calls per cell"
        )
    sample_runs = sum(
        plan.spec.samples_for(s.cell.model, s.cell.condition) for s in plan.pending() if s.stage == "judge"
    )
    if sample_runs:
        method += f"; plus {sample_runs} sampled run(s) (samples: k per cell), each priced as one cell"
    total = None if per_cell is None else per_cell * (cells + sample_runs)
    if total is not None and battery is not None:
        extra = battery[mode]["cost_usd"]
        total = None if extra is None else total + extra * supplement_cells
    others = {name: _other_judge_cost(plan, name, stand_in, n_items, data_loaded) for name in OTHER_JUDGES}
    for name, other in others.items():
        if other is None:
            continue
        per = "unknown (no price)" if other["per_cell_usd"] is None else f"${other['per_cell_usd']:,.2f}"
        method += f"; plus the {OTHER_JUDGES[name]} ({plan.spec.judge_config(name).model}) on {other['cells']} cell(s)"
        method += f", {per} per cell"
        total = None if total is None or other["total_usd"] is None else total + other["total_usd"]
    return {
        "mode": mode,
        "per_cell_usd": per_cell,
        "cells": cells,
        "calls": n_items * (cells + sample_runs)
        + sum(o["cells"] * n_items for o in others.values() if o)
        + (battery["n_calls"] * supplement_cells if battery else 0),
        "total_usd": total,
        "method": method,
        "concurrency": config.concurrency,  # the configuration's, or the study's judge.concurrency
    }


OTHER_JUDGES = {"epitome_judge": "EPITOME judge", "seeker_judge": "seeker's-view judge"}  # study section -> words


def _per_cell_cost(
    plan: StudyPlan, name: str, stand_in: RunDirectory, n_items: int, data_loaded: bool
) -> tuple[str, float | None, str]:
    """One cell's judging by the study's ``name`` judge (its own configuration and options, a scratch
    cache): the mode priced (batch where the study batches and the provider can), the dollars for
    ``n_items`` items (scaled from the stand-in's when the data did not load), and how the tokens were
    estimated."""
    from tide_bench.judging import dry_run

    options = replace(plan.spec.judge_options(name), cache_path=None)
    one = dry_run(stand_in, plan.out / ".estimate", plan.spec.judge_config(name), options)
    mode = "batch" if options.mode == "batch" and one.get("batch") else "sync"
    per_cell = one[mode]["cost_usd"]
    if per_cell is not None and not data_loaded:
        per_cell = per_cell / max(len(stand_in.generations), 1) * n_items
    return mode, per_cell, str(one["token_estimate_method"])


def _other_judge_cost(
    plan: StudyPlan, name: str, stand_in: RunDirectory, n_items: int, data_loaded: bool
) -> dict[str, Any] | None:
    """The cost of a study's other judge stage (``epitome_judge``, ``seeker_judge``): its own
    configuration's dry run on the stand-in replies, times the cells still to judge."""
    cells = sum(1 for s in plan.pending() if s.stage == name)
    if getattr(plan.spec, name) is None or not cells:
        return None
    _, per_cell, _ = _per_cell_cost(plan, name, stand_in, n_items, data_loaded)
    return {"cells": cells, "per_cell_usd": per_cell, "total_usd": None if per_cell is None else per_cell * cells}


def judge_sends(plan: StudyPlan) -> list[dict[str, Any]]:
    """Where the study's pending judge stages send conversations, and at most how many (cached calls
    send nothing): one ``n``, ``provider``, ``endpoint``, ``model`` per judge server, the judge's
    count with its risk-supplement runs and samples, the EPITOME and seeker's-view judges' beside it;
    a judge that cannot be made here is left out (its own stage then says why)."""
    from tide_bench.core.errors import ConfigError
    from tide_bench.judging.providers import make_provider

    sends: dict[tuple[str, str, str], int] = {}
    items = split_size(plan.spec)[0]
    for name in ("judge", *OTHER_JUDGES):
        pending = [s for s in plan.pending() if s.stage == name]
        if getattr(plan.spec, name) is None or not pending:
            continue
        config = plan.spec.judge_config(name)
        try:
            endpoint = make_provider(config).public_endpoint
        except ConfigError:
            continue
        n = items * len(pending)
        if name == "judge":
            n += items * sum(plan.spec.samples_for(s.cell.model, s.cell.condition) for s in pending)
            supplement = sum(plan.spec.answers_supplement(s.cell.model) for s in pending)
            if supplement:
                n += len(load_dataset(RISK_SUPPLEMENT).items) * supplement
        key = (str(config.provider), str(endpoint), str(config.model))
        sends[key] = sends.get(key, 0) + n
    return [{"n": n, "provider": p, "endpoint": e, "model": m} for (p, e, m), n in sends.items()]


def workload(spec: Any, rates: Rates | None = None) -> Workload:
    """Items to generate, to train and validate on, and tokens per training example (characters
    of system prompt, conversation and reply at the rates file's characters per token)."""
    from tide_bench.tasks.registry import system_prompt

    rates = rates or assumed_rates()
    n_test, note = split_size(spec)
    limit = spec.eval.get("limit")
    if isinstance(limit, int) and not isinstance(limit, bool):
        n_test = min(n_test, limit)
    try:
        dataset = load_dataset(spec.data)
        loaded = True
    except TideBenchError:
        dataset, loaded = load_dataset("sample"), False
    train = dataset.items_for("train")
    chars = [
        len(i.client_utterance) + len(i.reference_reply) + sum(len(m.get("content", "")) for m in i.history or [])
        for i in train
    ] or [0]
    per_example = (sum(chars) / len(chars) + len(system_prompt(spec.prompt))) * rates.tokens_per_char
    per_example += rates.template_tokens
    if loaded:
        n_train, n_val = len(train), len(dataset.items_for("validation"))
    else:
        n_train = round(TIDE_CONVERSATIONS * SPLIT_SHARE["train"])
        n_val = round(TIDE_CONVERSATIONS * SPLIT_SHARE["validation"])
    return Workload(n_test, n_train, n_val, per_example, note)


def _slots(plan: StudyPlan, executor: str, gpus: int | None) -> tuple[int | None, str]:
    """How many cells run at once on ``executor``, and the words for it."""
    per = max([plan.spec.resources_for(m).gpus_per_cell for m in plan.spec.models] or [1]) or 1
    if executor == "local":
        if gpus is None:
            from tide_bench.study.resources import visible_gpus

            gpus = len(visible_gpus())
        if gpus == 0 and _device(plan) == "cpu":
            return 1, "one CPU worker (--executor local; --workers N for more)"
        if gpus == 0:
            return 1, "1 GPU (none is visible here: --gpus N plans for N)"
        return max(1, gpus // per), f"{gpus} GPU(s), {per} per cell (--executor local)"
    limit = plan.spec.resources.max_parallel
    n = gpus // per if gpus else limit
    if not n:
        return None, f"--executor {executor} with every cell running at once (give --gpus N for a queue's share)"
    return max(1, n), f"{n} cell(s) at once (--executor {executor})"


def format_plan(
    plan: StudyPlan, *, executor: str = "local", gpus: int | None = None, rates_file: str | None = None
) -> str:
    """The grid, each stage marked done or to run, with time and cost estimates per cell and for the
    grid on ``executor`` with ``gpus`` GPUs, and where every rate came from."""
    spec = plan.spec
    rates = load_rates(rates_file)
    work = workload(spec, rates)
    n_items = work.test_items
    lines = [
        f"study {spec.name}: data {spec.data}, split {spec.split} ({n_items} items), prompt {spec.prompt}, "
        f"judge {spec.judge['name'] if spec.judge else 'none'}",
        f"output: {plan.out}",
        *([f"note: {work.note}"] if work.note else []),
        *spec.warnings(),
        "",
    ]
    # the optional EPITOME stages (the local scorer, the EPITOME judge) get a column only in a study that names them
    columns = [
        (st, max(8, len(st) + 2) if st != "finetune" else 10)
        for st in STAGES
        if st in ("finetune", "eval", "judge", "submit") or any(s.stage == st for s in plan.stages)
    ]
    header = (
        f"{'cell':<30}" + "".join(f"{st:<{w}}" for st, w in columns) + f"{'fine-tuning (est.)':<20}generation (est.)"
    )
    lines += [header, "-" * len(header)]
    estimates = estimate_cells(plan, work, rates)

    def shown(est: CellEstimate, stage: str, seconds: float | None) -> str:
        source = est.sources.get(stage)
        if source is None:
            return "-"
        if est.cell.model is None:
            return "none (no model)"
        if source == "done" and (stage != "eval" or est.sources.get("samples") in (None, "done")):
            return "done"
        k = plan.spec.samples_for(est.cell.model, est.cell.condition)
        with_samples = f" (with {k} samples: {_hours(est.samples_s)})" if stage == "eval" and est.samples_s else ""
        return _hours(seconds) + with_samples

    for est in estimates:
        cell = est.cell
        marks = {s.stage: ("done" if s.done else "to run") for s in plan.for_cell(cell.id)}
        for s in plan.for_cell(cell.id):
            if s.distrusted:
                lines.append(f"  note: {cell.id}/{s.stage}: its record is not trusted ({s.distrusted}); it runs again")

        lines.append(
            f"{cell.id:<30}"
            + "".join(f"{marks.get(st, '-'):<{w}}" for st, w in columns)
            + f"{shown(est, 'finetune', est.finetune_s):<20}{shown(est, 'eval', est.eval_s)}"
        )
    lines += ["", *_totals(plan, estimates, work, rates, executor, gpus)]
    cost = judge_cost(plan, n_items, data_loaded=work.note is None)
    budget = (spec.judge or {}).get("max_cost")
    if cost and cost["total_usd"] and isinstance(budget, int | float) and cost["total_usd"] > budget:
        lines.append(
            f"warning: the judge's estimate (${cost['total_usd']:,.2f}) is above judge.max_cost (${budget:,.2f}), the "
            "budget of the whole judge stage: judging would stop there"
        )
    if cost:
        per = "unknown (no price)" if cost["per_cell_usd"] is None else f"${cost['per_cell_usd']:,.2f}"
        tot = "unknown" if cost["total_usd"] is None else f"${cost['total_usd']:,.2f}"
        lines.append(
            f"judge ({cost['mode']}): {per} per cell, {tot} for the {cost['cells']} cell(s) still to judge "
            f"({cost['method']}; replies assumed as long as the references); {_judge_time(plan, cost, n_items, rates)}"
        )
    lines.append(f"stages to run: {len(plan.pending())} of {len(plan.stages)}")
    return "\n".join(lines)


def _totals(
    plan: StudyPlan, estimates: list[CellEstimate], work: Workload, rates: Rates, executor: str, gpus: int | None
) -> list[str]:
    todo = [e for e in estimates if set(e.sources.values()) - {"done"}]
    if not todo:
        return ["time still to run: nothing (every fine-tuning and generation stage is done)"]
    unknown = [e.cell.id for e in todo if e.seconds is None]
    known = [e for e in todo if e.seconds is not None]
    ft = sum(e.finetune_s or 0 for e in known)
    gen = sum(e.eval_s or 0 for e in known)
    gpu_hours = sum((e.seconds or 0) * max(1, e.gpus) for e in known) / 3600
    device = _device(plan)
    lines = [
        f"assumed workload: {work.train_items} training items x {plan.spec.lora().get('epochs', 3)} epochs"
        + (f" (or {plan.spec.lora()['max_steps']} steps)" if plan.spec.lora().get("max_steps") else "")
        + f", about {work.tokens_per_example:.0f} tokens each ({1 / rates.tokens_per_char:.0f} characters per token); "
        f"{work.test_items} items per cell, every reply at max_gen_toks (an upper bound)"
    ]
    unit, kind = ("GPU-hours", "GPU") if device == "cuda" else ("CPU-worker-hours", "CPU")
    total = f"fine-tuning {_hours(ft)} + generation {_hours(gen)} = {gpu_hours:.2f} {unit}"
    if unknown:
        lines.append(
            f"{kind} time still to run: unknown in total: {len(unknown)} cell(s) without an estimate "
            f"({', '.join(unknown[:4])}{', ...' if len(unknown) > 4 else ''}); the others: {total}"
        )
    else:
        lines.append(f"{kind} time still to run: {total}")
    if device == "cuda":
        lines.append(_by_backend(plan, work, rates))
    slots, words = _slots(plan, executor, gpus)
    wall = makespan(todo, slots) if slots else max((e.seconds for e in todo if e.seconds is not None), default=None)
    if wall is None or unknown:
        lines.append(f"wall time on {words}: unknown (cells without an estimate)")
    else:
        lines.append(f"wall time on {words}: about {_hours(wall)} (cells scheduled longest first)")
    lines.append(
        f"rates: {rates.source} on {rates.machine(device)}"
        + ("" if rates.measured else "; measure them with benchmarks/gpu_check.sh and pass --rates results.json")
        + "; rates measured by this study's finished stages win"
    )
    return lines


def _by_backend(plan: StudyPlan, work: Workload, rates: Rates) -> str:
    """Generation time still to run through each backend the grid can use, and which one it uses here."""
    chosen, why = study_backend(plan)
    assumed = (assumed_rates().devices.get("cuda") or {}).get("generate_tokens_per_s") or {}
    given = (rates.devices.get("cuda") or {}).get("generate_tokens_per_s") or {}
    priced = []
    for backend in ("hf", "vllm"):
        seconds = [e.eval_s for e in estimate_cells(plan, work, rates, backend) if e.cell.model is not None]
        total = None if None in seconds else sum(s or 0 for s in seconds)
        source = " (assumed rate)" if not rates.measured or given.get(backend) == assumed.get(backend) else ""
        priced.append(f"{backend} {_hours(total)}{source}")
    return f"generation by backend: {', '.join(priced)}; this study uses {chosen} ({why})"


def _judge_time(plan: StudyPlan, cost: dict[str, Any], n_items: int, rates: Rates) -> str:
    if cost["mode"] == "batch":
        hours = rates.judge.get("batch_hours_limit", 24)
        return f"time: one batch for every cell, results within {hours} h (the batch API's limit; usually far less)"
    per_call = float(rates.judge.get("sync_seconds_per_call", 8))
    concurrency = int(cost["concurrency"])
    seconds = cost["calls"] * per_call / max(1, concurrency)
    return f"time: about {_hours(seconds)} at {concurrency} calls at once ({per_call:.0f} s a call, assumed)"


def stand_in_run(spec: Any) -> RunDirectory:
    """The split's items with the reference as reply: what a judge cost estimate needs before
    any reply exists (replies assumed as long as the references)."""
    dataset = load_dataset(spec.data)
    gens = [
        Generation(
            item_id=i.item_id,
            task=spec.task,
            persona_id=i.persona_id,
            conversation_id=i.conversation_id,
            turn=i.turn,
            scenario=i.scenario or "",
            split=i.split,
            history=i.history,
            client_utterance=i.client_utterance,
            reference_reply=i.reference_reply,
            reply=i.reference_reply,
            prompt="",
        )
        for i in dataset.items_for(spec.split)
    ]
    return RunDirectory(
        Path(spec.name), {"model": {"name": "study estimate"}, "data": dataset.provenance(spec.split)}, gens
    )
