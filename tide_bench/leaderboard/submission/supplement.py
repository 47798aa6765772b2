"""A risk battery on every entry: the submission's risk-supplement run (issue 44, clinical re-check V2).

Why: whether a model is safe cannot depend on whether a maintainer labelled the board's split, nor on
TIDE's unknown risk prevalence. A board with ``require_risk_supplement: true`` (the shipped TIDE
board) refuses an entry that does not also answer the built-in risk supplement
(``tide_bench/data/risk_supplement/``: 76 synthetic messages on every rung of the risk ladder, with
item-level labels), judged by the same judge. ``tide-bench submit RUN --risk-supplement RUN2``
packages it beside the main run::

    risk_supplement/run/run.json          the same model on --data risk-supplement --split all
    risk_supplement/run/lm_eval/...       its samples
    risk_supplement/judge/judgments.jsonl, judge_config.json, judge_summary.json,
                          severe_samples.jsonl (the severe items' repeated calls)

It goes through the main run's per-item checks (:func:`.run_checks.check_run_files`: items and
their split hash against the supplement's own pins, prompts, judgments, admission, severe calls)
and is held to the main run: the same model (backend, name, revision, weights hash, dtype, size),
the same prompt condition and prompt hash, the same generation settings, and the same judge
configuration and served judge model. Every problem is located inside ``risk_supplement/``. The
reference anchor is exempt (it is TIDE's own replies, not a model), unless the board ranks it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.data.sources import RISK_SUPPLEMENT
from tide_bench.generation.run_manifest import MANIFEST_NAME, RunManifest, read_manifest
from tide_bench.judging.risk_handling import builtin_labels
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission.checks import ALL_SPLITS, MANIFEST, check_local_paths, check_prompt
from tide_bench.leaderboard.submission.data_pins import effective_board
from tide_bench.leaderboard.submission.folder import FolderListing
from tide_bench.leaderboard.submission.layout import JUDGE_CONFIG, JUDGMENTS, Submission
from tide_bench.leaderboard.submission.layout import RISK_SUPPLEMENT as FOLDER
from tide_bench.leaderboard.submission.problems import Problem
from tide_bench.leaderboard.submission.reference_row import declares_reference
from tide_bench.leaderboard.submission.result import CheckResult, _Stop
from tide_bench.leaderboard.submission.run_checks import CheckedRun, check_run_files
from tide_bench.leaderboard.submission.severe import check_labels_fit

MODEL_FIELDS = ("backend", "name", "revision", "sha", "dtype", "num_parameters", "is_reference")
GENERATION_SETTINGS = ("temperature", "do_sample", "top_p", "max_gen_toks")
PROMPT_FIELDS = ("condition", "prompt_sha256", "system_prompt_placement", "system_instruction")
HOW = (
    "`tide-bench eval --model ... --data risk-supplement --split all --out RUN2`, `tide-bench judge RUN2 --out "
    "RUN2/judge` with the entry's judge, then `tide-bench submit RUN --risk-supplement RUN2 ...`"
)


def supplement_board(board: BoardConfig) -> BoardConfig:
    """The board a supplement run is checked against: the board's judge, prompt and limits, with the
    risk supplement's own item pins (every item, every persona's own split)."""
    return effective_board(
        dataclasses.replace(
            board,
            split=ALL_SPLITS,
            split_version=None,
            conversations_per_persona=None,
            dataset_release=None,
            split_sha256=None,
            n_items=None,
            item_ids_sha256=None,
            data_source=RISK_SUPPLEMENT,
            require_judgments=True,
        )
    )


def _data_checks(run: RunManifest, result: CheckResult) -> None:
    if run.data.source_kind != RISK_SUPPLEMENT:
        result.refuse(
            f"the risk-supplement run was made on {run.data.source_kind or 'unknown'} data, not the built-in risk "
            f"supplement: {HOW}",
            MANIFEST,
            field="data.source_kind",
        )
    if run.data.split != ALL_SPLITS:
        result.refuse(
            f"the risk-supplement run used split {run.data.split!r}: answer all of it (--split all)",
            MANIFEST,
            field="data.split",
        )
    if run.generation.limit is not None:
        result.refuse("the run used --limit: answer every item of the supplement", MANIFEST, field="generation.limit")


def _prompt_value(run: RunManifest, key: str) -> Any:
    prompt = run.raw.get("prompt") if isinstance(run.raw, dict) else None
    return prompt.get(key) if isinstance(prompt, dict) else None


def same_as_main(
    main: RunManifest,
    supp: RunManifest,
    checked: CheckedRun,
    sup: CheckedRun,
    result: CheckResult,
    *,
    name: str = "the risk-supplement run",
    settings: tuple[str, ...] = GENERATION_SETTINGS,
) -> None:
    """A second run of the entry (``name``: the risk supplement, a sample) answers for the same
    model, prompt and judge as the entry's run (and the same ``settings`` of generation)."""
    pairs: list[tuple[str, Any, Any, str]] = [
        (f"model.{f}", getattr(supp.model, f), getattr(main.model, f), "model") for f in MODEL_FIELDS
    ]
    pairs += [(f"prompt.{f}", _prompt_value(supp, f), _prompt_value(main, f), "prompt") for f in PROMPT_FIELDS]
    pairs += [
        (f"generation.{f}", supp.generation.setting(f), main.generation.setting(f), "generation settings")
        for f in settings
    ]
    for where, got, want, what in pairs:
        if got != want:
            result.refuse(
                f"is {str(got)[:80]!r} in {name} but {str(want)[:80]!r} in the entry's run: {name} must be "
                f"answered with the same {what}",
                MANIFEST,
                field=where,
            )
    judge, want_judge = (
        (sup.judgments[0].judge if sup.judgments else None),
        (checked.judgments[0].judge if checked.judgments else None),
    )
    if judge is not None and want_judge is not None and judge.version != want_judge.version:
        result.refuse(
            f"judged with configuration {judge.version}, the entry's run with {want_judge.version}: judge "
            f"{name} with the same judge",
            JUDGMENTS,
            sup.judgments[0].line,
            "judge.version",
        )
    served = {j.served_model for j in sup.judgments if j.served_model}
    main_served = {j.served_model for j in checked.judgments if j.served_model}
    if served and main_served and served != main_served:
        result.refuse(
            f"the judge's API served {', '.join(sorted(served))} for {name} but "
            f"{', '.join(sorted(main_served))} for the entry's run: judge both with the same served model",
            JUDGMENTS,
            field="served_model",
        )


def _check(
    root: Path, listing: FolderListing, board: BoardConfig, run: RunManifest, checked: CheckedRun, result: CheckResult
) -> Submission | None:
    if not listing.has(MANIFEST):
        result.stop(f"file not found: the risk-supplement run's {MANIFEST_NAME} ({HOW})", MANIFEST)
    supp = read_manifest(root / MANIFEST, max_bytes=board.max_bytes, follow_symlinks=False)
    sboard = supplement_board(board)
    labels = builtin_labels({"source_kind": RISK_SUPPLEMENT})
    _data_checks(supp, result)
    check_labels_fit(supp, labels, result, "the risk supplement's labels")
    check_prompt(supp, sboard, result)
    sup = check_run_files(
        root,
        listing,
        supp,
        sboard,
        result,
        text_metrics=False,
        metrics=False,
        labels=labels,
    )
    same_as_main(run, supp, checked, sup, result)
    documents = {MANIFEST: supp.raw} | ({JUDGE_CONFIG: sup.config} if sup.config is not None else {})
    if sup.results:
        documents[sup.results[0]] = sup.results[1]
    check_local_paths(root, listing, documents, sup.gens, result)
    if result.problems:
        return None
    return sup.submission(f"{result.id}/{FOLDER}", root, supp)


def check_supplement(
    folder: Path, listing: FolderListing, board: BoardConfig, run: RunManifest, checked: CheckedRun, result: CheckResult
) -> Submission | None:
    """The entry's risk-supplement run, checked (None when it has none, or it was refused: the
    problems go on ``result``, located inside ``risk_supplement/``)."""
    prefix = f"{FOLDER}/"
    inner = {rel[len(prefix) :]: size for rel, size in listing.files.items() if rel.startswith(prefix)}
    exempt = declares_reference(run) and not board.rank_reference
    if not inner:
        if board.require_risk_supplement and not exempt:
            result.refuse(
                "is missing: this board requires every entry to answer the risk supplement with the same model, prompt "
                f"condition and judge ({HOW})",
                f"{prefix}{MANIFEST}",
            )
        return None
    root = folder / FOLDER
    child = CheckResult(result.id, root)
    found = None
    try:
        found = _check(root, FolderListing(root, inner), board, run, checked, child)
    except _Stop:
        pass
    except DataError as exc:
        problem = Problem.from_error(exc, root)
        child.refuse(problem.message, problem.path, problem.line, problem.field)
    for p in child.problems:
        result.refuse(p.message, f"{prefix}{p.path}" if p.path else prefix.rstrip("/"), p.line, p.field)
    return found
