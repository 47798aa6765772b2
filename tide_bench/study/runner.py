"""``tide-bench study STUDY.yaml``: every cell of the grid, resumable, then the board and report.

Each cell is ``finetune`` (fine-tuned cells only) -> ``eval`` -> ``samples`` (K sampled runs,
when the study's ``samples`` names the cell's condition) -> ``epitome`` (when the study names a
local EPITOME scorer) -> ``judge`` (when the study names a judge; it judges the samples too) ->
``epitome_judge`` (when it names an EPITOME judge) -> ``seeker_judge`` (when it names the
seeker's-view judge) -> ``submit``, run through the same Python API as the single commands, into
``<out>/cells/<cell>/``. The GPU stages (finetune, eval, samples, epitome) run on an
executor's workers (:mod:`.executors`: this machine's GPUs, Slurm, Ray), each cell claimed by
one worker at a time (:mod:`.claims`); each judge stage then runs once over every cell (one
batch, one cache in the study folder), then the submissions (``<out>/submissions/``), the study's board
(``<out>/site/``) and the paper-style report (``<out>/report/``). A finished stage is never
redone unless something it depends on changed or its record does not verify (:mod:`.plan`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import TideBenchError
from tide_bench.core.jsonio import write_json
from tide_bench.data.sources import ED_PREFIX as ED_SPEC_PREFIX
from tide_bench.generation import load_run, run_eval
from tide_bench.generation.reference import ALIASES as REFERENCE_ALIASES
from tide_bench.generation.run_dir import RunDirectory
from tide_bench.study.backend import cell_model_args, resolve_backend
from tide_bench.study.plan import (
    CELL_STAGES,
    JUDGE_STAGES,
    JUDGE_SUBDIRS,
    SAMPLES,
    SUPPLEMENT_RUN,
    Cell,
    StagePlan,
    StudyPlan,
    cell_dir,
    forget_later,
    inside,
    mark_done,
    stage_outputs,
)
from tide_bench.study.spec import StudySpec, study_board

Echo = Callable[[str], None]
FINISH_CLAIM = "_finish"  # judging, submissions, board and report: one study process at a time
FAILED_DIR = (
    Path(".study") / "failed"
)  # not in the cell folder: a failure is recorded even when that folder is unusable


@dataclass
class StudyResult:
    plan: StudyPlan
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # cell -> why it stopped (retried on the next run)
    site: Path | None = None
    report: Path | None = None
    submitted: list[str] = field(default_factory=list)  # scheduler job ids (--no-wait)
    unfinished: list[str] = field(default_factory=list)  # cells neither done nor failed when the workers stopped


def identity(name: str) -> str:
    return name


def _model_args(spec: StudySpec, stage: StagePlan, resolve_model: Callable[[str], str], adapter: Path | None) -> str:
    """lm-eval model arguments of a cell; the adapter as its backend loads it (H3: vLLM takes
    ``lora_local_path=``, its rank is read from the adapter; the hf backend takes ``peft=``)."""
    model = stage.cell.model
    assert model is not None
    args = {"pretrained": resolve_model(model.model)}
    if model.revision:
        args["revision"] = model.revision
    args |= {k: str(v) for k, v in model.model_args.items()}
    backend, _ = resolve_backend(spec.eval.get("backend"), spec.eval.get("device"))
    args = cell_model_args(backend, args, str(adapter) if adapter is not None else None)
    return ",".join(f"{k}={v}" for k, v in args.items())


def failure_path(out: Path, cell: Cell) -> Path:
    return out / FAILED_DIR / f"{cell.id}.json"


def read_failure(out: Path, cell: Cell, run_id: str) -> str | None:
    """Why ``cell`` failed in this study invocation (None: not failed in it; a later run retries)."""
    try:
        record = json.loads(failure_path(out, cell).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(record, dict) and record.get("run_id") == run_id:
        return str(record.get("reason"))
    return None


def record_failure(out: Path, cell: Cell, run_id: str, stage: str, reason: str, by: str) -> None:
    path = inside(out, failure_path(out, cell))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(
        path,
        {"run_id": run_id, "stage": stage, "reason": f"{stage}: {reason}", "by": by},
    )


class StudyRunner:
    """Carries out stages of a plan, recording each as it finishes. Paths come from the plan
    (:func:`~tide_bench.study.plan.stage_outputs`), never from a record, and are checked to lie
    inside ``--out``."""

    def __init__(
        self,
        spec: StudySpec,
        out: Path,
        resolve_model: Callable[[str], str] = identity,
        echo: Echo = print,
        worker: str = "main",
        claim: Any = None,
    ) -> None:
        self.spec, self.out, self.resolve_model, self.echo = spec, Path(out), resolve_model, echo
        self.worker, self.claim = worker, claim

    def path(self, cell: Cell, stage: str) -> Path:
        """A stage's output folder, inside ``--out``."""
        rel = next(iter(stage_outputs(self.spec, cell, stage).values()))  # the first: the cell's own run's
        return inside(self.out, self.out / rel)

    def supplement_path(self, cell: Cell, stage: str) -> Path:
        """The cell's risk-supplement run (``eval``) or its judge folder (``judge``), inside ``--out``."""
        return inside(self.out, self.out / stage_outputs(self.spec, cell, stage)[SUPPLEMENT_RUN])

    # -------------------------------------------------------------- stages
    def finetune(self, stage: StagePlan) -> dict[str, Any]:
        """LoRA for a fine-tuned cell. After an interruption it continues from the latest complete
        checkpoint (M5), and a finished adapter of the same settings is kept, not trained again."""
        from dataclasses import replace

        from tide_bench.core.jsonio import read_json
        from tide_bench.finetune import finetune
        from tide_bench.finetune.outputs import complete_checkpoints, saved_settings_match
        from tide_bench.generation.manifest import ADAPTER_CARD

        model = stage.cell.model
        assert model is not None
        adapter = self.path(stage.cell, "finetune")
        config = replace(self.spec.finetune_config(model, self.resolve_model(model.model), adapter), overwrite=False)
        started = time.perf_counter()
        same_run = saved_settings_match(config)
        if same_run and (adapter / ADAPTER_CARD).is_file():
            card, how = read_json(adapter / ADAPTER_CARD), "kept (finished before the interruption)"
        else:
            resume = same_run and bool(complete_checkpoints(adapter))
            config = replace(config, resume="latest") if resume else replace(config, overwrite=True)
            how = "resumed from its latest checkpoint" if resume else "trained"
            card = finetune(config)
        training = card.get("training", {}) if isinstance(card, dict) else {}
        if training.get("beats_base") is False:
            self.echo(
                f"[study] {stage.cell.id}: warning: no evaluated step beat the untrained model's validation loss; the "
                "fine-tuned entry is the least bad adapter (its submission says so)"
            )
        return {
            "seconds": round(time.perf_counter() - started, 1),
            "tokens_per_second": training.get("tokens_per_second"),
            "tokens": training.get("tokens"),
            "train_seconds": training.get("train_seconds"),
            "beats_base": training.get("beats_base"),
            "adapter": how,
        }

    def _generation(self, stage: StagePlan) -> tuple[str | None, str, bool]:
        """The lm-eval backend (None: the study's ``eval.backend``), model arguments and chat setting of
        a cell's generation (the reference cell: its replies are the references)."""
        cell = stage.cell
        if cell.model is None:
            return REFERENCE_ALIASES[0], "", False
        adapter = self.path(cell, "finetune") if "finetune" in cell.stages else None
        return None, _model_args(self.spec, stage, self.resolve_model, adapter), cell.model.chat_template

    def eval(self, stage: StagePlan) -> dict[str, Any]:
        cell = stage.cell
        run_dir = self.path(cell, "eval")
        backend, args, chat = self._generation(stage)
        config = self.spec.eval_config(backend=backend, model_args=args, output_dir=run_dir, chat=chat)
        manifest = json.loads(run_eval(config).read_text(encoding="utf-8"))
        if self.spec.answers_supplement(cell.model):  # the same model, prompt and settings on the risk supplement
            run_eval(
                self.spec.supplement_eval_config(
                    backend=backend, model_args=args, output_dir=self.supplement_path(cell, "eval"), chat=chat
                )
            )
        timings = manifest.get("timings") or {}
        generate_s = (timings.get("total_s") or 0) - (timings.get("model_load_s") or 0)
        n = manifest.get("n_generations") or 0
        return {
            "backend": config.model,
            "items": n,
            "seconds": timings.get("total_s"),
            "items_per_second": round(n / generate_s, 3) if generate_s > 0 else None,
            "max_gen_toks": config.gen_kwargs["max_gen_toks"] if config.gen_kwargs else None,
        }

    def samples(self, stage: StagePlan) -> dict[str, Any]:
        """The cell's K sampled runs (``tide-bench eval --samples K``: the eval's settings, sampling on,
        seeded), for consistency across samples. A redone stage starts the set afresh: a sample of
        other settings is never kept."""
        import shutil

        from tide_bench.generation.sampled import run_samples

        folder = self.path(stage.cell, "samples")
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder)
        backend, args, chat = self._generation(stage)
        config = self.spec.samples_eval_config(
            self.spec.eval_config(backend=backend, model_args=args, output_dir=folder, chat=chat)
        )
        started = time.perf_counter()
        k = self.spec.samples_for(stage.cell.model, stage.cell.condition)
        run_samples(config, k)
        seconds = time.perf_counter() - started
        items = sum(len(load_run(folder / f"sample-{s}").generations) for s in range(1, k + 1))
        rate = round(items / seconds, 3) if seconds > 0 else None  # model loads included: one per sample
        return {"samples": k, "items": items, "seconds": round(seconds, 1), "items_per_second": rate}

    def epitome(self, stage: StagePlan) -> dict[str, Any]:
        """The local EPITOME scorer over the cell's run (``epitome.json`` and the per-item
        ``epitome_*`` fields): a worker stage, since the scorer is a model (on the cell's GPU when
        it has one), run once per cell after its generation."""
        from tide_bench.generation.epitome_runs import score_run

        settings = dict(self.spec.epitome or {})
        run_dir = self.path(stage.cell, "eval")
        target = self.path(stage.cell, "epitome")
        started = time.perf_counter()
        record = score_run(
            run_dir,
            settings["model"],
            device=str(settings.get("device", "auto")),
            batch_size=int(settings.get("batch_size", 64)),
        )
        if not target.is_file():
            raise TideBenchError(f"the EPITOME scores were not written to {target}")
        seconds = time.perf_counter() - started
        n = record["summary"]["n_items"]
        return {
            "items": n,
            "seconds": round(seconds, 2),
            "replies_per_second": round(n / seconds, 1) if seconds else None,
        }

    def judge_all(self, plan: StudyPlan, result: StudyResult, name: str = "judge") -> None:
        """The judge stage of every cell whose replies are ready, as one stage (issue 29): all their
        items go to the judge together (one batch in batch mode), every answer is cached in the
        study folder (``<out>/judge/cache.sqlite``) as it arrives, and each cell's judgments are then
        written from that cache without another call. An interrupted or repeated judge stage, from
        whichever machine, pays only for what no earlier run was answered. ``name``: ``judge``, or
        ``epitome_judge`` (the study's ``epitome_judge`` with the EPITOME rubric: one stage in
        ``<out>/judge-epitome/``, with its own cache; each cell's in ``RUN/judge-epitome``), or
        ``seeker_judge`` (the seeker's view, in ``<out>/judge-seeker/`` and ``RUN/judge-seeker``). The
        ``judge`` stage also judges each cell's risk-supplement run and its samples (``sample-N/judge``)."""
        from dataclasses import replace

        from tide_bench.generation.sampled import read_samples_listing
        from tide_bench.judging import judge_run

        stages = [
            s
            for s in plan.stages
            if s.stage == name and not s.done and s.cell.id not in result.failed and self._ready(plan, s)
        ]
        if not stages:
            return
        config = self.spec.judge_config(name)
        folder = inside(self.out, self.out / JUDGE_SUBDIRS[name])
        options = replace(self.spec.judge_options(name), cache_path=folder / "cache.sqlite")  # one cache for all cells
        runs = {s.cell.id: load_run(self.path(s.cell, "eval")) for s in stages}
        combined = self._judge_together(runs, folder, options, name, stages, result)
        if combined is None:
            return
        supplements = {
            s.cell.id: load_run(self.supplement_path(s.cell, "eval"))
            for s in stages
            if name == "judge" and self.spec.answers_supplement(s.cell.model)
        }
        if supplements and not self._judge_together(
            supplements, folder / SUPPLEMENT_RUN, options, name, stages, result
        ):
            return
        samples = {  # cell -> its sampled runs
            s.cell.id: [load_run(run) for run in read_samples_listing(self.path(s.cell, "samples"))]
            for s in stages
            if name == "judge" and SAMPLES in stage_outputs(self.spec, s.cell, name)
        }
        every_sample = {f"{cell}/{run.root.name}": run for cell, runs in samples.items() for run in runs}
        if every_sample and not self._judge_together(every_sample, folder / SAMPLES, options, name, stages, result):
            return
        for s in stages:
            forget_later(self.out, plan, s)
            out = self.path(s.cell, name)
            summary = judge_run(runs[s.cell.id], out, config, replace(options, preflight=False)).summary
            if s.cell.id in supplements:  # from the cache the combined pass filled: no call
                judge_run(
                    supplements[s.cell.id],
                    self.supplement_path(s.cell, name),
                    config,
                    replace(options, preflight=False),
                )
            for sample in samples.get(s.cell.id, []):  # each sample's judgments, from the same cache
                judge_run(sample, sample.root / "judge", config, replace(options, preflight=False))
            mark_done(
                self.out,
                self.spec,
                s,
                {
                    "n_scored": summary.get("n_scored"),
                    "n_unscored": summary.get("n_unscored"),
                    "calls_for_all_cells": combined.calls_made,
                    "cost_usd_for_all_cells": (combined.summary.get("cost_usd") or {}).get("this_run"),
                },
                by=self.worker,
            )
            result.ran.append(f"{s.cell.id}/{name}")

    def _judge_together(
        self, runs: dict[str, RunDirectory], folder: Path, options: Any, name: str, stages: list[StagePlan],
        result: StudyResult,
    ) -> Any:  # fmt: skip
        """Every item of ``runs`` (one data source) judged as one run into ``folder``, with ``options``'
        cache (the study's); the result, or None when it failed (each stage's cell is then marked failed)."""
        from tide_bench.judging import judge_run

        first = next(iter(runs.values()))
        together = RunDirectory(
            folder,
            {"model": {"name": f"study {self.spec.name}: {len(runs)} cell(s)"}, "data": first.manifest.get("data")},
            [g for run in runs.values() for g in run.generations],
        )
        self.echo(f"[study] {name}: {len(together.generations)} items of {len(runs)} cell(s), one stage")
        try:
            return judge_run(together, folder, self.spec.judge_config(name), options)
        except TideBenchError as exc:
            for s in stages:
                result.failed[s.cell.id] = f"{name}: {str(exc).splitlines()[0]}"
            self.echo(f"[study] {name}: FAILED: {exc}")
            return None

    def submit(self, stage: StagePlan) -> dict[str, Any]:
        from tide_bench.leaderboard import create_submission

        cell = stage.cell
        run_dir = self.path(cell, "eval")
        meta = self.meta(stage, load_run(run_dir))
        meta_path = inside(self.out, cell_dir(self.out, cell) / "submission.yaml")
        meta_path.write_text(yaml.safe_dump(meta, sort_keys=False, allow_unicode=True), encoding="utf-8")
        folder = self.path(cell, "submit")
        supplement = self.supplement_path(cell, "eval") if self.spec.answers_supplement(cell.model) else None
        sampled = self.spec.samples_for(cell.model, cell.condition) > 0
        check = create_submission(
            run_dir,
            meta_path,
            inside(self.out, folder.parent),
            overwrite=True,
            board=study_board(self.spec),
            risk_supplement=supplement,
            seeker_judge=self.path(cell, "seeker_judge") if self.spec.seeker_judge is not None else None,
            samples=self.path(cell, "samples") if sampled else None,
        )
        if Path(check.folder).resolve() != folder.resolve():
            raise TideBenchError(f"the submission was written to {check.folder}, not {folder}")
        return {}

    def meta(self, stage: StagePlan, run: RunDirectory) -> dict[str, Any]:
        """submission.yaml of a cell, from the study file (never typed by hand)."""
        cell, spec = stage.cell, self.spec
        sid = f"{spec.name}-{cell.id}"
        base: dict[str, Any] = {
            "schema_version": 1,
            "id": sid,
            "contact": f"study {spec.name}",
            "license": "see the model card",
            "notes": f"tide-bench study {spec.name}, cell {cell.id}",
        }
        if cell.model is None:
            return base | {
                "model_name": run.model_name,
                "model": {"api_model_id": run.model_name},
                "parameters": None,
                "condition": "reference",
            }
        model = cell.model
        name = f"{model.id} ({cell.condition})"
        if not model.verified:
            base["notes"] += "; this model's presence in the paper's list is not verified"
        meta = base | {
            "model_name": name,
            "model": {"hub_id": model.model, "revision": model.revision or "main"},
            "parameters": model.parameters or run.manifest.get("model", {}).get("num_parameters"),
            "condition": cell.condition,
        }
        adapter = run.manifest.get("model", {}).get("adapter")
        if adapter:  # what the fine-tuned entry was trained from, as its adapter card records it
            card = adapter.get("card") or {}
            if (card.get("training") or {}).get("beats_base") is False:
                meta["notes"] = (
                    base["notes"] + "; the adapter's best validation loss did not beat the untrained model's (L4): "
                    "the least bad adapter is evaluated"
                )
            meta |= {
                "base_model": model.model,
                "adapter": {
                    "path": Path(adapter["path"]).name,
                    "card": {k: card[k] for k in ("base_model", "data", "training") if k in card},
                },
            }
        if spec.data == "sample":
            meta["demo"] = True
        return meta

    # -------------------------------------------------------------- running
    def _ready(self, plan: StudyPlan, stage: StagePlan) -> bool:
        """Whether every stage before ``stage`` in its cell is done."""
        for other in plan.for_cell(stage.cell.id):
            if other is stage:
                return True
            if not other.done:
                return False
        return True

    def run_stage(self, plan: StudyPlan, stage: StagePlan) -> None:
        """One stage: later records of its cell forgotten, the work, the claim checked, the record."""
        forget_later(self.out, plan, stage)
        measured = getattr(self, stage.stage)(stage)
        if self.claim is not None:
            self.claim.check()  # never record work this worker no longer owns
        mark_done(self.out, self.spec, stage, measured, by=self.worker)

    def run_cell(self, plan: StudyPlan, cell: Cell, run_id: str, stages: tuple[str, ...] = CELL_STAGES) -> list[str]:
        """The pending ``stages`` of one cell, in order; returns the labels run. A user error (a
        model that cannot load) stops the cell: it is recorded as failed in this invocation, with
        the reason, leaves no stage record, and is retried by the next run."""
        ran: list[str] = []
        for stage in plan.for_cell(cell.id):
            if stage.stage not in stages or stage.done:
                continue
            label = f"{cell.id}/{stage.stage}"
            self.echo(f"[study] {label}: running ({self.worker})")
            try:
                self.run_stage(plan, stage)
            except TideBenchError as exc:
                record_failure(self.out, cell, run_id, stage.stage, str(exc).splitlines()[0], self.worker)
                self.echo(f"[study] {label}: FAILED: {exc}")
                break
            ran.append(label)
        return ran

    def finish(self, plan: StudyPlan, result: StudyResult, *, report: bool) -> None:
        """The study-level stages, once every cell's generation is done: judging (one stage over all
        cells per judge: the TIDE judge, then the EPITOME judge), the submissions, then the board, the
        report and (on EmpatheticDialogues data) the LLMs-vs-people comparison."""
        for name in JUDGE_STAGES:
            self.judge_all(plan, result, name)
        for stage in plan.stages:
            if stage.stage != "submit" or stage.done or stage.cell.id in result.failed or not self._ready(plan, stage):
                continue
            try:
                self.run_stage(plan, stage)
            except TideBenchError as exc:
                result.failed[stage.cell.id] = f"submit: {str(exc).splitlines()[0]}"
                self.echo(f"[study] {stage.cell.id}/submit: FAILED: {exc}")
                continue
            result.ran.append(f"{stage.cell.id}/submit")
        if report:
            from tide_bench.study.report import write_report

            result.report = write_report(self.spec, self.out, plan)
            people = None
            if self.spec.data.startswith(ED_SPEC_PREFIX):
                from tide_bench.study.people import write_comparison

                people = write_comparison(self.spec, self.out, plan)
            built = build_board(self.spec, self.out, report=result.report, people=people)
            for sid, errors in built.refused.items():
                self.echo(f"[study] board refused {sid}: {'; '.join(errors)}")
            result.site = built.out / "index.html"


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool) -> Any:
    if not enabled or not total:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc="study stages", unit="stage", mininterval=0)


def build_board(spec: StudySpec, out: Path, report: Path | None = None, people: Path | None = None) -> Any:
    """The study's board over its submissions, with the study's report (and, on ED, the LLMs-vs-people
    comparison) as sections of its page."""
    from tide_bench.leaderboard import build_site
    from tide_bench.leaderboard.site.html import render_section
    from tide_bench.study.people import people_html
    from tide_bench.study.report import report_html

    sections = [render_section("Study report", report_html(report), "study-report")] if report else []
    if people is not None:
        sections.append(render_section("LLM replies vs people", people_html(people), "people-report"))
    # risk_supplement: false in the study file is its maintainer's explicit choice: a TIDE board then carries a
    # banner over the table instead of being refused (leaderboard.scoring.risk_gate)
    return build_site(
        out / "submissions",
        out / "site",
        study_board(spec),
        extra_sections=sections,
        allow_risk_gate_off=spec.risk_supplement is False,
    )
