"""The grid of a study as cells and stages, each stage keyed by a fingerprint of its inputs.

Why fingerprints: a study of eight models takes GPU days and judge dollars, and is stopped and
restarted. Each stage records, when it finishes, the fingerprint of everything it depended on
(``<out>/cells/<cell>/<stage>.done.json``). A rerun skips a stage whose recorded fingerprint
equals the current one, and redoes it otherwise; since each fingerprint includes the previous
stage's, a changed LoRA setting redoes the fine-tuned cells' chain and nothing else, and an
interrupted stage (no record) is redone from the start of that stage (the judge's own cache
makes a redone judge stage pay only for what was not judged).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.hashing import sha256_json
from tide_bench.core.jsonio import write_json
from tide_bench.core.provenance import utc_now
from tide_bench.core.secrets import redact_record
from tide_bench.study.spec import ModelSpec, StudySpec

# epitome_judge (an EPITOME-rubric judge) and epitome (the local scorer) run only when the study
# file names them; a study without them plans, and fingerprints, exactly as before.
STAGES = ("finetune", "eval", "judge", "epitome_judge", "epitome", "submit")
OPTIONAL_STAGES = {"judge": "judge", "epitome_judge": "epitome_judge", "epitome": "epitome"}  # stage -> spec field
REFERENCE_CELL = "reference"
EPITOME_JUDGE_SUBDIR = "judge-epitome"  # the EPITOME-rubric judge's folder inside a cell's run


@dataclass(frozen=True)
class Cell:
    """One entry of the grid: a model in a condition, or the TIDE reference."""

    id: str
    condition: str  # zero-shot | fine-tuned | reference
    model: ModelSpec | None = None

    @property
    def stages(self) -> tuple[str, ...]:
        return STAGES if self.condition == "fine-tuned" else STAGES[1:]


@dataclass
class StagePlan:
    cell: Cell
    stage: str
    fingerprint: str
    inputs: dict[str, Any]
    done: bool = False
    record: dict[str, Any] | None = None


@dataclass
class StudyPlan:
    spec: StudySpec
    out: Path
    stages: list[StagePlan] = field(default_factory=list)

    def for_cell(self, cell_id: str) -> list[StagePlan]:
        return [s for s in self.stages if s.cell.id == cell_id]

    @property
    def cells(self) -> list[Cell]:
        seen: dict[str, Cell] = {}
        for s in self.stages:
            seen.setdefault(s.cell.id, s.cell)
        return list(seen.values())

    def pending(self) -> list[StagePlan]:
        return [s for s in self.stages if not s.done]


def cells(spec: StudySpec) -> list[Cell]:
    grid = [Cell(f"{m.id}-{c}", c, m) for m in spec.models for c in spec.conditions]
    if spec.reference:
        grid.append(Cell(REFERENCE_CELL, "reference"))
    return grid


def cell_dir(out: Path, cell: Cell) -> Path:
    return out / "cells" / cell.id


def _done_path(out: Path, cell: Cell, stage: str) -> Path:
    return cell_dir(out, cell) / f"{stage}.done.json"


def _inputs(spec: StudySpec, cell: Cell, stage: str) -> dict[str, Any]:
    """What a stage's result depends on (its own settings; the previous stage is chained in)."""
    model = (
        None
        if cell.model is None
        else {
            "model": cell.model.model,
            "revision": cell.model.revision,
            "model_args": cell.model.model_args,
            "chat_template": cell.model.chat_template,
        }
    )
    data = {"data": spec.data, "split": spec.split}
    if stage == "finetune":
        return {"model": model, "data": spec.data, "lora": spec.lora(), "prompt": spec.prompt}
    if stage == "eval":
        return {"model": model, **data, "task": spec.task, "eval": spec.eval, "reference": cell.model is None}
    if stage == "judge":
        return {"judge": spec.judge}
    if stage == "epitome_judge":
        return {"judge": spec.epitome_judge, "rubric": "epitome"}
    if stage == "epitome":
        return {"epitome": spec.epitome, "card_sha256": _card_sha256(str((spec.epitome or {}).get("model", "")))}
    return {
        "study": spec.name,
        "parameters": None if cell.model is None else cell.model.parameters,
        "verified": None if cell.model is None else cell.model.verified,
    }


def _card_sha256(model_dir: str) -> str | None:
    """The local scorer's identity: a retrained scorer in the same folder redoes the stage."""
    from tide_bench.core.hashing import sha256_file

    card = Path(model_dir) / "card.json"
    return sha256_file(card) if card.is_file() else None


def make_plan(spec: StudySpec, out: Path) -> StudyPlan:
    """Every stage of every cell, with its fingerprint and whether a matching record exists."""
    plan = StudyPlan(spec, out)
    for cell in cells(spec):
        previous = ""
        for stage in cell.stages:
            if stage in OPTIONAL_STAGES and getattr(spec, OPTIONAL_STAGES[stage]) is None:
                continue
            inputs = _inputs(spec, cell, stage)
            fingerprint = sha256_json({"stage": stage, "inputs": inputs, "previous": previous})[:16]
            record = _read_record(_done_path(out, cell, stage))
            done = record is not None and record.get("fingerprint") == fingerprint
            plan.stages.append(StagePlan(cell, stage, fingerprint, inputs, done, record if done else None))
            previous = fingerprint
    return plan


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def mark_done(out: Path, stage: StagePlan, outputs: dict[str, Any], measured: dict[str, Any] | None = None) -> None:
    """Record a finished stage (written last, atomically: no record means not finished)."""
    record = {
        "cell": stage.cell.id,
        "stage": stage.stage,
        "fingerprint": stage.fingerprint,
        "inputs": stage.inputs,
        "finished_at": utc_now(),
        "outputs": outputs,
        "measured": measured or {},
    }
    write_json(_done_path(out, stage.cell, stage.stage), redact_record(record))  # no credential in a record
    stage.done, stage.record = True, record


def forget_later(out: Path, plan: StudyPlan, stage: StagePlan) -> None:
    """A redone stage invalidates the records after it in its cell."""
    later = False
    for other in plan.for_cell(stage.cell.id):
        if other is stage:
            later = True
            continue
        if later:
            _done_path(out, other.cell, other.stage).unlink(missing_ok=True)
            other.done, other.record = False, None


def study_run_dirs(folder: Path) -> list[Path] | None:
    """The generated runs inside a study's output folder (``cells/*/run`` with a run.json), in cell
    order; None when ``folder`` is not a study folder, so callers can accept either kind of path."""
    folder = Path(folder)
    if (folder / "run.json").is_file() or not (folder / "cells").is_dir():
        return None
    return sorted(p.parent for p in (folder / "cells").glob("*/run/run.json") if p.is_file())
