"""One check list for every command that accepts or refuses a submission.

``tide-bench submit``, ``tide-bench leaderboard validate`` and ``tide-bench leaderboard build
--strict`` decide with the same two steps, from here, so a submission one of them accepts is
never refused by another (``tests/leaderboard/test_commands_agree.py`` walks hostile submissions
through all three):

1. :func:`check_folder`: every check of one entry on its own
   (:func:`tide_bench.leaderboard.submission.validate.validate_folder`, in the order of :data:`CHECKS`);
2. :func:`check_together`: the entries against each other
   (:func:`tide_bench.leaderboard.submission.consistency.cross_check`): one item set, one judge, one
   anchor, distinct names and replies.

``submit`` checks the new entry together with the entries already in the submissions folder,
as CI will. The embedding spot check draws random items, so it runs where asked (``validate``
and ``submit`` by default, ``build --spot-checks``); everything else is deterministic and
runs in all three (``build`` without ``--strict`` leaves only the text-metric recomputation
to ``validate``, which CI runs on the same files).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tide_bench.core.gc_pause import no_gc_pauses
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission.consistency import cross_check
from tide_bench.leaderboard.submission.result import CheckResult
from tide_bench.leaderboard.submission.validate import submission_folders, validate_folder

CHECKS: tuple[tuple[str, str], ...] = (
    ("folder", "links, devices, file count and size, before any file is opened"),
    ("metadata", "submission.yaml's schema, id and an honest display name"),
    ("run", "run.json's types, split, split version, no --limit, not the synthetic sample, the prompt condition"),
    ("items", "persona-hash split membership, item ids, whole conversations, the split hash against the pins"),
    ("reference row", "a declared reference holds the data's references item for item; no disguised reference"),
    ("prompts", "every item's recorded prompt is the board's prompt for the claimed condition"),
    ("reference metrics", "ROUGE-L, distinct-n and length recomputed; cosine spot-checked with the board's embedder"),
    ("judgments", "one per item, one judge configuration, keys matching the replies, the summary field by field"),
    ("admission", "items unscored for infrastructure reasons within the board's share"),
    ("privacy", "no local path of the submitter's machine in any public file"),
    ("metadata against the run", "generation settings, parameters, hub id and revision as run.json records them"),
    ("together", "one item set, one judge configuration, one anchor, distinct names and replies"),
)

check_folder = validate_folder
check_together = cross_check


def check_all(
    folders: Sequence[Path],
    board: BoardConfig,
    *,
    spot_checks: bool = True,
    seed: int | None = None,
    text_metrics: bool = True,
) -> list[CheckResult]:
    """Every check of every folder, then the entries against each other."""
    with no_gc_pauses():
        checks = [
            check_folder(p, board, spot_checks=spot_checks, seed=seed, text_metrics=text_metrics) for p in folders
        ]
    check_together(checks, board)
    return checks


def validate_many(
    folder: str | Path,
    board: BoardConfig,
    *,
    spot_checks: bool = True,
    seed: int | None = None,
    text_metrics: bool = True,
) -> list[CheckResult]:
    """Validate one submission folder, or every submission inside a submissions folder, and
    then the entries against each other (here rather than in validate.py, which this module
    imports: no import cycle)."""
    return check_all(submission_folders(folder), board, spot_checks=spot_checks, seed=seed, text_metrics=text_metrics)


def check_new(
    staging: Path,
    sid: str,
    submissions: Path,
    board: BoardConfig,
    *,
    spot_checks: bool = True,
    seed: int | None = None,
) -> CheckResult:
    """The check ``submit`` makes of a staged entry that will be ``submissions/<sid>``: its own
    checks, then against the entries already there (an entry of the same id is the one it
    replaces, so it is left out), as CI will check the pull request."""
    new = check_folder(staging, board, spot_checks=spot_checks, seed=seed, folder_id=sid)
    others = [p for p in submission_folders(submissions) if p.name != sid] if submissions.is_dir() else []
    with no_gc_pauses():
        checks = [check_folder(p, board, spot_checks=False) for p in others]
    check_together([*checks, new], board)
    return new
