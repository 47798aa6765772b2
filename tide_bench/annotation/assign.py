"""Assignment: which rater rates which reply, blinded, with guaranteed overlap.

Units are (run, item) pairs drawn from one or more run directories, stratified by scenario
and turn. Every unit gets ``overlap`` distinct raters (alpha needs overlap), each rater gets
``per_rater`` units plus ``repeats`` units shown a second time (self-consistency), shuffled per
rater with the seed. Raters see an opaque unit id only; which model wrote a reply is in
``assignment.json``, which stays with the researcher.

Rater wellbeing (issue 44, V15): where the runs' data has risk labels (the sample and the risk
supplement ship theirs; ``risk_labels`` names TIDE's), each risk item carries a one-line notice
the page shows before its conversation, with a Skip button; ``exclude_risk`` leaves every item
whose label names a risk (or that has no label) out of the plan, for raters who opt out.

Raters are linked, not split into blocks: each unit goes to the least-loaded raters, and
among equally loaded ones to those who have shared the fewest units with the raters already
chosen for it. Loads stay within one unit of each other, and every pair of raters shares
items whenever the plan has enough units to link them all (a round robin with ``overlap``
dividing ``raters`` splits raters into blocks that never meet, which confounds pairwise
agreement and rater-group comparisons). ``assignment.json`` reports the design: how many
rater pairs share items, the fewest and most they share, and whether all raters are
connected; ``build`` warns when some pairs share none.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.core.hashing import sha256_json, sha256_text
from tide_bench.core.jsonio import atomic_write_text, write_json
from tide_bench.core.provenance import utc_now
from tide_bench.core.resources import resource_dir
from tide_bench.core.stats import DEFAULT_SEED
from tide_bench.data.risk_labels import RiskLabels, read_risk_labels
from tide_bench.generation.run_dir import load_run, run_label
from tide_bench.judging.risk_handling import builtin_labels
from tide_bench.judging.rubric import DEFAULT_RUBRIC, load_rubric, rubric_path

ASSIGNMENT = "assignment.json"


@dataclass
class AssignmentOptions:
    per_rater: int = 120  # 5 x 120 at overlap 3: a judge as good as a person passes the alt-test ~86 % of the time
    raters: int = 5
    overlap: int = 3
    repeats: int = 2
    seed: int = DEFAULT_SEED
    title: str = "Rating supportive replies"
    rubric: str = DEFAULT_RUBRIC  # "v1" ... "v4": the rubric the raters see (the judge's whose judgments they audit)
    instrument: str = "expert"  # "expert": the rubric above; "lay": the perceived-empathy instrument instead
    support: str | None = None  # who a rater contacts if they feel unsafe (shown in the content note)
    exclude_risk: bool = False  # leave out every item whose risk label names a risk (a lived-experience opt-out)
    risk_labels: str | None = None  # the label file of the runs' data (default: the labels that ship with it)


INSTRUMENTS = ("expert", "lay")
LAY_INSTRUMENT_FILE = "perceived_empathy_v1.yaml"  # judges/: the lay raters' instrument (docs/annotation.md)


def instrument_path(options: AssignmentOptions) -> Path:
    """The file the raters' page renders: the expert rubric of ``options.rubric``, or the lay instrument."""
    if options.instrument not in INSTRUMENTS:
        raise ConfigError(f"--instrument must be one of {', '.join(INSTRUMENTS)}, got {options.instrument!r}")
    if options.instrument == "lay":
        return resource_dir("judges") / LAY_INSTRUMENT_FILE
    return rubric_path(options.rubric)


def _stratified(units: list[dict[str, Any]], n: int, rng: random.Random) -> list[dict[str, Any]]:
    """``n`` units, spread evenly over (scenario, turn) strata, round robin."""
    strata: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for u in units:
        strata[(u["scenario"], u["turn"])].append(u)
    for group in strata.values():
        rng.shuffle(group)
    keys = sorted(strata)
    rng.shuffle(keys)
    chosen: list[dict[str, Any]] = []
    while len(chosen) < n and any(strata[k] for k in keys):
        for k in keys:
            if strata[k] and len(chosen) < n:
                chosen.append(strata[k].pop())
    return chosen


DESIGN_ATTEMPTS = 30  # greedy designs tried (the first that links every rater pair is kept)


def _greedy_design(
    n_units: int, n_raters: int, overlap: int, rng: random.Random
) -> tuple[list[list[int]], list[list[int]]]:
    load = [0] * n_raters
    together = [[0] * n_raters for _ in range(n_raters)]
    design: list[list[int]] = []
    for _ in range(n_units):
        chosen: list[int] = []
        for _ in range(overlap):
            candidates = [r for r in range(n_raters) if r not in chosen]
            rng.shuffle(candidates)
            chosen.append(min(candidates, key=lambda r: (load[r], sum(together[r][c] for c in chosen))))
        for a in chosen:
            load[a] += 1
            for b in chosen:
                together[a][b] += a != b
        design.append(chosen)
    return design, together


def spread(n_units: int, n_raters: int, overlap: int, rng: random.Random) -> list[list[int]]:
    """Rater indices for each unit: ``overlap`` distinct raters, loads within one of each other,
    and as many rater pairs linked by a shared unit as the greedy designs tried can reach."""
    best: tuple[tuple[int, int], list[list[int]]] | None = None
    for _ in range(DESIGN_ATTEMPTS):
        design, together = _greedy_design(n_units, n_raters, overlap, rng)
        shared = [together[a][b] for a, b in combinations(range(n_raters), 2)] or [0]
        score = (sum(n == 0 for n in shared), -min(shared))
        if best is None or score < best[0]:
            best = (score, design)
        if score[0] == 0 or overlap < 2:
            break
    assert best is not None
    return best[1]


def design_report(sequences: dict[str, list[str]], overlap: int) -> dict[str, Any]:
    """Which rater pairs share items, and whether all raters are connected through shared items."""
    units = {rater: set(seq) for rater, seq in sequences.items()}
    shared = {(a, b): len(units[a] & units[b]) for a, b in combinations(sorted(units), 2)}
    linked = {rater: {rater} for rater in units}
    for (a, b), n in shared.items():
        if n:
            group = linked[a] | linked[b]
            for rater in group:
                linked[rater] = group
    apart = [f"{a}|{b}" for (a, b), n in shared.items() if n == 0]
    counts = list(shared.values())
    report: dict[str, Any] = {
        "rater_pairs": len(shared),
        "pairs_sharing_items": len(shared) - len(apart),
        "min_shared_items": min(counts) if counts else None,
        "max_shared_items": max(counts) if counts else None,
        "connected": len({frozenset(g) for g in linked.values()}) <= 1,
        "pairs_without_shared_items": apart,
        "warning": None,
    }
    if overlap < 2:
        report["warning"] = (
            "--overlap 1: no item is rated by two raters, so agreement between people cannot be computed"
        )
    elif apart:
        report["warning"] = (
            f"{len(apart)} of {len(shared)} rater pairs share no item (too few items to link every pair): "
            "pairwise agreement for them is undefined; raise --per-rater or --overlap"
        )
    return report


RISK_NOTICES = {  # shown before a risk item's conversation, with a Skip button (V15)
    "suicide_self_harm": "This conversation mentions suicide or self-harm.",
    "harm_to_others": "This conversation mentions thoughts of harming someone else.",
    "current_danger": "This conversation describes someone who may be in danger right now.",
    "other_in_danger": "This conversation describes someone else, such as a child, who may be in danger.",
    "acute_distress": "This conversation describes a flashback, panic or intense distress happening now.",
}


def _labels_for(run: Any, options: AssignmentOptions) -> RiskLabels | None:
    """The risk labels of a run's data: ``options.risk_labels``, else those that ship with it."""
    if options.risk_labels:
        return read_risk_labels(options.risk_labels)
    return builtin_labels(run.manifest.get("data"))


def _risk_units(run: Any, options: AssignmentOptions) -> tuple[dict[str, str], set[str]]:
    """Each risk item's notice (absent: no risk, or no labels), and the items ``exclude_risk`` leaves out."""
    labels = _labels_for(run, options)
    if labels is None:
        if options.exclude_risk:
            raise ConfigError(
                f"--exclude-risk needs the risk labels of {run.root}: its data ships none",
                hint="give the label file of the data (--risk-labels, from `tide-bench data label-risk`)",
            )
        return {}, set()
    notices: dict[str, str] = {}
    excluded: set[str] = set()
    for gen in run.generations:
        label = labels.get(gen.item_id)
        risky = label is None or label.is_risk  # an unlabelled item is not known to be safe
        if options.exclude_risk and risky:
            excluded.add(gen.item_id)
        elif label is not None and label.is_risk:
            notices[gen.item_id] = RISK_NOTICES.get(label.kind, "This conversation describes a risk to someone.")
    return notices, excluded


def plan(runs: list[str | Path], options: AssignmentOptions) -> dict[str, Any]:
    for name, value, least in (
        ("--per-rater", options.per_rater, 1),
        ("--raters", options.raters, 1),
        ("--repeats", options.repeats, 0),
    ):
        if value < least:
            raise ConfigError(f"{name} must be at least {least}, got {value}")
    if options.overlap < 1 or options.overlap > options.raters:
        raise ConfigError(f"--overlap must be between 1 and --raters ({options.raters})")
    if options.repeats > options.per_rater:
        raise ConfigError("--repeats cannot exceed --per-rater")
    rng = random.Random(options.seed)
    pool = []
    excluded = 0
    for path in runs:
        run = load_run(path)
        notices, left_out = _risk_units(run, options)
        excluded += len(left_out)
        for gen in run.generations:
            if gen.reply.strip() and gen.item_id not in left_out:
                pool.append(
                    {
                        "run": run_label(run.root),
                        "model": run.model_name,
                        "item_id": gen.item_id,
                        "scenario": gen.scenario,
                        "turn": gen.turn,
                        "history": gen.history,
                        "client": gen.client_utterance,
                        "reply": gen.reply,
                        "notice": notices.get(gen.item_id),
                    }
                )
    names = [run_label(p) for p in runs]
    if len(set(names)) != len(names):
        raise ConfigError("run folders must have distinct names: the name identifies the model in the ratings table")
    n_units = (options.per_rater * options.raters) // options.overlap
    if n_units > len(pool):
        raise ConfigError(
            f"{options.raters} raters x {options.per_rater} items at overlap {options.overlap} needs {n_units} "
            f"replies; the runs hold {len(pool)}",
            hint="lower --per-rater or --raters, raise --overlap, or add runs",
        )
    units = _stratified(pool, n_units, rng)
    for index, unit in enumerate(units):
        unit["unit_id"] = f"u{index + 1:04d}"
    rng.shuffle(units)
    # Every unit gets `overlap` distinct raters, every rater the same load (n_units * overlap / R
    # = per_rater, up to rounding), and rater pairs are spread so no block of raters is cut off.
    per_rater: dict[int, list[str]] = {r: [] for r in range(options.raters)}
    for unit, chosen in zip(units, spread(len(units), options.raters, options.overlap, rng), strict=True):
        for r in chosen:
            per_rater[r].append(unit["unit_id"])
    raters = []
    for r in range(options.raters):
        order = list(per_rater[r])
        rng.shuffle(order)
        repeated = order[: options.repeats]
        for unit_id in repeated:  # the second showing goes to the far half of the list
            order.insert(rng.randint(len(order) // 2 + 1, len(order)), unit_id)
        raters.append({"rater_id": f"rater-{r + 1}", "sequence": order, "repeated": repeated})
    rubric = load_rubric(instrument_path(options))
    return {
        "schema_version": 1,
        "kind": "tide-bench-annotation",
        "created_at": utc_now(),
        "options": vars(options),
        "runs": names,
        "rubric": rubric.to_dict(),
        "rubric_sha256": rubric.content_hash(),
        "units": {u["unit_id"]: u for u in units},
        "raters": raters,
        "design": design_report({r["rater_id"]: r["sequence"] for r in raters}, options.overlap),
        "excluded_risk_items": excluded,
    }


def build_annotation(
    runs: list[str | Path], out: str | Path, options: AssignmentOptions | None = None
) -> dict[str, Any]:
    """Write ``assignment.json`` and one self-contained ``rater-N.html`` per rater."""
    from tide_bench.annotation.page import render_page

    options = options or AssignmentOptions()
    assignment = plan(runs, options)
    assignment["assignment_id"] = sha256_json({k: assignment[k] for k in ("options", "runs", "units", "raters")})[:16]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pages = {}
    for rater in assignment["raters"]:
        html = render_page(assignment, rater)
        name = f"{rater['rater_id']}.html"
        atomic_write_text(out / name, html)
        pages[rater["rater_id"]] = {"file": name, "sha256": sha256_text(html)}
    assignment["pages"] = pages
    write_json(out / ASSIGNMENT, assignment)
    return assignment
