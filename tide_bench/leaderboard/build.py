"""``tide-bench leaderboard build``: validate, recompute, rank, render.

One bad submission never stops the build of the others (it is listed as refused), unless
``strict``. The build validates every submission's structure, items, judgments and
metadata; recomputing the reference metrics from the text is ``validate``'s job (CI runs it
on every pull request), or the build's with ``spot_checks``. The output folder is checked
before anything else happens and replaced atomically at the end; the build never deletes a
folder it did not write (:mod:`.site.site_dir`). An attached audit is stamped on the page only
for the board's judge.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_limits

from tide_bench.core.atomic_dir import make_public, replace_folder
from tide_bench.core.errors import ConfigError, DataError, TideBenchError
from tide_bench.core.gc_pause import no_gc_pauses
from tide_bench.core.jsonio import read_json
from tide_bench.core.provenance import utc_now
from tide_bench.core.stats import preload as preload_statistics
from tide_bench.data.risk_labels import read_risk_labels
from tide_bench.judging.rubric import Rubric, load_rubric
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.entries import EntryJob, PreparedEntry, Progress, prepare_entries
from tide_bench.leaderboard.scoring.adjudication import read_adjudication
from tide_bench.leaderboard.scoring.bias import diagnose
from tide_bench.leaderboard.scoring.columns import board_columns
from tide_bench.leaderboard.scoring.gate_errors import audited_keys, gate_error_rates
from tide_bench.leaderboard.scoring.groups import board_groupings, split_groups
from tide_bench.leaderboard.scoring.risk_gate import check_risk_gate
from tide_bench.leaderboard.scoring.scores import RESAMPLES, SEED, rank_entries
from tide_bench.leaderboard.site.entry_files import remove_entry_files
from tide_bench.leaderboard.site.exports import write_exports
from tide_bench.leaderboard.site.html import Section
from tide_bench.leaderboard.site.pages import metric_label, write_site
from tide_bench.leaderboard.site.plots import draw_charts
from tide_bench.leaderboard.site.site_dir import check_out_dir, write_marker
from tide_bench.leaderboard.submission.accept import check_together
from tide_bench.leaderboard.submission.layout import RUN, Submission
from tide_bench.leaderboard.submission.metadata import schema_validator
from tide_bench.leaderboard.submission.validate import submission_folders
from tide_bench.validation.stamps import JUDGES_PAGE, load_stamps, stamp_for

AUDIT_MAX_BYTES = 200_000_000


@dataclass
class BuildResult:
    out: Path
    accepted: list[str] = field(default_factory=list)
    refused: dict[str, list[str]] = field(default_factory=dict)
    board: dict[str, Any] = field(default_factory=dict)


def _audited_judge(audit: dict[str, Any], version: str | None, path: Path) -> str:
    """The audit's key for the board's judge configuration, or a refusal naming what it holds."""
    judges = sorted(
        {j for d in (audit.get("dimensions") or {}).values() if isinstance(d, dict) for j in (d.get("judges") or {})}
    )
    if not version:
        raise ConfigError("the board has no judged entries, so no audited judge can be stamped on it", path=path)
    matching = audited_keys(judges, version)
    if len(matching) != 1:
        held = ", ".join(judges) or "none"
        raise ConfigError(
            f"the audit holds judge(s) {held}, not the board's judge configuration {version}: "
            "stamping another judge's agreement would misstate this board's",
            path=path,
            hint="audit the board's judge (tide-bench audit --judgments <its judgments.jsonl>), or build without "
            "--audit",
        )
    return matching[0]


def audit_summary(path: Path, version: str | None) -> dict[str, Any]:
    """Human-human and judge-human alpha per dimension, for the board's judge only."""
    audit = read_json(path, DataError, max_bytes=AUDIT_MAX_BYTES)
    if not isinstance(audit, dict) or not isinstance(audit.get("dimensions"), dict):
        raise DataError("not an agreement.json from `tide-bench audit` (no 'dimensions')", path=path)
    judge = _audited_judge(audit, version, path)
    out = {}
    for dim, d in audit["dimensions"].items():
        block = ((d.get("judges") or {}).get(judge) or {}) if isinstance(d, dict) else {}
        out[dim] = {
            "judge": judge,
            "human_alpha": (d.get("alpha") or {}).get("interval") if isinstance(d, dict) else None,
            "alpha_with_judge": (block.get("alpha_with_judge") or {}).get("interval"),
            "verdict": block.get("verdict"),
        }
    return out


class NothingAccepted(TideBenchError):
    """Every submission was refused: no board is written (the previous site stays)."""


def _shown_path(path: Path) -> str:
    """A board file as a user would type it: relative to the working folder when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


def board_that_accepts(folders: Sequence[Path], board: BoardConfig) -> tuple[Path, int] | None:
    """The shipped board file (other than ``board``) that accepts the most of ``folders``, and
    how many; None when none accepts any. Only for the message of a build that refused all."""
    from tide_bench.core.resources import resource_dir
    from tide_bench.leaderboard.config import load_board
    from tide_bench.leaderboard.submission.accept import check_all

    current = Path(board.source).resolve() if board.source else None
    best: tuple[Path, int] | None = None
    for path in sorted(resource_dir("leaderboard").glob("*.yaml")):
        if current is not None and path.resolve() == current:
            continue
        try:
            other = load_board(path)
        except TideBenchError:
            continue
        accepted = sum(c.ok for c in check_all(folders, other, spot_checks=False, text_metrics=False))
        if accepted and (best is None or accepted > best[1]):
            best = (path, accepted)
    return best


def _refuse_if_none_accepted(folders: Sequence[Path], board: BoardConfig, result_board: dict[str, Any]) -> None:
    refused = result_board["refused"]
    if result_board["rows"] or not refused:
        return
    first = next(iter(refused))
    found = board_that_accepts([f for f in folders if f.name in refused], board)
    hint = (
        f"--board {_shown_path(found[0])} accepts {found[1]} of them; e.g. tide-bench leaderboard build --submissions "
        f"{_shown_path(folders[0].parent)} --board {_shown_path(found[0])} --out SITE"
        if found
        else "fix what each refusal names (tide-bench leaderboard validate lists them), or choose the board they were "
        "made for with --board"
    )
    raise NothingAccepted(
        f"all {len(refused)} submission(s) were refused by {board.name!r}, so no board was written; "
        f"{first}: {'; '.join(refused[first][:2])}",
        hint=hint,
    )


def _refuse_if_strict(strict: bool, refused: dict[str, list[str]]) -> None:
    if strict and refused:
        first = next(iter(refused))
        raise TideBenchError(f"{len(refused)} submission(s) refused (--strict); {first}: {'; '.join(refused[first])}")


def _check_paths(
    out: Path,
    submissions: Path,
    board: BoardConfig,
    *,
    audit: str | Path | None,
    judges_board: str | Path | None,
    probes_report: str | Path | None = None,
) -> None:
    """Refuse an output folder that would replace an input, before anything is read."""
    check_out_dir(
        out,
        {
            "submissions folder": submissions,
            "board file": Path(board.source) if board.source else None,
            "audit file": Path(audit) if audit else None,
            "judges board": Path(judges_board) if judges_board else None,
            "probe report": Path(probes_report) if probes_report else None,
        },
    )


def _entry_job(board: BoardConfig, rubric: Rubric, site: Path | None, *, spot_checks: bool, strict: bool) -> EntryJob:
    """What every entry is prepared with. --strict decides with the whole check list (text
    metrics recomputed), as validate and submit do (leaderboard.submission.accept)."""
    labels_path, adjudication_path = board.risk_labels_path(), board.adjudication_path()
    labels = read_risk_labels(labels_path) if labels_path else None
    adjudication = read_adjudication(adjudication_path) if adjudication_path else None  # whole, before any entry
    return EntryJob(
        board,
        rubric,
        site,
        spot_checks=spot_checks,
        text_metrics=spot_checks or strict,
        risk_labels=labels,
        adjudication=adjudication,
    )


@no_gc_pauses()  # every entry stays in memory until the site is written (1.5 s of collections otherwise)
def build_site(
    submissions: str | Path,
    out: str | Path,
    board: BoardConfig,
    *,
    audit: str | Path | None = None,
    strict: bool = False,
    spot_checks: bool = False,
    extra_sections: Sequence[Section] = (),
    instances: bool = True,
    rubric: Rubric | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    judges_board: str | Path | None = None,
    require_accepted: bool = False,
    allow_risk_gate_off: bool = False,
    probes_report: str | Path | None = None,
) -> BuildResult:
    """Validate, score, rank and write the site into ``out``. ``extra_sections`` are appended to
    the index page (e.g. a study report, :func:`~tide_bench.leaderboard.site.html.render_section`);
    ``instances=False`` leaves out the per-item replies and downloads (the site then holds no
    TIDE text). The entries are prepared in ``workers`` processes (default: one per CPU;
    :mod:`.entries`), and ``progress(done, total)`` is told as each is ready. ``judges_board`` (a
    ``tide-bench validation board`` folder) gives every entry its judge's validation stamp and is
    linked as judges.html; without it every entry reads "judge not validated". With
    ``require_accepted`` (the CLI), a build that refuses every submission raises
    :class:`NothingAccepted`, naming the shipped board file that would accept them, and
    leaves ``out`` as it was. A TIDE board whose risk
    gate would be off is refused (:class:`.scoring.risk_gate.RiskGateOff`, nothing written) unless
    ``allow_risk_gate_off``, which puts a banner over the table instead. ``probes_report`` (a
    ``probes_report.json`` of the board's judge) and the audit's safety block give the gate's
    measured error rates (:mod:`.scoring.gate_errors`; "not yet measured" without them)."""
    out = Path(out)
    _check_paths(out, Path(submissions), board, audit=audit, judges_board=judges_board, probes_report=probes_report)
    stamps = load_stamps(judges_board)
    folders = submission_folders(submissions)
    rubric = rubric or load_rubric()
    target = out.expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.staging-"))
    charts: list[dict[str, str]] = []

    def draw(rows: list[dict[str, Any]], ranking: dict[str, Any]) -> None:  # before the bias diagnostics add fields
        metric = ranking["ranking_metric"]
        charts.append(draw_charts(rows, ranking.get("pairwise") or [], metric, metric_label(metric, rubric)))

    try:
        job = _entry_job(board, rubric, staging if instances else None, spot_checks=spot_checks, strict=strict)
        # One BLAS thread: the bootstraps' matrix products are small, so more threads only spin (measured: twice
        # the CPU for the same time in one process, and workers' threads competing for the same cores).
        with threadpool_limits(limits=1, user_api="blas"):
            preload_statistics()  # before the workers fork: imported once, not once per worker
            schema_validator()  # the same for jsonschema (each worker checks submission.yaml files)
            columns = board_columns(rubric)  # the column file read once here, not once per worker
            prepared = prepare_entries(folders, job, workers=workers, progress=progress)
            result_board, accepted = _decide(
                prepared, board, rubric, strict=strict, audit=audit, ranked=draw, probes_report=probes_report
            )
        if require_accepted:
            _refuse_if_none_accepted(folders, board, result_board)
        check_risk_gate(board, result_board, allow=allow_risk_gate_off)
        if job.adjudication is not None:
            result_board["adjudication"] = job.adjudication.summary()
        for row in [*result_board["rows"], result_board]:  # every entry, and the board's judge
            row["judge_validation"] = stamp_for(row.get("judge"), stamps)
        for entry in prepared:
            if entry.downloads and entry.check.id not in accepted:
                remove_entry_files(staging, entry.check.id)
        downloads = {e.check.id: e.downloads for e in prepared if e.check.id in accepted}
        drawn = charts[0] if charts else None
        write_site(
            staging,
            result_board,
            accepted,
            rubric,
            columns,
            downloads=downloads,
            extra_sections=extra_sections,
            instances=instances,
            charts=drawn,
        )
        write_exports(staging, result_board, columns)
        write_marker(staging, result_board["built_at"])
        make_public(staging)
        if judges_board:
            shutil.copyfile(Path(judges_board) / "index.html", staging / JUDGES_PAGE)
        replace_folder(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BuildResult(out, [r["id"] for r in result_board["rows"]], result_board["refused"], result_board)


def _decide(
    prepared: list[PreparedEntry],
    board: BoardConfig,
    rubric: Rubric,
    *,
    strict: bool,
    audit: str | Path | None,
    ranked: Callable[[list[dict[str, Any]], dict[str, Any]], None] | None = None,
    probes_report: str | Path | None = None,
) -> tuple[dict[str, Any], dict[str, Submission]]:
    """Compare the prepared entries, refuse and rank: the board's numbers, and the accepted
    entries (without their per-item data) by id. ``ranked(rows, ranking)`` is called once the
    entries are ranked, before the bias diagnostics add their fields to the rows."""
    checks = [e.check for e in prepared]
    check_together(checks, board)
    refused = {c.id: c.errors for c in checks if not c.ok}
    _refuse_if_strict(strict, refused)
    kept = [e for e in prepared if e.check.ok and e.check.submission and e.scored]
    accepted = {e.scored.row["id"]: e.check.submission for e in kept if e.scored and e.check.submission}
    for e in kept:
        if e.scored and e.check.submission and e.scored.row["judged"]:
            e.scored.row["judge_served_models"] = list(e.check.submission.served_models)
    together, apart, groups = split_groups([e.scored for e in kept if e.scored], board_groupings(board))
    ranking = rank_entries(
        together,
        min_scored_items=board.min_scored_items,
        correction=board.rank_correction,
        rank_reference=board.rank_reference,
        max_safety_flag_rate=board.max_safety_flag_rate,
        max_risk_mishandled_rate=board.max_risk_mishandled_rate,
        max_severe_risk_failures=board.max_severe_risk_failures,
        severe_every_sample=board.severe_every_sample,
    )
    rows = [e.row for e in together] + [e.row for e in apart]
    if ranked is not None:
        ranked(rows, ranking)
    judge_bias = diagnose(
        rows,
        {e.check.id: e.table for e in kept if e.table is not None},
        {i: (s.manifest, s.meta) for i, s in accepted.items()},
        rubric,
        {i: f"leaderboard/submissions/{i}/{RUN}" for i in accepted},  # the repository layout, never a local path
    )
    judges = {r["judge"]["version"]: r["judge"] for r in rows if r["judge"]}
    judge_version = board.judge_version or (next(iter(judges)) if len(judges) == 1 else None)
    data = next((r["data"] for r in rows if r.get("data")), {}) or {}
    result_board = {
        "schema_version": 1,
        "name": board.name,
        "demo": board.demo or any(r["demo"] for r in rows),
        "synthetic": sorted({str(r["data"]["synthetic"]) for r in rows if (r.get("data") or {}).get("synthetic")}),
        "built_at": utc_now(),
        "split": board.split,
        "split_version": board.split_version,
        "split_sha256": board.split_sha256 or data.get("split_sha256"),
        "dataset_release": board.dataset_release,
        "prompt_conditions": list(board.prompt_conditions),
        **ranking,
        "comparison_groups": [g.as_dict() for g in groups],
        "unscored_rule": "model-attributable unscored items (empty reply, refusal, content filter) count at the scale "
        f"minimum; entries with more than {100 * board.max_infrastructure_unscored:g}% unscored for "
        "infrastructure reasons are refused",
        "intervals": f"95% percentile bootstrap over personas, {RESAMPLES} resamples, seed {SEED}, the same resamples "
        "for every entry; rates: Wilson on the design-adjusted n",
        "judge": judges.get(judge_version) if judge_version else None,
        "risk_labels": _risk_labels_block(rows),
        "audit": audit_summary(Path(audit), judge_version) if audit else None,
        "gate_error_rates": gate_error_rates(
            probes_report,
            read_json(Path(audit), DataError, max_bytes=AUDIT_MAX_BYTES) if audit else None,
            judge_version,
        ),
        "judge_bias": judge_bias,
        "spot_checks": {c.id: c.spot_check.as_dict() for c in checks if c.spot_check},
        "rows": rows,
        "refused": refused,
    }
    return result_board, accepted


def _risk_labels_block(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the board's risk gate rests on: each label set (TIDE's, the risk supplement's), its review
    status, and the risk items by kind, severity and source."""
    blocks = [r["risk_handling"] for r in rows if r.get("risk_handling")]
    if not blocks:
        return {
            "available": False,
            "note": "no item-level risk labels for this board's entries: the risk gate is off (require the risk "
            "supplement with require_risk_supplement, or name a label file made with `tide-bench data label-risk` as "
            "risk_labels in the board file)",
        }
    first = max(blocks, key=lambda b: (bool(b.get("labels_match")), len(b.get("label_sets") or [])))
    return {
        "available": True,
        **first["labels"],
        "label_sets": first.get("label_sets") or [first["labels"]],
        "n_risk_items": first.get("n_risk_items"),
        "by_kind": {k: v["n"] for k, v in (first.get("by_kind") or {}).items()},
        "by_severity": {k: v["n"] for k, v in (first.get("by_severity") or {}).items()},
        "by_source": {k: v["n"] for k, v in (first.get("by_source") or {}).items()},
    }
