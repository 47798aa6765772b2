"""Each submission's share of a board build, prepared in parallel.

Why a step of its own: what a build does per entry (read and check its replies and judgments,
score them with persona-cluster intervals, tabulate them for the bias diagnostics, write its
per-item files) depends on that entry alone, and it is most of the build's work. So entries
are prepared in worker processes, forked from the build (nothing is imported again). Each
worker writes the entry's per-item files into the build's staging folder itself and hands
back only what the board needs: the check, the row with the per-item values that pair it
with the other entries, and the bias table. The per-item texts never cross a process
boundary: pickling them back cost as much as reading them, measured.

One process does it all, with the same function, where ``fork`` is not available (Windows,
and macOS, whose ``spawn`` would import everything again in each worker), with one worker,
or when the embedding spot check runs (its model is loaded once). The result is the same in
every case, in the order of the folders: the parallel build is tested against the serial one.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

from tide_bench.core.errors import TideBenchError
from tide_bench.data.risk_labels import RiskLabels
from tide_bench.judging.rubric import Rubric
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.scoring.adjudication import Adjudication
from tide_bench.leaderboard.scoring.bias import ItemTable, item_table
from tide_bench.leaderboard.scoring.scores import ScoredEntry, judge_columns, score_entry
from tide_bench.leaderboard.site.entry_files import write_entry_files
from tide_bench.leaderboard.submission.result import CheckResult
from tide_bench.leaderboard.submission.validate import validate_folder

MAX_WORKERS = 8  # each worker holds one entry's items at a time; more rarely helps a board


Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class EntryJob:
    """What every entry of one build is prepared with. ``site`` is the build's staging folder
    for the per-item files (None: a site without them)."""

    board: BoardConfig
    rubric: Rubric
    site: Path | None
    spot_checks: bool = False
    text_metrics: bool = False
    seed: int | None = None
    risk_labels: RiskLabels | None = None  # the board's item-level risk labels (default: those of the entry's data)
    adjudication: Adjudication | None = None  # the board's clinician verdicts on severe flags


@dataclass
class PreparedEntry:
    """One entry, ready to be compared with the others. ``check.submission`` is the entry
    without its per-item data (every check of one entry, admission included, ran in
    :func:`~tide_bench.leaderboard.submission.validate.validate_folder`); ``downloads`` are the per-item
    files written for it."""

    check: CheckResult
    scored: ScoredEntry | None = None
    table: ItemTable | None = None
    downloads: list[str] = field(default_factory=list)


def prepare_entry(folder: Path, job: EntryJob) -> PreparedEntry:
    """Validate, score and tabulate one submission folder, and write its per-item files."""
    check = validate_folder(
        folder, job.board, spot_checks=job.spot_checks, seed=job.seed, text_metrics=job.text_metrics
    )
    sub = check.submission
    if not check.ok or sub is None:
        return PreparedEntry(check)
    sub.generations.sort(key=attrgetter("item_id"))  # once: what follows orders them so, and sorted input sorts fast
    columns = judge_columns(sub.generations, sub, job.rubric)  # once: the score and the bias table read it
    scored = score_entry(
        sub, rubric=job.rubric, risk_labels=job.risk_labels, judged_columns=columns, adjudication=job.adjudication
    )
    table = None
    if scored.row["judged"]:
        table = item_table(sub.generations, sub.judgments, job.rubric, columns[:, :-1])
    downloads = []
    if job.site is not None:
        downloads = write_entry_files(job.site, scored.row["id"], scored.row["model_name"], sub, job.rubric)
    check.submission = sub.without_items()
    return PreparedEntry(check, scored, table, downloads)


def process_budget(workers: int | None) -> int:
    """How many processes a build may use: ``workers`` when given, else one per CPU this
    process may use (at most :data:`MAX_WORKERS`)."""
    if workers is not None:
        return max(1, workers)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus, MAX_WORKERS))


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def prepare_entries(
    folders: Sequence[Path],
    job: EntryJob,
    *,
    workers: int | None = None,
    progress: Progress | None = None,
) -> list[PreparedEntry]:
    """:func:`prepare_entry` for every folder, in ``workers`` processes (default: one per
    CPU); the results in the order of ``folders``. ``progress(done, total)`` is called as
    entries finish."""
    report = progress or (lambda done, total: None)
    n = len(folders)
    count = max(1, min(process_budget(workers), n))  # at most one worker per entry
    report(0, n)
    if count == 1 or job.spot_checks or not can_fork():
        prepared = []
        for done, folder in enumerate(folders, 1):
            prepared.append(prepare_entry(folder, job))
            report(done, n)
        return prepared
    try:
        with ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(prepare_entry, folder, job) for folder in folders]  # forks every worker
            for done, _ in enumerate(as_completed(futures), 1):
                report(done, n)
            return [f.result() for f in futures]
    except BrokenProcessPool:
        raise TideBenchError(
            "a build worker process died (out of memory?)",
            hint="build with fewer workers (--workers 1 uses no worker process)",
        ) from None
