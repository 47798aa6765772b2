"""An entry's K sampled runs (``samples/sample-N/``): consistency across samples on the board.

``tide-bench eval --samples K`` answers every item K times with sampling on
(:mod:`tide_bench.generation.sampled`); ``tide-bench submit RUN ... --samples FOLDER`` packages the
judged set beside the entry's run::

    samples/sample-1/run/run.json, run/lm_eval/...   the first sample (the same layout as run/)
    samples/sample-1/judge/judgments.jsonl, ...      its judgments, by the entry's judge
    samples/sample-K/...

Each sample goes through the main run's per-item checks (:func:`.run_checks.check_run_files`: the
board's items and split, prompts, judgments, severe calls) and is held to the entry's run: the same
model, prompt and judge (:func:`.supplement.same_as_main`), sampling on (``do_sample``, a
temperature above 0) and a different seed per sample. Fewer than two samples are refused (one
says nothing about consistency). A board with ``severe_every_sample: true`` requires them and
counts a severe item as failed when any of the entry's replies to it is mishandled.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.data.risk_labels import RiskLabels
from tide_bench.generation.run_manifest import MANIFEST_NAME, RunManifest, read_manifest
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission.checks import MANIFEST
from tide_bench.leaderboard.submission.folder import FolderListing
from tide_bench.leaderboard.submission.layout import SAMPLES_DIR, Submission
from tide_bench.leaderboard.submission.problems import Problem
from tide_bench.leaderboard.submission.reference_row import declares_reference
from tide_bench.leaderboard.submission.result import CheckResult, _Stop
from tide_bench.leaderboard.submission.run_checks import CheckedRun, check_run_files
from tide_bench.leaderboard.submission.supplement import same_as_main

SAMPLE_NAME = re.compile(r"sample-[1-9][0-9]{0,2}", re.ASCII)
HOW = (
    "`tide-bench eval ... --samples K --output-dir SET`, `tide-bench judge SET --out judge` with the entry's judge, "
    "then `tide-bench submit RUN ... --samples SET`"
)


def _sampled(run: RunManifest, result: CheckResult) -> Any:
    """Refuse a sample that was not sampled; its seeds (to tell the samples apart)."""
    temperature = run.generation.setting("temperature")
    if run.generation.setting("do_sample") is not True or not isinstance(temperature, int | float) or temperature <= 0:
        result.refuse(
            f"was not sampled (do_sample {run.generation.setting('do_sample')!r}, temperature {temperature!r}): {HOW}",
            MANIFEST,
            field="generation.gen_kwargs_override",
        )
    generation = run.raw.get("generation") if isinstance(run.raw, dict) else None
    return generation.get("seed") if isinstance(generation, dict) else None


def _check_one(
    root: Path, listing: FolderListing, board: BoardConfig, main: RunManifest, checked: CheckedRun,
    result: CheckResult, labels: RiskLabels | None, name: str,
) -> tuple[Submission | None, Any]:  # fmt: skip
    if not listing.has(MANIFEST):
        result.stop(f"file not found: the sample's {MANIFEST_NAME} ({HOW})", MANIFEST)
    run = read_manifest(root / MANIFEST, max_bytes=board.max_bytes, follow_symlinks=False)
    seed = _sampled(run, result)
    sample = check_run_files(root, listing, run, board, result, text_metrics=False, metrics=False, labels=labels)
    same_as_main(main, run, checked, sample, result, name=name, settings=("max_gen_toks",))
    if result.problems:
        return None, seed
    return sample.submission(f"{result.id}/{SAMPLES_DIR}/{name}", root, run), seed


def _names(inner: dict[str, int], result: CheckResult) -> list[str]:
    names = sorted({rel.split("/", 1)[0] for rel in inner}, key=lambda n: (len(n), n))
    for name in names:
        if not SAMPLE_NAME.fullmatch(name):
            result.refuse(f"is not a sample folder (sample-N): {HOW}", f"{SAMPLES_DIR}/{name}"[:200])
    if len(names) < 2:
        result.refuse(f"holds {len(names)} sample: consistency across samples is not estimable from one ({HOW})",
                      SAMPLES_DIR)  # fmt: skip
    return names if not result.problems else []


def check_samples(
    folder: Path, listing: FolderListing, board: BoardConfig, run: RunManifest, checked: CheckedRun,
    result: CheckResult, labels: RiskLabels | None,
) -> list[Submission]:  # fmt: skip
    """The entry's checked samples (empty when it carries none, or they were refused: the problems
    go on ``result``, located inside ``samples/``)."""
    prefix = f"{SAMPLES_DIR}/"
    inner = {rel[len(prefix) :]: size for rel, size in listing.files.items() if rel.startswith(prefix)}
    if not inner:
        if board.severe_every_sample and not (declares_reference(run) and not board.rank_reference):
            result.refuse(f"is missing: this board gates severe items on every sample ({HOW})", SAMPLES_DIR)
        return []
    out, seeds = [], {}
    for name in _names(inner, result):
        root = folder / SAMPLES_DIR / name
        child = CheckResult(result.id, root)
        mine = {rel[len(name) + 1 :]: size for rel, size in inner.items() if rel.startswith(f"{name}/")}
        found, seed = None, None
        try:
            found, seed = _check_one(root, FolderListing(root, mine), board, run, checked, child, labels, name)
        except _Stop:
            pass
        except DataError as exc:
            problem = Problem.from_error(exc, root)
            child.refuse(problem.message, problem.path, problem.line, problem.field)
        if seed is not None and repr(seed) in seeds:
            child.refuse(
                f"has the same seed as {seeds[repr(seed)]}: K samples need K seeds", MANIFEST, field="generation.seed"
            )
        seeds.setdefault(repr(seed), name)
        for p in child.problems:
            result.refuse(p.message, f"{prefix}{name}/{p.path}" if p.path else f"{prefix}{name}", p.line, p.field)
        if found is not None:
            out.append(found)
    return out if not result.problems else []
