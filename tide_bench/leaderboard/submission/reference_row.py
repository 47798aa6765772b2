"""The reference row is derived from the data, never taken on a submitter's word.

A board's reference row (its anchor: the data's own reference replies, judged like every
entry) tells every reader where the scale tops out, so a row may be the anchor only if its
replies *are* the data's reference replies, item for item:

* each reply's content hash equals the hash of the item's reference reply, where the item's
  reference is the board's data (``data_source``, e.g. the built-in sample on the demo board)
  when the board can load it, else the item's own record, which the split hash binds to the
  snapshot the board pins (:mod:`.validate`); a declared reference with any other reply is
  refused, naming the first differing item;
* with the board's data at hand, it answers exactly the board's items (none missing, none
  added);
* replies that are all the references, submitted under a model's name, are the reference
  row in disguise: refused, with the command that makes the real one;
* one anchor per board (:func:`one_anchor`, run with the checks of entries together).

Its name on the board comes from the data source too
(:func:`tide_bench.generation.reference.reference_label`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from operator import attrgetter
from pathlib import Path

from tide_bench.generation.run_manifest import RunManifest
from tide_bench.generation.samples import Generation
from tide_bench.leaderboard.config import REFERENCE_CONDITION, BoardConfig
from tide_bench.leaderboard.submission.problems import Problem, relative

MAKE_REFERENCE = "`tide-bench eval --model reference` (then judge it like any run)"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def declares_reference(run: RunManifest) -> bool:
    """Whether a run claims to be the reference row (either of its two marks)."""
    return run.prompt_condition == REFERENCE_CONDITION or run.model.is_reference is True


@lru_cache(maxsize=4)
def data_references(spec: str, split: str) -> Mapping[str, str]:
    """``{item_id: content hash of its reference reply}`` of a split of a data source."""
    from tide_bench.data.sources import load_dataset

    return {i.item_id: content_hash(i.reference_reply) for i in load_dataset(spec).items_for(split)}


def board_references(board: BoardConfig) -> Mapping[str, str] | None:
    """The reference hashes of the board's own data, when the board names a loadable source."""
    return data_references(board.data_source, board.split) if board.data_source else None


def reference_problems(gens: Sequence[Generation], board: BoardConfig, root: Path) -> list[Problem]:
    """Why a declared reference row is not the data's references (empty: it is)."""
    expected = board_references(board)
    ordered = sorted(gens, key=attrgetter("item_id"))
    problems: list[Problem] = []
    if expected is not None:
        extra = [g for g in ordered if g.item_id not in expected]
        if extra:
            problems.append(
                Problem(
                    f"is not an item of the board's data ({board.data_source}, split {board.split}); "
                    f"{len(extra)} such item(s): the reference row answers exactly the board's items",
                    relative(extra[0].file, root),
                    extra[0].line,
                    "doc.item_id",
                )
            )
        missing = sorted(set(expected) - {g.item_id for g in gens})
        if missing:
            problems.append(
                Problem(
                    f"{len(missing)} item(s) of the board's data have no reply (first: {missing[0]}): the reference "
                    "row answers exactly the board's items"
                )
            )

    def wanted(g: Generation) -> str | None:
        return content_hash(g.reference_reply) if expected is None else expected.get(g.item_id)

    differing = [g for g in ordered if (want := wanted(g)) is not None and content_hash(g.reply) != want]
    if differing:
        first = differing[0]
        source = f"the board's data ({board.data_source})" if expected is not None else "the item's record"
        problems.append(
            Problem(
                f"item {first.item_id}: the reply is not the data's reference reply (compared by content hash with "
                f"{source}; {len(differing)} of {len(gens)} items differ): a reference row's replies must be the "
                f"references themselves; make it with {MAKE_REFERENCE}",
                relative(first.file, root),
                first.line,
                "filtered_resps",
            )
        )
    return problems


def disguised_reference(gens: Sequence[Generation], root: Path) -> Problem | None:
    """A problem when every reply is the item's reference reply but the run does not say so."""
    if not gens or any(g.reply != g.reference_reply for g in gens):
        return None
    first = min(gens, key=attrgetter("item_id"))
    return Problem(
        "every reply is the data's reference reply: this is the reference row, not a model's; submit it as the "
        f"reference run, made with {MAKE_REFERENCE}",
        relative(first.file, root),
        first.line,
        "filtered_resps",
    )
