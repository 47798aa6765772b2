"""Comparison groups: entries that were not measured alike are never ranked together.

Some differences between entries refuse an entry outright (another item set, judge
configuration, rubric or prompt than the board pins: :mod:`..submission.validate`). Others are honest
but make two entries incomparable, the way two thermometers are: the model that actually
served the judge's requests (``served_model`` in every judgment; an alias such as
``claude-sonnet-4-5`` can move to a new snapshot under one configuration) is the first. Such
entries are shown, in a group of their own with the reason, and never ranked with the rest.

A :class:`Grouping` names one such property and how a row shows it. The ranked group is the
board's pin when it has one; else the group held by more entries than any other; when two
groups tie for largest there is no basis to prefer either, and none of them is ranked (the
same rule as :mod:`..submission.consistency`); a maintainer settles it by pinning the board. Entries the
property does not apply to (a row that was not judged) stay with the ranked group.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.scoring.scores import ScoredEntry

NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class Grouping:
    """One property entries must share to be ranked together. ``value(row)`` is None where
    the property does not apply; ``pin`` is the board's value, if it pins one; ``setting``
    names the board key that pins it."""

    what: str
    value: Callable[[dict[str, Any]], str | None]
    pin: str | None
    setting: str


@dataclass(frozen=True)
class Group:
    """A group of entries and whether it is the ranked one (``reason`` says why not)."""

    by: str
    value: str
    ids: tuple[str, ...]
    ranked: bool
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"by": self.by, "value": self.value, "entries": list(self.ids), "ranked": self.ranked,
                "reason": self.reason}  # fmt: skip


def served_judge_model(row: dict[str, Any]) -> str | None:
    """The served model(s) behind an entry's judgments, as one value (None: not judged)."""
    if not row.get("judged"):
        return None
    served = row.get("judge_served_models") or []
    return ", ".join(served) if served else NOT_RECORDED


def board_groupings(board: BoardConfig) -> list[Grouping]:
    """The groupings a board applies, in order."""
    return [Grouping("served judge model", served_judge_model, board.judge_served_model, "judge_served_model")]


def _reason(grouping: Grouping, value: str, ranked: str | None, sizes: dict[str, int]) -> str:
    if grouping.pin is not None:
        return (
            f"judged by {grouping.what} {value}; this board ranks entries judged by {grouping.pin} "
            f"({grouping.setting}): entries measured differently are not ranked together"
        )
    if ranked is not None:
        return (
            f"judged by {grouping.what} {value}; the board's other {sizes[ranked]} entries by {ranked}: entries "
            f"judged by different {grouping.what}s are not ranked together (a maintainer may pin "
            f"{grouping.setting})"
        )
    listed = "; ".join(f"{v}: {n}" for v, n in sorted(sizes.items()))
    return (
        f"the entries were judged by different {grouping.what}s and none is held by a majority ({listed}): none is "
        f"ranked; a maintainer pins {grouping.setting}"
    )


def split_groups(
    entries: Sequence[ScoredEntry], groupings: Sequence[Grouping]
) -> tuple[list[ScoredEntry], list[ScoredEntry], list[Group]]:
    """``(ranked together, shown apart, groups)``. Entries shown apart get ``rank`` None, the
    ``unranked_reason`` and their ``comparison_group`` on their row."""
    kept, apart, groups = list(entries), [], []
    for grouping in groupings:
        values = {id(e): grouping.value(e.row) for e in kept}
        by_value: dict[str, list[ScoredEntry]] = defaultdict(list)
        for e in kept:
            if values[id(e)] is not None:
                by_value[str(values[id(e)])].append(e)
        if not by_value or (len(by_value) == 1 and grouping.pin in (None, *by_value)):
            continue
        sizes = {v: len(g) for v, g in by_value.items()}
        if grouping.pin is not None:
            ranked = grouping.pin
        else:
            top = max(sizes.values())
            leaders = [v for v, n in sizes.items() if n == top]
            ranked = leaders[0] if len(leaders) == 1 else None
        for value, members in sorted(by_value.items()):
            is_ranked = value == ranked
            reason = None if is_ranked else _reason(grouping, value, ranked, sizes)
            groups.append(Group(grouping.what, value, tuple(e.row["id"] for e in members), is_ranked, reason))
            if is_ranked:
                continue
            for e in members:
                e.row.update(rank=None, rank_interval=None, unranked_reason=reason)
                e.row["comparison_group"] = {"by": grouping.what, "value": value, "reason": reason}
                apart.append(e)
        shown_apart = {id(e) for e in apart}
        kept = [e for e in kept if id(e) not in shown_apart]
    return kept, apart, groups
