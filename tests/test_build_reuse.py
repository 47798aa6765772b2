"""What a board build reuses between entries (issue 30, build CPU) must never pass what the
checks would refuse: the samples reader's checked ``doc`` blocks (:class:`DocMemo`) and the
split hash of a repeated item set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tide_bench.core.errors import DataError
from tide_bench.data.sources import split_content_hash
from tide_bench.generation.samples import DocMemo, read_generations

TASK = "tide_empathy"


def _line(persona: int, conversation: int, **doc: Any) -> dict[str, Any]:
    base = {
        "item_id": f"{persona}/c{conversation}/turn1",
        "persona_id": str(persona),
        "conversation_id": f"c{conversation}",
        "turn": 1,
        "scenario": "grief",
        "split": "test",
        "client_utterance": f"client {persona}.{conversation}",
        "reference_reply": "reference",
        "history": [{"role": "user", "content": "before"}, {"role": "assistant", "content": "earlier"}],
        "persona_json": json.dumps({"age": 30 + persona}),
    }
    return {"doc": base | doc, "filtered_resps": [f"reply {persona}.{conversation}"], "arguments": {}}


def _write(path: Path, lines: list[dict[str, Any]]) -> dict[str, str]:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return {TASK: path.name}


ITEMS = [(p, c) for p in range(3) for c in range(4)]


def _read(tmp_path: Path, name: str, lines: list[dict[str, Any]], memo: DocMemo) -> list[Any]:
    return read_generations(tmp_path, _write(tmp_path / name, lines), memo=memo)


@pytest.mark.parametrize("turn", [True, 1.0])
def test_an_equal_doc_of_another_type_is_still_refused(tmp_path: Path, turn: Any) -> None:
    """``True == 1 == 1.0`` in Python: a doc equal to a checked one but with a boolean or float
    turn is checked again and refused, as without the memo."""
    memo = DocMemo()
    first = _read(tmp_path, "a.jsonl", [_line(p, c) for p, c in ITEMS], memo)
    assert len(first) == len(ITEMS)
    lines = [_line(p, c) for p, c in ITEMS]
    lines[5]["doc"]["turn"] = turn
    with pytest.raises(DataError) as caught:
        _read(tmp_path, "b.jsonl", lines, memo)
    assert caught.value.field == "doc.turn" and caught.value.line == 6


def test_a_changed_doc_is_read_anew(tmp_path: Path) -> None:
    memo = DocMemo()
    _read(tmp_path, "a.jsonl", [_line(p, c) for p, c in ITEMS], memo)
    lines = [_line(p, c) for p, c in ITEMS]
    lines[3]["doc"]["history"] = [{"role": "critic", "content": "x"}]
    with pytest.raises(DataError) as caught:
        _read(tmp_path, "b.jsonl", lines, memo)
    assert caught.value.field == "doc.history[0]"
    lines[3]["doc"]["history"] = []
    gens = _read(tmp_path, "c.jsonl", lines, memo)
    assert gens[3].history == [] and gens[4].history == _line(0, 0)["doc"]["history"]


@pytest.mark.parametrize(
    "change",
    ["none", "one client turn", "one item fewer", "one item more", "after a failed read", "another split"],
)
def test_the_split_hash_is_that_of_the_items_read(tmp_path: Path, change: str) -> None:
    """The split hash of a read that repeats the read before is reused; any other read is
    hashed anew: always the content hash of the items it holds."""
    memo = DocMemo()
    first = _read(tmp_path, "a.jsonl", [_line(p, c) for p, c in ITEMS], memo)
    assert memo.split_hash(first, "test") == split_content_hash([g.item() for g in first], "test")
    lines = [_line(p, c) for p, c in ITEMS]
    split = "test"
    if change == "one client turn":
        lines[7]["doc"]["client_utterance"] = "changed"
    elif change == "one item fewer":
        lines.pop()
    elif change == "one item more":
        lines.append(_line(9, 9))
    elif change == "after a failed read":  # a read that stopped half-way must not count
        with pytest.raises(DataError):
            _read(tmp_path, "bad.jsonl", [lines[-1], lines[-1]], memo)  # the last item twice
        lines.pop()
    elif change == "another split":
        split = "validation"
    gens = _read(tmp_path, "b.jsonl", lines, memo)
    assert memo.split_hash(gens, split) == split_content_hash([g.item() for g in gens], split)
    assert memo.split_hash(list(gens), split) == split_content_hash([g.item() for g in gens], split)
