"""The grid of a study as cells and stages, each stage keyed by a fingerprint of its inputs.

Why fingerprints: a study of eight models takes GPU days and judge dollars, and is stopped and
restarted. Each stage records, when it finishes, the fingerprint of everything it depended on
(``<out>/cells/<cell>/<stage>.done.json``). A rerun skips a stage whose recorded fingerprint
equals the current one, and redoes it otherwise; since each fingerprint includes the previous
stage's, a changed LoRA setting redoes the fine-tuned cells' chain and nothing else, and an
interrupted stage (no record) is redone from the start of that stage (the judge's own cache
makes a redone judge stage pay only for what was not judged; fine-tuning resumes from its
latest checkpoint).

A record is trusted only after it is verified (issue 32, N8): it hashes itself
(``record_sha256``), the outputs it names must be exactly the paths this plan derives for its
stage (inside ``--out``; the runner never takes a path from a record), and the files it
produced must still have the hashes it recorded (``artifacts``). A record that fails any of
this is not trusted: the stage is redone, and the plan says why. Once a stage of a cell is to
run, every later stage of that cell is too.
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

# samples (K sampled runs, issue 49), epitome (the local scorer), epitome_judge (an EPITOME-rubric judge)
# and seeker_judge (the seeker's view) run only when the study file names them, samples only in the
# cells it names; a study without them plans, and fingerprints, exactly as before.
STAGES = ("finetune", "eval", "samples", "epitome", "judge", "epitome_judge", "seeker_judge", "submit")
OPTIONAL_STAGES = {  # stage -> spec field
    "judge": "judge",
    "epitome_judge": "epitome_judge",
    "epitome": "epitome",
    "seeker_judge": "seeker_judge",
}
# run by the executor's workers (GPU: training, generation, the local EPITOME scorer's model); the
# judges (JUDGE_STAGES, each one stage over every cell) and submit run once, in the study process
CELL_STAGES = ("finetune", "eval", "samples", "epitome")
JUDGE_STAGES = ("judge", "epitome_judge", "seeker_judge")
REFERENCE_CELL = "reference"
EPITOME_JUDGE_SUBDIR = "judge-epitome"  # the EPITOME-rubric judge's folder inside a cell's run
SEEKER_JUDGE_SUBDIR = "judge-seeker"  # the seeker's-view judge's folder inside a cell's run
JUDGE_SUBDIRS = {"judge": "judge", "epitome_judge": EPITOME_JUDGE_SUBDIR, "seeker_judge": SEEKER_JUDGE_SUBDIR}
SUPPLEMENT_RUN = "risk_supplement"  # a cell's run on the risk supplement: cells/<cell>/risk_supplement/run
SAMPLES = "samples"  # a cell's K sampled runs: cells/<cell>/samples/sample-N (their judgments in sample-N/judge)


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
    distrusted: str | None = None  # why a record on disk was not trusted


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


def submission_id(spec: StudySpec, cell: Cell) -> str:
    return f"{spec.name}-{cell.id}"


def stage_outputs(spec: StudySpec, cell: Cell, stage: str) -> dict[str, str]:
    """The outputs a stage writes, relative to ``--out``: derived here, never read from a record."""
    base = f"cells/{cell.id}"
    supplement = spec.answers_supplement(cell.model)
    samples = {SAMPLES: f"{base}/{SAMPLES}"} if spec.samples_for(cell.model, cell.condition) else {}
    return {
        "finetune": {"adapter": f"{base}/adapter"},
        "eval": {"run": f"{base}/run"} | ({SUPPLEMENT_RUN: f"{base}/{SUPPLEMENT_RUN}/run"} if supplement else {}),
        "samples": samples,
        "epitome": {"epitome": f"{base}/run/epitome.json"},  # generation/epitome_runs.py SCORES_NAME
        "judge": {"judge": f"{base}/run/judge"}
        | ({SUPPLEMENT_RUN: f"{base}/{SUPPLEMENT_RUN}/run/judge"} if supplement else {})
        | samples,  # each sample judged into sample-N/judge
        "epitome_judge": {"judge": f"{base}/run/{EPITOME_JUDGE_SUBDIR}"},
        "seeker_judge": {"judge": f"{base}/run/{SEEKER_JUDGE_SUBDIR}"},
        "submit": {"submission": f"submissions/{submission_id(spec, cell)}"},
    }[stage]


def inside(out: Path, path: Path) -> Path:
    """``path`` if it lies inside ``out`` once every link is followed; else a ConfigError (N8:
    no output outside ``--out`` is ever written, also through a symlinked cell folder)."""
    root, resolved = Path(out).resolve(), Path(path).resolve()
    if resolved != root and root not in resolved.parents:
        from tide_bench.core.errors import ConfigError

        raise ConfigError(
            f"refusing to write {path}: it resolves to {resolved}, outside the study folder {root}",
            hint="a cell folder or output was replaced by a link pointing elsewhere; remove it and rerun",
        )
    return path


def artifact_hashes(out: Path, stage: str, outputs: dict[str, str]) -> dict[str, str | None]:
    """sha256 of what a stage produced (the adapter's files, run.json, epitome.json, judgments, the
    submission's meta; a set of samples' listing and each sample's run.json or judgments)."""
    from tide_bench.core.hashing import sha256_file
    from tide_bench.generation.manifest import adapter_sha256

    def file_hash(rel: str) -> str | None:
        path = out / rel
        return sha256_file(path) if path.is_file() else None

    if stage == "finetune":
        return {outputs["adapter"]: adapter_sha256(out / outputs["adapter"])}
    if stage == "samples":
        return _samples_hashes(out, outputs[SAMPLES], "run.json") | {
            f"{outputs[SAMPLES]}/samples.json": file_hash(f"{outputs[SAMPLES]}/samples.json")
        }
    rel = {
        "eval": f"{outputs.get('run')}/run.json",
        "epitome": str(outputs.get("epitome")),
        "judge": f"{outputs.get('judge')}/judgments.jsonl",
        "epitome_judge": f"{outputs.get('judge')}/judgments.jsonl",
        "seeker_judge": f"{outputs.get('judge')}/judgments.jsonl",
        "submit": f"{outputs.get('submission')}/submission.yaml",
    }[stage]
    hashes = {rel: file_hash(rel)}
    if stage == "judge" and SAMPLES in outputs:
        hashes |= _samples_hashes(out, outputs[SAMPLES], "judge/judgments.jsonl")
    if SUPPLEMENT_RUN in outputs:  # the cell's risk-supplement run, or its judgments
        extra = f"{outputs[SUPPLEMENT_RUN]}/{'run.json' if stage == 'eval' else 'judgments.jsonl'}"
        hashes[extra] = file_hash(extra)
    return hashes


def _samples_hashes(out: Path, rel: str, name: str) -> dict[str, str | None]:
    """sha256 of ``name`` in each sample folder of a set (``sample-N/<name>``), by the set's listing
    when it is readable, else of none (an unfinished set: its stage is redone)."""
    from tide_bench.core.errors import TideBenchError
    from tide_bench.core.hashing import sha256_file
    from tide_bench.generation.sampled import read_samples_listing

    try:
        runs = read_samples_listing(out / rel)
    except TideBenchError:
        return {f"{rel}/samples.json": None}
    hashes: dict[str, str | None] = {}
    for run in runs:
        path = run / name
        hashes[f"{rel}/{run.name}/{name}"] = sha256_file(path) if path.is_file() else None
    return hashes


def record_digest(record: dict[str, Any]) -> str:
    return sha256_json({k: v for k, v in record.items() if k != "record_sha256"})


def verify_record(out: Path, spec: StudySpec, stage: StagePlan, record: dict[str, Any] | None) -> str | None:
    """Why ``record`` cannot be trusted for ``stage`` (None: trusted)."""
    if record is None:
        return "no record"
    if record.get("record_sha256") != record_digest(record):
        return "the record's own hash does not match its content (edited or damaged)"
    if record.get("fingerprint") != stage.fingerprint:
        return "its inputs changed"
    if record.get("cell") != stage.cell.id or record.get("stage") != stage.stage:
        return f"it is the record of {record.get('cell')!r}/{record.get('stage')!r}, not of this stage"
    expected = stage_outputs(spec, stage.cell, stage.stage)
    if record.get("outputs") != expected:
        return f"it names outputs {record.get('outputs')!r}, not this stage's {expected!r}"
    recorded = record.get("artifacts")
    if not isinstance(recorded, dict) or not recorded:
        return "it records no hash of its outputs"
    try:
        for rel in expected.values():
            inside(out, out / rel)
    except Exception as exc:  # ConfigError: a link pointing outside
        return str(exc).splitlines()[0]
    current = artifact_hashes(out, stage.stage, expected)
    if current != recorded or None in current.values():
        return "its outputs changed or are missing since it was written"
    return None


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
        inputs = {"model": model, **data, "task": spec.task, "eval": spec.eval, "reference": cell.model is None}
        return inputs | ({SUPPLEMENT_RUN: True} if spec.answers_supplement(cell.model) else {})
    if stage == "samples":
        k = spec.samples_for(cell.model, cell.condition)
        return {"k": k, "temperature": (spec.samples or {}).get("temperature")}
    if stage == "judge":
        return {"judge": spec.judge}
    if stage == "epitome_judge":
        return {"judge": spec.epitome_judge, "rubric": "epitome"}
    if stage == "seeker_judge":
        return {"judge": spec.seeker_judge, "rubric": "perceived"}
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


def applies(spec: StudySpec, cell: Cell, stage: str) -> bool:
    """Whether ``cell`` has ``stage`` in this study: an optional stage only when the study names it,
    the samples only in the cells of ``samples.conditions`` (with a judge)."""
    if stage in OPTIONAL_STAGES and getattr(spec, OPTIONAL_STAGES[stage]) is None:
        return False
    return stage != "samples" or spec.samples_for(cell.model, cell.condition) > 0


def make_plan(spec: StudySpec, out: Path) -> StudyPlan:
    """Every stage of every cell, with its fingerprint and whether a verified record exists."""
    out = Path(out)
    plan = StudyPlan(spec, out)
    for cell in cells(spec):
        previous, chain_done = "", True
        for stage in cell.stages:
            if not applies(spec, cell, stage):
                continue
            inputs = _inputs(spec, cell, stage)
            fingerprint = sha256_json({"stage": stage, "inputs": inputs, "previous": previous})[:16]
            planned = StagePlan(cell, stage, fingerprint, inputs)
            path = _done_path(out, cell, stage)
            record = _read_record(path)
            why = verify_record(out, spec, planned, record) if chain_done else "an earlier stage of its cell is to run"
            planned.done, planned.record = why is None, record if why is None else None
            if why is not None and path.exists() and why != "its inputs changed":
                planned.distrusted = why
            chain_done = chain_done and planned.done
            plan.stages.append(planned)
            previous = fingerprint
    return plan


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        if path.is_symlink() or path.stat().st_size > 1_000_000:
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def mark_done(
    out: Path,
    spec: StudySpec,
    stage: StagePlan,
    measured: dict[str, Any] | None = None,
    by: str | None = None,
) -> None:
    """Record a finished stage (written last, atomically: no record means not finished), with the
    hashes of what it produced and of itself."""
    outputs = stage_outputs(spec, stage.cell, stage.stage)
    record = {
        "cell": stage.cell.id,
        "stage": stage.stage,
        "fingerprint": stage.fingerprint,
        "inputs": stage.inputs,
        "finished_at": utc_now(),
        "by": by,
        "outputs": outputs,
        "artifacts": artifact_hashes(out, stage.stage, outputs),
        "measured": measured or {},
    }
    record = redact_record(record)  # no credential in a record; the digest covers what is written
    record["record_sha256"] = record_digest(record)
    write_json(inside(out, _done_path(out, stage.cell, stage.stage)), record)
    stage.done, stage.record = True, record


def forget_later(out: Path, plan: StudyPlan, stage: StagePlan) -> None:
    """A redone stage invalidates the records after it in its cell."""
    later = False
    for other in plan.for_cell(stage.cell.id):
        if other is stage:
            later = True
            continue
        if later:
            inside(out, _done_path(out, other.cell, other.stage)).unlink(missing_ok=True)
            other.done, other.record = False, None


def study_run_dirs(folder: Path) -> list[Path] | None:
    """The generated runs inside a study's output folder (``cells/*/run`` with a run.json), in cell
    order; None when ``folder`` is not a study folder, so callers can accept either kind of path."""
    folder = Path(folder)
    if (folder / "run.json").is_file() or not (folder / "cells").is_dir():
        return None
    return sorted(p.parent for p in (folder / "cells").glob("*/run/run.json") if p.is_file())
