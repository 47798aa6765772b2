"""The one record schema every stage uses: a :class:`TideItem` is one generation item.

TIDE's raw files are per persona; each conversation has client turns and the frontier
model's reference replies. Each client turn that has a reference reply becomes one item,
with the earlier turns (client and reference) as chat history.

Fields (also documented in ``docs/data.md``):

``item_id``           ``"<persona_id>/<conversation_id>/turn<k>"``; unique, stable, path-safe.
``persona_id``        the persona (one metadata file per persona in TIDE).
``conversation_id``   the conversation key within the persona's file.
``turn``              1-based index of the client turn being answered.
``scenario``          emotional scenario/category where the data labels one, else ``None``.
``split``             ``train`` / ``validation`` / ``test`` (persona-disjoint, see splits.py).
``persona``           persona metadata as given (demographics, trauma context, behaviour).
``history``           earlier messages: ``[{"role": "user"|"assistant", "content": str}]``.
``client_utterance``  the client message to answer.
``reference_reply``   the frontier model's reference reply to it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

SPLITS = ("train", "validation", "test")
SPLIT_CHOICES = (*SPLITS, "all")


@dataclass(frozen=True)
class TideItem:
    item_id: str
    persona_id: str
    conversation_id: str
    turn: int
    scenario: str | None
    split: str
    client_utterance: str
    reference_reply: str
    history: list[dict[str, str]] = field(default_factory=list)
    persona: dict[str, Any] = field(default_factory=dict)

    def content(self) -> dict[str, Any]:
        """The fields that define the item's content (what the dataset hash covers).

        Built field by field rather than with ``asdict`` (which deep-copies): hashing every
        item of every leaderboard submission made the copy the dominant cost."""
        return {name: getattr(self, name) for name in _CONTENT_FIELDS}

    def to_doc(self) -> dict[str, Any]:
        """A flat, Arrow-friendly record for ``datasets`` / lm-eval.

        Persona metadata varies between personas, so it travels as a JSON string.
        """
        record = asdict(self)
        record["persona_json"] = json.dumps(record.pop("persona"), ensure_ascii=False, sort_keys=True)
        record["scenario"] = self.scenario or ""
        return record


_CONTENT_FIELDS = tuple(f.name for f in fields(TideItem) if f.name != "split")


def make_item_id(persona_id: str, conversation_id: str, turn: int) -> str:
    return f"{persona_id}/{conversation_id}/turn{turn}"


def persona_of_item(item_id: str) -> str:
    """The persona of an item id ``[<prefix>/]<persona_id>/<conversation_id>/turn<k>``.

    Items of one persona are correlated, so every confidence interval resamples personas
    (the cluster); an id of another shape is its own cluster (i.i.d. as a fallback).
    """
    parts = str(item_id).split("/")
    if len(parts) >= 3 and parts[-1].startswith("turn"):
        return parts[-3]
    return str(item_id)
