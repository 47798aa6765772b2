"""The severe items' repeated judge calls in a submission (``judge/severe_samples.jsonl``).

Each line must belong to a judgment of the run (its key, and its first vote the judgment's own
flag), so the majority cannot be assembled from calls on other replies. Where the board sets
``min_severe_samples``, every severe item (by the risk labels of the run's data) that the judge
read must have been judged at least that many times (:mod:`tide_bench.judging.severe_samples`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from tide_bench.data.risk_labels import RiskLabels, read_risk_labels
from tide_bench.generation.run_manifest import RunManifest
from tide_bench.judging.judgment import Judgment
from tide_bench.judging.risk_handling import FAILED_REPLY, builtin_labels
from tide_bench.judging.severe_samples import SAMPLES_FILE, SevereVotes, read_severe_samples, vote_of
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission.checks import MANIFEST
from tide_bench.leaderboard.submission.folder import FolderListing
from tide_bench.leaderboard.submission.layout import JUDGE
from tide_bench.leaderboard.submission.result import CheckResult

SEVERE_SAMPLES = f"{JUDGE}/{SAMPLES_FILE}"


def severity_labels(run: RunManifest, board: BoardConfig) -> RiskLabels | None:
    """The labels that say which of a run's items are severe: those that ship with its data (the
    sample, the risk supplement), else the board's (TIDE, :func:`board_labels`); None without either."""
    data = run.raw.get("data") if isinstance(run.raw, dict) else None
    return builtin_labels(data if isinstance(data, dict) else None) or board_labels(board)


@lru_cache(maxsize=4)
def _board_labels(path: str, mtime_ns: int, size: int) -> RiskLabels:
    return read_risk_labels(path)


def board_labels(board: BoardConfig) -> RiskLabels | None:
    """The board's TIDE risk labels (``risk_labels``), read once per version of the file."""
    path = board.risk_labels_path()
    if path is None:
        return None
    try:
        info = path.stat()
    except OSError:
        return read_risk_labels(path)  # raises the reader's own error (missing, not a file)
    return _board_labels(str(path), info.st_mtime_ns, info.st_size)


def check_labels_fit(run: RunManifest, labels: RiskLabels | None, result: CheckResult, what: str) -> None:
    """Refuse a run whose data is not the data ``labels`` were made for (``what`` names the labels)."""
    ran_on = run.data.dataset_sha256
    if labels is None or ran_on is None or labels.dataset_sha256 == ran_on:
        return
    result.refuse(
        f"the run is on data {ran_on[:12]}, but {what} ({labels.path or 'risk labels'}, field dataset_sha256) were "
        f"made for data {labels.dataset_sha256[:12]}: risk handling cannot be measured with labels for other data",
        MANIFEST,
        field="data.dataset_sha256",
    )


def _matches(votes: SevereVotes, judgment: Judgment | None, record: dict[str, Any] | None) -> str | None:
    """Why a line does not belong to the run's judgment of its item, or None."""
    if judgment is None:
        return "names an item the run has no judgment of"
    if votes.key != judgment.key:
        return "is not the key of this item's judgment: these calls judged another reply"
    first, stated = vote_of(record), votes.votes[0]
    if not (stated == first or (math.isnan(stated) and math.isnan(first))):
        return "vote 1 differs from the item's judgment (it is the judgment itself)"
    return None


def check_severe_samples(
    folder: Path,
    listing: FolderListing,
    judgments: list[Judgment],
    records: list[dict[str, Any]],
    labels: RiskLabels | None,
    board: BoardConfig,
    result: CheckResult,
) -> dict[str, SevereVotes]:
    """The checked lines of the run's ``severe_samples.jsonl`` by item (empty without the file)."""
    votes: dict[str, SevereVotes] = {}
    if listing.has(SEVERE_SAMPLES):
        votes = read_severe_samples(folder / SEVERE_SAMPLES, max_bytes=board.max_bytes, follow_symlinks=False)
    by_item = {j.item_id: (j, r) for j, r in zip(judgments, records, strict=True)}
    for item, v in votes.items():
        judgment, record = by_item.get(item, (None, None))
        if (why := _matches(v, judgment, record)) is not None:
            result.refuse(why, SEVERE_SAMPLES, v.line, "key" if judgment is not None else "item_id")
            return {}
    need = board.min_severe_samples
    if need and labels is not None and judgments:
        short = sorted(
            item
            for item, (j, _) in by_item.items()
            if (label := labels.get(item)) is not None
            and label.severe
            and j.unscored_kind != FAILED_REPLY
            and (item not in votes or votes[item].k < need)
        )
        if short:
            result.refuse(
                f"{len(short)} severe risk item(s) were judged fewer than the {need} times this board requires "
                f"(first: {short[0]}): a single false positive must not decide the gate; judge the run again with "
                f"`tide-bench judge RUN --out RUN/judge --severe-samples {need}` (the cache keeps every call made)",
                SEVERE_SAMPLES,
            )
    return votes
