"""The seeker's view of an entry's replies (``seeker_judge/judgments.jsonl``, optional).

An entry may carry a second judgment of its run's replies with the lay perceived-empathy
instrument as the judge's rubric (``tide-bench judge RUN --rubric perceived``; docs/judging.md,
"The seeker's view"); the board shows it beside the factors, in the "Seeker's view" column. It is
held to the run: every line read with the seeker rubric (its fields and scale checked), judged by
one configuration with that rubric, about the run's own items, and every item of the run judged
(an unscored one kept with its reason, counted as the factors count it). A problem is refused and
located; nothing is silently left out of the mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import iter_jsonl
from tide_bench.generation.samples import Generation
from tide_bench.judging.files import JUDGMENTS_FILE
from tide_bench.judging.judgment import read_judgments
from tide_bench.judging.rubric import SEEKER_RUBRIC, load_rubric, rubric_path
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission.folder import FolderListing
from tide_bench.leaderboard.submission.layout import SEEKER_DIR
from tide_bench.leaderboard.submission.problems import Problem
from tide_bench.leaderboard.submission.result import CheckResult

SEEKER_JUDGMENTS = f"{SEEKER_DIR}/{JUDGMENTS_FILE}"
HOW = "tide-bench judge RUN --rubric perceived --out DIR, then tide-bench submit ... --seeker-judge DIR"


def seeker_rubric() -> Any:
    return load_rubric(rubric_path(SEEKER_RUBRIC))


def check_seeker(
    folder: Path, listing: FolderListing, board: BoardConfig, gens: Sequence[Generation], result: CheckResult
) -> dict[str, dict[str, Any]]:
    """The entry's seeker judgments by item (empty when it carries none, or they were refused: the
    problems go on ``result``, located in ``seeker_judge/judgments.jsonl``)."""
    if not any(rel.startswith(f"{SEEKER_DIR}/") for rel in listing.files):
        return {}
    if not listing.has(SEEKER_JUDGMENTS):
        result.refuse(f"has no {JUDGMENTS_FILE}: {HOW}", SEEKER_DIR)
        return {}
    rubric = seeker_rubric()
    want = f"{rubric.id}@v{rubric.version}"
    try:
        judgments = read_judgments(folder / SEEKER_JUDGMENTS, rubric, max_bytes=board.max_bytes, follow_symlinks=False)
    except DataError as exc:
        other = _other_rubric(folder / SEEKER_JUDGMENTS, want, board)  # the likely cause, said plainly
        if other is not None:
            result.refuse(f"judged with rubric {other[1]!r}, not the seeker's view ({want}): {HOW}",
                          SEEKER_JUDGMENTS, other[0], "judge.rubric")  # fmt: skip
            return {}
        problem = Problem.from_error(exc, folder)
        result.refuse(problem.message, problem.path, problem.line, problem.field)
        return {}
    items = {g.item_id for g in gens}
    versions: dict[str, int] = {}
    for j in judgments:
        if j.judge.rubric != want:
            result.refuse(f"judged with rubric {j.judge.rubric!r}, not the seeker's view ({want}): {HOW}",
                          SEEKER_JUDGMENTS, j.line, "judge.rubric")  # fmt: skip
            return {}
        if j.item_id not in items:
            result.refuse("is not an item of the entry's run", SEEKER_JUDGMENTS, j.line, "item_id")
            return {}
        versions.setdefault(j.judge.version, j.line)
    if len(versions) > 1:
        line = sorted(versions.values())[1]
        result.refuse("judged by more than one judge configuration", SEEKER_JUDGMENTS, line, "judge.version")
        return {}
    missing = sorted(items - {j.item_id for j in judgments})
    if missing:
        result.refuse(
            f"{len(missing)} of the run's {len(items)} items have no seeker judgment (first: {missing[0]}): judge "
            "every reply (an unscored one is kept with its reason)",
            SEEKER_JUDGMENTS,
        )
        return {}
    return {j.item_id: j.as_record() for j in judgments}


def _other_rubric(path: Path, want: str, board: BoardConfig) -> tuple[int, str] | None:
    """The first line that names another rubric than ``want`` (line, rubric), if any."""
    try:
        for line, obj in iter_jsonl(path, DataError, max_bytes=board.max_bytes, follow_symlinks=False):
            judge = obj.get("judge") if isinstance(obj, dict) else None
            named = judge.get("rubric") if isinstance(judge, dict) else None
            if isinstance(named, str) and named != want:
                return line, named[:80]
    except DataError:
        return None
    return None
