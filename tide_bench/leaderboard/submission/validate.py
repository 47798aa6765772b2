"""Validation a maintainer can trust: every check names what is wrong, where, and what to fix.

Each submission is validated in isolation (a malformed one is refused; it never stops the
others), in this order, reading nothing it has not first checked:

1. The folder, with ``lstat`` only: a symbolic link, a device, too many files or bytes stop
   the check before any file is opened (:mod:`.folder`).
2. ``submission.yaml``: schema, id, honest display name (:mod:`.metadata`).
3. ``run.json`` and the samples through the typed readers (every field's type; paths
   confined to the folder): the board's split, no ``--limit``, not the synthetic sample; a
   prompt condition the board ranks, with the board's prompt hash for it, and every item's
   recorded prompt read back and compared with that prompt (:mod:`.prompt_check`); the
   reference run (condition ``reference``) is the anchor only if its replies are the data's
   references (:mod:`.reference_row`).
4. **The items themselves**: every persona hashes into the board's split (the persona-hash
   definition, recomputed), item ids are built from their parts, conversations are whole,
   and the split hash is *recomputed* from the submitted items and compared with the run's
   claim and the board's pin (rewritten client turns, histories or references are refused).
5. Reference metrics: ROUGE-L, distinct-n and length recomputed on every item; cosine
   similarity re-embedded on a random sample with the board's embedder (:mod:`.recompute`).
6. Judgments through the typed reader: one per item, one judge configuration (the board's),
   keys that match the submitted replies, and ``judge_summary.json`` compared field by field;
   the severe items' repeated judge calls against the judgments (:mod:`.severe`). Steps 3-6 are
   :func:`.run_checks.check_run_files`, which also checks the entry's risk-supplement run
   (``risk_supplement/``), where the board requires one or the submission carries it, with
   its model, prompt condition and judge held equal to the main run's (:mod:`.supplement`).
7. Metadata against the run (generation settings, parameters, hub id and revision), and no
   local path of the submitter's machine anywhere in the public files.

What validation cannot prove is that scores were not fabricated together with a consistent
summary: only re-judging can (docs/leaderboard.md).
"""

from __future__ import annotations

import time
from pathlib import Path

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.generation.reference import reference_label
from tide_bench.generation.run_manifest import MANIFEST_NAME, read_manifest
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission.checks import (
    MANIFEST,
    check_local_paths,
    check_meta,
    check_run,
    refuse_listed,
)
from tide_bench.leaderboard.submission.data_pins import effective_board
from tide_bench.leaderboard.submission.folder import FolderRefused, scan_folder
from tide_bench.leaderboard.submission.layout import JUDGE_CONFIG, META, SAFE_ID
from tide_bench.leaderboard.submission.metadata import run_problems, shown_generation
from tide_bench.leaderboard.submission.problems import Problem
from tide_bench.leaderboard.submission.recompute import embedding_spot_check
from tide_bench.leaderboard.submission.reference_row import declares_reference
from tide_bench.leaderboard.submission.result import CheckResult, _Stop
from tide_bench.leaderboard.submission.run_checks import check_run_files
from tide_bench.leaderboard.submission.samples import check_samples
from tide_bench.leaderboard.submission.seeker import check_seeker
from tide_bench.leaderboard.submission.severe import board_labels, check_labels_fit, severity_labels
from tide_bench.leaderboard.submission.supplement import check_supplement

__all__ = ["CheckResult", "submission_folders", "validate_folder"]


def _validate(
    folder: Path,
    sid: str,
    board: BoardConfig,
    result: CheckResult,
    spot_checks: bool,
    seed: int | None,
    text_metrics: bool,
) -> None:
    if not SAFE_ID.match(sid):
        result.refuse(f"folder name {sid!r} is not a safe id: use lowercase letters, digits, '.', '_', '-' (max 64)")
    listing = scan_folder(folder, max_bytes=board.max_bytes, max_files=board.max_files)
    meta, meta_valid = check_meta(folder, sid, result)
    if not listing.has(MANIFEST):
        result.stop(f"file not found: a submission holds the run's {MANIFEST_NAME}", MANIFEST)
    run = read_manifest(folder / MANIFEST, max_bytes=board.max_bytes, follow_symlinks=False)
    check_run(run, meta, board, result)
    labels = severity_labels(run, board)
    check_labels_fit(run, board_labels(board), result, "the board's risk labels")
    checked = check_run_files(folder, listing, run, board, result, text_metrics=text_metrics, labels=labels)
    gens, results, config = checked.gens, checked.results, checked.config
    supplement = check_supplement(folder, listing, board, run, checked, result)
    seeker = check_seeker(folder, listing, board, gens, result)
    samples = check_samples(folder, listing, board, run, checked, result, labels)
    documents = {META: meta, MANIFEST: run.raw}
    if results:
        documents[results[0]] = results[1]
    if config is not None:
        documents[JUDGE_CONFIG] = config
    check_local_paths(folder, listing, documents, gens, result)
    if meta is not None and meta_valid:  # the comparison with the run needs the schema's types
        problems, warnings = run_problems(meta, run, demo_board=board.demo)
        for where, message in problems:
            result.refuse(message, META, field=where)
        result.warnings += warnings
    if result.problems:
        return
    if spot_checks:
        result.spot_check, problems = embedding_spot_check(
            gens, board.spot_check_items, board.embedding_model, folder, seed
        )
        refuse_listed(result, problems, "cosine mismatches")
        if result.problems:
            return
    assert meta is not None
    shown = dict(meta) | {"generation": shown_generation(run)}
    if declares_reference(run):  # the anchor is named after its data, whatever submission.yaml says
        shown["model_name"] = reference_label(
            run.data.source, is_sample=run.data.is_synthetic_sample, release=board.dataset_release
        )
    result.submission = checked.submission(
        sid, folder, run, shown, risk_supplement=supplement, seeker_judgments=seeker, samples=samples
    )


def validate_folder(
    folder: str | Path,
    board: BoardConfig,
    *,
    spot_checks: bool = True,
    seed: int | None = None,
    folder_id: str | None = None,
    text_metrics: bool = True,
) -> CheckResult:
    """Validate one submission folder on its own.

    ``text_metrics`` recomputes ROUGE-L, distinct-n and length on every item (about 0.2 ms an
    item; ``build`` leaves it to ``validate``, which CI runs on the same files);
    ``spot_checks`` runs the embedding spot check, and ``seed`` repeats a previous draw.
    ``folder_id`` is the id the folder will have (``submit`` validates a staging copy).
    """
    folder = Path(folder)
    board = effective_board(board)
    sid = folder_id or folder.name
    result = CheckResult(sid, folder)
    t0 = time.perf_counter()
    try:
        _validate(folder, sid, board, result, spot_checks, seed, text_metrics)
    except _Stop:
        pass
    except FolderRefused as exc:
        result.refuse(exc.detail)
    except DataError as exc:
        problem = Problem.from_error(exc, folder)
        result.refuse(problem.message, problem.path, problem.line, problem.field)
    result.seconds = time.perf_counter() - t0
    return result


def looks_like_run(folder: Path) -> bool:
    return (folder / MANIFEST_NAME).is_file() and not (folder / META).exists()


def submission_folders(folder: str | Path) -> list[Path]:
    """The submission folders ``folder`` holds, in name order: itself when it is one submission,
    else its sub-folders (hidden ones left out). A run directory or a file is refused."""
    folder = Path(folder)
    if looks_like_run(folder):
        raise TideBenchError(
            f"{folder} is a run directory, not a submission",
            hint=f"package it first: tide-bench submit {folder} --meta submission.yaml --out leaderboard/submissions/",
        )
    if (folder / META).exists() or (folder / META).is_symlink():
        return [folder]
    if not folder.is_dir():
        raise TideBenchError(f"not a folder: {folder}")
    return [p for p in sorted(folder.iterdir()) if (p.is_dir() or p.is_symlink()) and not p.name.startswith(".")]
