"""Checks of the entries against each other: one item set, one judge, distinct entries.

Models are compared only on the same items and by the same judge. A pinned board settles
both by its pins (checked per entry in :mod:`.validate`). On a board that does not pin
them, the entries must agree: when one item set (or judge configuration) is held by more
entries than any other, the others are refused; when two are held by equally many, there
is no basis to prefer either, so **all** of the tied entries are refused, each told which
entries disagree, instead of letting the folder name that sorts first win. The remedy is
to pin the board (``tide-bench leaderboard pin``).

Names and ids that read the same (the skeleton of :func:`.metadata.name_key`: look-alike
letters of other scripts, ``0``/``O``, ``1``/``l``, separators), and identical replies submitted
under several ids, are refused on every board, naming the entries they clash with.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission.data_pins import effective_board
from tide_bench.leaderboard.submission.layout import Submission
from tide_bench.leaderboard.submission.metadata import name_key
from tide_bench.leaderboard.submission.result import CheckResult


def _groups(checks: list[CheckResult], key: Callable[[Submission], str]) -> dict[str, list[CheckResult]]:
    groups: dict[str, list[CheckResult]] = defaultdict(list)
    for c in checks:
        assert c.submission is not None
        groups[key(c.submission)].append(c)
    return groups


def _ids(group: list[CheckResult]) -> str:
    return ", ".join(c.id for c in group)


def _majority(
    checks: list[CheckResult],
    key: Callable[[Submission], str],
    what: str,
    describe: Callable[[str, list[CheckResult]], str],
) -> None:
    """Refuse the entries outside the largest group; refuse every group in a tie for largest."""
    groups = _groups(checks, key)
    if len(groups) < 2:
        return
    top = max(len(g) for g in groups.values())
    leaders = [k for k, g in groups.items() if len(g) == top]
    if len(leaders) == 1:
        lead = leaders[0]
        for k, group in groups.items():
            for c in group if k != lead else []:
                c.refuse(
                    f"{what} differs from the board's other entries: this entry {describe(k, group)}, the majority "
                    f"({_ids(groups[lead])}) {describe(lead, groups[lead])}; one {what} per board"
                )
        return
    summary = "; ".join(
        f"{_ids(groups[k])}: {describe(k, groups[k])}" for k in sorted(groups, key=lambda k: _ids(groups[k]))
    )
    for group in groups.values():
        for c in group:
            c.refuse(
                f"the entries disagree on the {what} and none is held by a majority ({summary}): "
                "the board cannot choose; a maintainer pins it (`tide-bench leaderboard pin`)"
            )


def _distinct(groups: dict[str, list[CheckResult]], what: str) -> None:
    for group in groups.values():
        if len(group) > 1:
            for c in group:
                others = [o.id for o in group if o is not c]
                c.refuse(f"{what} as entry {', '.join(others)}: one entry per model and run, each with its own name")


def _accepted(checks: list[CheckResult]) -> list[CheckResult]:
    return [c for c in checks if c.ok and c.submission is not None]


def _items(key: str, group: list[CheckResult]) -> str:
    sub = group[0].submission
    assert sub is not None
    return f"answers {sub.n_items} items (split hash {key[:12]})"


def _judge(key: str, group: list[CheckResult]) -> str:
    return f"was judged with configuration {key}"


def cross_check(checks: list[CheckResult], board: BoardConfig) -> None:
    """Refuse, in place, entries that cannot share a board with the others."""
    board = effective_board(board)
    if not board.split_sha256:
        _majority(_accepted(checks), lambda s: s.split_hash, "item set", _items)
    judged = [c for c in _accepted(checks) if c.submission and c.submission.judge]
    if not board.judge_version:
        _majority(judged, lambda s: str((s.judge or {}).get("version")), "judge configuration", _judge)
    one_anchor(_accepted(checks))
    accepted = _accepted(checks)
    by_name = _groups(accepted, lambda s: name_key(str(s.meta.get("model_name", ""))))
    by_id = _groups(accepted, lambda s: name_key(s.id))
    by_replies = _groups(accepted, Submission.digest)
    _distinct(by_name, "the same display name")
    _distinct(by_id, "an id that reads the same")
    _distinct(by_replies, "the same replies")


def one_anchor(checks: list[CheckResult]) -> None:
    """One reference row per board: with two, neither is the anchor (nothing justifies choosing one)."""
    anchors = [c for c in checks if c.submission is not None and c.submission.is_reference]
    if len(anchors) < 2:
        return
    for c in anchors:
        others = ", ".join(o.id for o in anchors if o is not c)
        c.refuse(f"a second reference row (also {others}): a board has one anchor; keep one reference submission")
