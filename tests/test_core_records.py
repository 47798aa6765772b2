"""``core.records.from_checked``: the readers' way of building a frozen record without its
``__init__`` gives the record ``__init__`` gives, still frozen, and refuses what ``__init__``
would refuse."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from tide_bench.core.records import from_checked
from tide_bench.generation.samples import Generation
from tide_bench.judging.judgment import Judgment

GENERATION: dict[str, Any] = {
    "item_id": "101/conversation_1/turn1",
    "task": "tide_empathy",
    "persona_id": "101",
    "conversation_id": "conversation_1",
    "turn": 1,
    "scenario": "sleep",
    "split": "test",
    "history": [],
    "client_utterance": "I wake at three.",
    "reference_reply": "That sounds exhausting.",
    "reply": "That sounds hard.",
    "prompt": "Client: I wake at three.",
    "persona": {"age": 51},
    "metrics": {"length_tokens": 4.0},
    "split_sha256": "ab" * 32,
    "tide_source": "sample",
    "file": "samples.jsonl",
    "line": 3,
}


def test_a_record_from_checked_fields_is_the_record_init_makes() -> None:
    made, built = from_checked(Generation, dict(GENERATION)), Generation(**GENERATION)
    assert made == built and repr(made) == repr(built) and type(made) is Generation
    assert dataclasses.asdict(made) == dataclasses.asdict(built)
    assert pickle.loads(pickle.dumps(made)) == built
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.reply = "changed"  # type: ignore[misc]
    assert dataclasses.replace(made, reply="other").reply == "other"


def test_left_out_fields_take_their_plain_defaults() -> None:
    given = {"item_id": "a", "status": "unscored", "judge": None, "key": "k", "line": 1, "unscored_kind": "error"}
    assert from_checked(Judgment, dict(given)) == Judgment(**given)
    assert from_checked(Judgment, dict(given)).layout == "v1"


def test_a_missing_or_unknown_field_is_refused_as_init_would() -> None:
    missing = {k: v for k, v in GENERATION.items() if k != "reply"}
    with pytest.raises(TypeError, match=r"missing fields \['reply'\]"):
        from_checked(Generation, missing)
    with pytest.raises(TypeError):
        Generation(**missing)
    no_factory = {k: v for k, v in GENERATION.items() if k != "metrics"}  # a default_factory field
    with pytest.raises(TypeError, match="metrics"):
        from_checked(Generation, no_factory)
    with pytest.raises(TypeError, match=r"unknown fields \['colour'\]"):
        from_checked(Generation, GENERATION | {"colour": "red"})


def test_with_some_fields_left_out_a_misspelt_or_unknown_field_is_refused() -> None:
    """Fields left to their defaults: a misspelt required field (one unknown, one missing: as many
    fields as given correctly) and an unknown one beside the defaults are both refused."""
    given = {"item_id": "a", "status": "unscored", "judge": None, "key": "k", "line": 1}
    misspelt = {("kee" if k == "key" else k): v for k, v in given.items()}
    with pytest.raises(TypeError, match=r"unknown fields \['kee'\], missing fields \['key'\]"):
        from_checked(Judgment, misspelt)
    with pytest.raises(TypeError, match=r"unknown fields \['colour'\]"):
        from_checked(Judgment, given | {"colour": "red"})
