"""``tide-bench study STUDY.yaml``: every cell of the grid, resumable, then the board and report.

Each cell is ``finetune`` (fine-tuned cells only) -> ``eval`` -> ``judge`` (when the study
names a judge) -> ``submit``, run through the same Python API as the single commands, into
``<out>/cells/<cell>/``. Submissions go to ``<out>/submissions/``, the study's board to
``<out>/site/`` and the paper-style report to ``<out>/report/``. A finished stage is never
redone unless something it depends on changed (:mod:`.plan`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError, TideBenchError
from tide_bench.data.sources import ED_PREFIX as ED_SPEC_PREFIX
from tide_bench.data.sources import load_dataset
from tide_bench.generation import load_run, run_eval
from tide_bench.generation.reference import ALIASES as REFERENCE_ALIASES
from tide_bench.generation.run_dir import Generation, RunDirectory
from tide_bench.judging.files import RUN_SUBDIR
from tide_bench.study.plan import (
    EPITOME_JUDGE_SUBDIR,
    StagePlan,
    StudyPlan,
    cell_dir,
    forget_later,
    make_plan,
    mark_done,
)
from tide_bench.study.spec import StudySpec

Echo = Callable[[str], None]
LOCK = ".study.lock"


@dataclass
class StudyResult:
    plan: StudyPlan
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # cell -> why it stopped (retried on the next run)
    site: Path | None = None
    report: Path | None = None


def identity(name: str) -> str:
    return name


@contextlib.contextmanager
def _lock(out: Path) -> Iterator[None]:
    """One study process per output folder: two would overwrite each other's cells."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        pid = path.read_text(encoding="utf-8").strip()
        if pid.isdigit() and _alive(int(pid)):
            raise ConfigError(
                f"another study process (pid {pid}) is writing {out}", hint="wait for it, or stop it"
            ) from None
        path.unlink(missing_ok=True)  # left by a killed run
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    with os.fdopen(fd, "w") as handle:
        handle.write(str(os.getpid()))
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _model_args(spec: StudySpec, stage: StagePlan, resolve_model: Callable[[str], str], adapter: Path | None) -> str:
    model = stage.cell.model
    assert model is not None
    args = {"pretrained": resolve_model(model.model)}
    if model.revision:
        args["revision"] = model.revision
    args |= {k: v for k, v in model.model_args.items()}
    if adapter is not None:
        args["peft"] = str(adapter)
    return ",".join(f"{k}={v}" for k, v in args.items())


class StudyRunner:
    """Carries out a plan's pending stages, recording each as it finishes."""

    def __init__(
        self, spec: StudySpec, out: Path, resolve_model: Callable[[str], str] = identity, echo: Echo = print
    ) -> None:
        self.spec, self.out, self.resolve_model, self.echo = spec, Path(out), resolve_model, echo

    # -------------------------------------------------------------- stages
    def finetune(self, stage: StagePlan) -> tuple[dict[str, Any], dict[str, Any]]:
        from tide_bench.finetune import finetune

        model = stage.cell.model
        assert model is not None
        adapter = cell_dir(self.out, stage.cell) / "adapter"
        config = self.spec.finetune_config(model, self.resolve_model(model.model), adapter)
        started = time.perf_counter()
        card = finetune(config)
        training = card.get("training", {}) if isinstance(card, dict) else {}
        measured = {
            "seconds": round(time.perf_counter() - started, 1),
            "tokens_per_second": training.get("tokens_per_second"),
        }
        return {"adapter": str(adapter.relative_to(self.out))}, measured

    def eval(self, stage: StagePlan) -> tuple[dict[str, Any], dict[str, Any]]:
        cell = stage.cell
        run_dir = cell_dir(self.out, cell) / "run"
        if cell.model is None:
            backend, args, chat = REFERENCE_ALIASES[0], "", False
        else:
            previous = self._record(stage, "finetune")
            adapter = self.out / previous["outputs"]["adapter"] if previous else None
            backend, args, chat = (
                None,  # the study's eval.backend
                _model_args(self.spec, stage, self.resolve_model, adapter),
                cell.model.chat_template,
            )
        config = self.spec.eval_config(backend=backend, model_args=args, output_dir=run_dir, chat=chat)
        manifest = json.loads(run_eval(config).read_text(encoding="utf-8"))
        timings = manifest.get("timings") or {}
        generate_s = (timings.get("total_s") or 0) - (timings.get("model_load_s") or 0)
        n = manifest.get("n_generations") or 0
        measured = {
            "items": n,
            "seconds": timings.get("total_s"),
            "items_per_second": round(n / generate_s, 3) if generate_s > 0 else None,
        }
        return {"run": str(run_dir.relative_to(self.out))}, measured

    def judge(self, stage: StagePlan) -> tuple[dict[str, Any], dict[str, Any]]:
        return self._judge(stage, "judge", RUN_SUBDIR)

    def epitome_judge(self, stage: StagePlan) -> tuple[dict[str, Any], dict[str, Any]]:
        """The same judge machinery with the EPITOME rubric, into ``RUN/judge-epitome``."""
        return self._judge(stage, "epitome_judge", EPITOME_JUDGE_SUBDIR)

    def epitome(self, stage: StagePlan) -> tuple[dict[str, Any], dict[str, Any]]:
        """The local EPITOME scorer over the cell's run (``epitome.json`` and per-item fields)."""
        from tide_bench.generation.epitome_runs import SCORES_NAME, score_run

        settings = dict(self.spec.epitome or {})
        run_dir = self.out / self._record(stage, "eval")["outputs"]["run"]
        started = time.perf_counter()
        record = score_run(
            run_dir,
            settings["model"],
            device=str(settings.get("device", "auto")),
            batch_size=int(settings.get("batch_size", 64)),
        )
        seconds = time.perf_counter() - started
        n = record["summary"]["n_items"]
        return (
            {"epitome": str((run_dir / SCORES_NAME).relative_to(self.out))},
            {
                "items": n,
                "seconds": round(seconds, 2),
                "replies_per_second": round(n / seconds, 1) if seconds else None,
            },
        )

    def _judge(self, stage: StagePlan, section: str, subdir: str) -> tuple[dict[str, Any], dict[str, Any]]:
        from tide_bench.judging import judge_run

        run_dir = self.out / self._record(stage, "eval")["outputs"]["run"]
        result = judge_run(run_dir, run_dir / subdir, self.spec.judge_config(section), self.spec.judge_options(section))
        summary = result.summary
        return (
            {"judge": str((run_dir / subdir).relative_to(self.out))},
            {
                "n_scored": summary.get("n_scored"),
                "n_unscored": summary.get("n_unscored"),
                "cost_usd": (summary.get("cost_usd") or {}).get("this_run"),
            },
        )

    def submit(self, stage: StagePlan) -> tuple[dict[str, Any], dict[str, Any]]:
        from tide_bench.leaderboard import create_submission

        cell = stage.cell
        run_dir = self.out / self._record(stage, "eval")["outputs"]["run"]
        meta = self.meta(stage, load_run(run_dir))
        meta_path = cell_dir(self.out, cell) / "submission.yaml"
        meta_path.write_text(yaml.safe_dump(meta, sort_keys=False, allow_unicode=True), encoding="utf-8")
        check = create_submission(
            run_dir, meta_path, self.out / "submissions", overwrite=True, board=study_board(self.spec)
        )
        return {"submission": str(Path(check.folder).relative_to(self.out))}, {}

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

    # -------------------------------------------------------------- helpers
    def _record(self, stage: StagePlan, name: str) -> dict[str, Any] | None:
        return next((s.record for s in self.plan.for_cell(stage.cell.id) if s.stage == name), None)

    def run(self, plan: StudyPlan, *, progress: bool = True) -> StudyResult:
        """Every pending stage in grid order. A stage that fails with a user error (a refused
        submission, a model that cannot load) stops its own cell, is reported, and leaves no
        record, so the next run retries it; the other cells go on."""
        self.plan = plan
        result = StudyResult(plan)
        bar = _progress(len(plan.pending()), progress)
        try:
            for stage in plan.stages:
                label = f"{stage.cell.id}/{stage.stage}"
                if stage.done:
                    result.skipped.append(label)
                    continue
                if stage.cell.id in result.failed:
                    continue
                self.echo(f"[study] {label}: running")
                forget_later(self.out, plan, stage)
                try:
                    outputs, measured = getattr(self, stage.stage)(stage)
                except TideBenchError as exc:
                    result.failed[stage.cell.id] = f"{stage.stage}: {str(exc).splitlines()[0]}"
                    self.echo(f"[study] {label}: FAILED: {exc}")
                    continue
                mark_done(self.out, stage, outputs, measured)
                result.ran.append(label)
                bar.update(1)
        finally:
            bar.close()
        return result


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


def stand_in_run(spec: StudySpec) -> RunDirectory:
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


def study_board(spec: StudySpec) -> Any:
    """The study's own board: its split, a demo board on the synthetic sample, judgments
    required when the study names a judge; the study file's ``board`` settings on top."""
    from tide_bench.leaderboard.config import BoardConfig

    board = dict(spec.board)
    settings = (
        _board_file(spec, board.pop("config", None))
        | {
            "name": f"study {spec.name}",
            "split": spec.split,
            "demo": spec.data == "sample",
            "require_judgments": spec.judge is not None,
            "conversations_per_persona": None,
            "prompt_conditions": [spec.prompt],
        }
        | board
    )
    return BoardConfig(**settings)


def _board_file(spec: StudySpec, name: Any) -> dict[str, Any]:
    """``board: {config: leaderboard/ed.yaml}``: that board file's settings, under what the study
    itself decides (its split, prompt condition, demo status, whether judgments are required) and
    under the study file's other ``board`` keys. Looked for as given, beside the study file, then
    among the shipped boards."""
    if name is None:
        return {}
    from dataclasses import fields

    from tide_bench.core.resources import resource_dir
    from tide_bench.leaderboard.config import load_board

    given = Path(str(name))
    candidates = [
        given,
        *([spec.source.parent / given] if spec.source else []),
        resource_dir("leaderboard") / given.name,
    ]
    path = next((p for p in candidates if p.is_file()), given)
    loaded = load_board(path)
    return {f.name: getattr(loaded, f.name) for f in fields(loaded) if f.name not in ("source", "name")}


def build_board(spec: StudySpec, out: Path, report: Path | None = None, people: Path | None = None) -> Any:
    """The study's board over its submissions, with the study's report (and, on ED, the LLMs-vs-people
    comparison) as sections of its page."""
    from tide_bench.leaderboard import build_site
    from tide_bench.leaderboard.html import render_section
    from tide_bench.study.report import report_html

    sections = [render_section("Study report", report_html(report), "study-report")] if report else []
    if people is not None:
        sections.append(render_section("LLM replies vs people", report_html(people), "people-report"))
    return build_site(out / "submissions", out / "site", study_board(spec), extra_sections=sections)


def run_study(
    spec: StudySpec,
    out: str | Path,
    *,
    resolve_model: Callable[[str], str] = identity,
    echo: Echo = print,
    report: bool = True,
    progress: bool = True,
) -> StudyResult:
    """Run every pending stage of the study in ``out``, then build its board and report."""
    out = Path(out)
    with _lock(out):
        plan = make_plan(spec, out)
        runner = StudyRunner(spec, out, resolve_model, echo)
        result = runner.run(plan, progress=progress)
        if report:
            from tide_bench.study.report import write_report

            result.report = write_report(spec, out, plan)
            people = None
            if spec.data.startswith(ED_SPEC_PREFIX):
                from tide_bench.study.people import write_comparison

                people = write_comparison(spec, out, plan)
            built = build_board(spec, out, report=result.report, people=people)
            for sid, errors in built.refused.items():
                echo(f"[study] board refused {sid}: {'; '.join(errors)}")
            result.site = built.out / "index.html"
    return result
