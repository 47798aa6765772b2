"""The checks of one judged run inside a submission folder, from its samples to its judge files.

Why a module of its own: a submission holds its main run (``run/``, ``judge/``) and, where the
board asks for it, a risk-supplement run (``risk_supplement/run/``, ``risk_supplement/judge/``,
:mod:`.supplement`). Both go through these same per-item checks, in this order: the samples
through the typed reader, the items against the split definition and the pins, the reference
row, every item's recorded prompt, the reference metrics (the main run only: the supplement's
are not shown), the judgments against the replies, the admission limit, the judge configuration
and the severe items' repeated judge calls (:mod:`.severe`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.data.risk_labels import RiskLabels
from tide_bench.generation.run_manifest import RunManifest
from tide_bench.generation.samples import Generation
from tide_bench.judging.judgment import Judgment
from tide_bench.judging.severe_samples import SevereVotes
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission.checks import (
    MANIFEST,
    check_admission,
    check_items,
    check_judge_config,
    check_judgments,
    check_reference,
    prompt_string,
    read_results_file,
    read_samples,
    refuse_listed,
    system_prompt_placement,
)
from tide_bench.leaderboard.submission.folder import FolderListing
from tide_bench.leaderboard.submission.layout import Submission
from tide_bench.leaderboard.submission.problems import Problem
from tide_bench.leaderboard.submission.prompt_check import prompt_problems
from tide_bench.leaderboard.submission.recompute import cosine_problems, has_cosine, recompute_text_metrics
from tide_bench.leaderboard.submission.reference_row import declares_reference
from tide_bench.leaderboard.submission.result import CheckResult
from tide_bench.leaderboard.submission.severe import check_severe_samples


@dataclass
class CheckedRun:
    """What the checks of one run read, for the checks and the submission that follow."""

    gens: list[Generation]
    split_hash: str
    results: tuple[str, Any] | None
    judgments: list[Judgment]
    records: list[dict[str, Any]]
    config: Any
    severe_votes: dict[str, SevereVotes] = field(default_factory=dict)

    def submission(
        self, sid: str, root: Path, run: RunManifest, meta: dict[str, Any] | None = None, **parts: Any
    ) -> Submission:
        """This checked run as a :class:`Submission` (an entry's run, its risk-supplement run, one of its
        samples): its replies, judgments by item, judge, served judge models and severe votes; ``parts``
        the entry's other parts."""
        return Submission(
            sid,
            root,
            meta or {},
            run.raw,
            self.gens,
            judgments={j.item_id: r for j, r in zip(self.judgments, self.records, strict=True)},
            judge=self.judgments[0].judge.as_dict() if self.judgments else None,
            run=run,
            split_hash=self.split_hash,
            served_models=tuple(sorted({j.served_model for j in self.judgments if j.served_model})),
            severe_votes=self.severe_votes,
            **parts,
        )


def _prompt_checks(
    gens: list[Generation],
    run: RunManifest,
    results: tuple[str, Any] | None,
    board: BoardConfig,
    folder: Path,
    result: CheckResult,
) -> None:
    if declares_reference(run) or run.prompt_condition not in board.prompt_conditions:
        return
    template = results[1].get("chat_template") if results and isinstance(results[1], dict) else None
    problems = prompt_problems(
        gens,
        run.prompt_condition,
        board,
        folder,
        template if isinstance(template, str) else None,
        prompt_string(run, "system_instruction"),
        placement=system_prompt_placement(run),
    )
    refuse_listed(result, problems, "prompt problems")


def _metric_checks(
    gens: list[Generation], run: RunManifest, board: BoardConfig, folder: Path, result: CheckResult, recompute: bool
) -> list[Generation]:
    metric_problems: list[Problem] = []
    if recompute:
        gens, metric_problems = recompute_text_metrics(gens, folder)
    refuse_listed(result, metric_problems + cosine_problems(gens, folder), "metric problems")
    if run.embedding_model and run.embedding_model != board.embedding_model and has_cosine(gens):
        result.refuse(
            f"the run's cosine similarity used another embedding model than the board's ({board.embedding_model})",
            MANIFEST,
            field="reference_metrics.method.embedding_model",
        )
    return gens


def check_run_files(
    folder: Path,
    listing: FolderListing,
    run: RunManifest,
    board: BoardConfig,
    result: CheckResult,
    *,
    text_metrics: bool,
    metrics: bool = True,
    labels: RiskLabels | None = None,
) -> CheckedRun:
    """Every check of one run's files (the module docstring's order). ``metrics``: check the
    reference metrics (``text_metrics``: recompute ROUGE-L, distinct-n and length); ``labels``:
    the risk labels that say which items are severe (for the board's ``min_severe_samples``)."""
    gens = read_samples(folder, run, listing, board, result)
    split_hash = check_items(gens, run, board, folder, result)
    check_reference(gens, run, board, folder, result)
    results = read_results_file(folder, run, listing, board, result)
    _prompt_checks(gens, run, results, board, folder, result)
    if metrics:
        gens = _metric_checks(gens, run, board, folder, result, text_metrics)
    judgments, records = check_judgments(folder, listing, gens, board, result)
    check_admission(judgments, len(gens), board, result)
    config = check_judge_config(folder, listing, judgments[0].judge.version if judgments else None, board, result)
    votes = check_severe_samples(folder, listing, judgments, records, labels, board, result)
    return CheckedRun(gens, split_hash, results, judgments, records, config, votes)
