"""The submission checks' whole-column tests agree with the item-by-item checks they skip.

A board build checks every item of every entry; the common case (nothing wrong) is decided by a
few set and array operations (``_items_sound``, ``_conversations_sound``, ``_cosines_sound``), and
only a "not sound" answer runs the item-by-item checks that name the problem. So the fast answer
must be "sound" exactly when the item-by-item checks find nothing: these tests draw item sets
with every kind of fault (another split, a persona of another split, an id not built from its
parts, a foreign split hash, a duplicate or missing turn, a persona short of conversations, a
cosine out of range, NaN or missing on some items) and compare the two.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from tide_bench.data.schema import make_item_id
from tide_bench.data.splits import SPLIT_VERSION, split_of
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission import checks, recompute
from tide_bench.leaderboard.submission.result import CheckResult

FOLDER = Path("/submission")
TEST_PERSONAS = [str(p) for p in range(1, 400) if split_of(str(p)) == "test"][:3]
OTHER_PERSONA = next(str(p) for p in range(1, 400) if split_of(str(p)) != "test")
RUN = SimpleNamespace(data=SimpleNamespace(split_sha256="a" * 64))


def _item(persona: str, conversation: int, turn: int, split_hash: str) -> SimpleNamespace:
    """An item with the fields the checks read (its id is set by the caller)."""
    return SimpleNamespace(
        persona_id=persona,
        conversation_id=f"conversation_{conversation}",
        turn=turn,
        split="test",
        split_sha256=split_hash,
        metrics={"cosine_sim": 0.5},
        file=str(FOLDER / "samples.jsonl"),
        line=1,
    )


@st.composite
def _items(draw: st.DrawFn) -> list[SimpleNamespace]:
    """A small item set, sound as drawn, then given zero to three faults."""
    personas = draw(st.lists(st.sampled_from(TEST_PERSONAS), min_size=1, max_size=3, unique=True))
    turns = draw(st.integers(min_value=1, max_value=3))
    gens = [
        _item(p, c, t, draw(st.sampled_from(["", "a" * 64])))
        for p in personas
        for c in (1, 2)
        for t in range(1, turns + 1)
    ]
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        g = draw(st.sampled_from(gens))
        fault = draw(
            st.sampled_from(
                ["split", "persona", "turn", "conversation", "hash", "drop", "copy", "cosine", "cosine-missing"]
            )
        )
        if fault == "split":
            g.split = draw(st.sampled_from(["train", "validation"]))
        elif fault == "persona":
            g.persona_id = OTHER_PERSONA
        elif fault == "turn":
            g.turn = draw(st.integers(min_value=1, max_value=5))
        elif fault == "conversation":
            g.conversation_id = "conversation_9"
        elif fault == "hash":
            g.split_sha256 = "b" * 64
        elif fault == "drop" and len(gens) > 1:
            gens.remove(g)
        elif fault == "copy":
            gens.append(SimpleNamespace(**{**vars(g), "metrics": dict(g.metrics)}))
        elif fault == "cosine":
            g.metrics["cosine_sim"] = draw(st.sampled_from([math.nan, 1.5, -1.0000001, 1.0000001, 0.99]))
        elif fault == "cosine-missing":
            g.metrics.pop("cosine_sim", None)
    bad_id = draw(st.booleans())
    for k, g in enumerate(gens):
        g.item_id = make_item_id(g.persona_id, g.conversation_id, g.turn) + ("x" if bad_id and k == 0 else "")
    if draw(st.booleans()):  # cosine on no item at all: sound
        for g in gens:
            g.metrics = {}
    return gens


@settings(max_examples=400, derandomize=True, deadline=None)
@given(gens=_items(), per_persona=st.sampled_from([None, 2, 3]), pinned_split=st.booleans())
def test_whole_column_checks_agree_with_the_item_checks(
    gens: list[SimpleNamespace], per_persona: int | None, pinned_split: bool
) -> None:
    board = BoardConfig(conversations_per_persona=per_persona, split_version=SPLIT_VERSION if pinned_split else None)
    item_problems = [p for g in gens for p in checks._item_problems(g, RUN, board, FOLDER, {})]  # type: ignore[arg-type]
    assert checks._items_sound(gens, RUN, board) == (not item_problems)  # type: ignore[arg-type]
    result = CheckResult("entry", FOLDER)
    checks._conversation_problems(gens, board, FOLDER, result)  # type: ignore[arg-type]
    assert checks._conversations_sound(gens, board) == result.ok  # type: ignore[arg-type]
    assert recompute._cosines_sound(gens) == (not recompute._cosine_problems(gens, FOLDER))  # type: ignore[arg-type]


def test_each_fault_is_found_by_the_whole_column_checks() -> None:
    """Each check, on a sound set, then on the same set with one fault of its kind."""
    board = BoardConfig(conversations_per_persona=2)

    def sound() -> list[SimpleNamespace]:
        gens = [_item(p, c, t, "") for p in TEST_PERSONAS[:2] for c in (1, 2) for t in (1, 2)]
        for g in gens:
            g.item_id = make_item_id(g.persona_id, g.conversation_id, g.turn)
        return gens

    assert checks._items_sound(sound(), RUN, board) and checks._conversations_sound(sound(), board)  # type: ignore[arg-type]
    assert recompute._cosines_sound(sound())  # type: ignore[arg-type]
    for field, value in [("split", "train"), ("item_id", "1/conversation_1/turn9"), ("split_sha256", "b" * 64)]:
        gens = sound()
        setattr(gens[3], field, value)
        assert not checks._items_sound(gens, RUN, board), field  # type: ignore[arg-type]
    gens = sound()
    gens[0].persona_id = gens[0].item_id = OTHER_PERSONA
    assert not checks._items_sound(gens, RUN, board)  # type: ignore[arg-type]
    gens = sound()
    gens[1].turn = 3  # conversation 1 of the first persona: turns 1 and 3
    assert not checks._conversations_sound(gens, board)  # type: ignore[arg-type]
    assert not checks._conversations_sound(sound()[:-2], board)  # the last persona lacks a conversation
    assert not checks._conversations_sound([*sound(), sound()[0]], board)  # a turn twice
    for value in (1.5, math.nan):
        gens = sound()
        gens[2].metrics["cosine_sim"] = value
        assert not recompute._cosines_sound(gens), value  # type: ignore[arg-type]
    gens = sound()
    del gens[2].metrics["cosine_sim"]
    assert not recompute._cosines_sound(gens)  # type: ignore[arg-type]
