"""EPITOME's three communication mechanisms (Sharma, Miner, Atkins & Althoff, EMNLP 2020).

One definition of the mechanism keys, names and the authors' file names, for the corpus
reader, the local scorer, its card, the lm-eval metrics (``epitome_er`` ...) and the board's
columns. The level definitions a judge reads live in the rubric file (``judges/epitome_v1.yaml``),
not here: they are data.
"""

from __future__ import annotations

from dataclasses import dataclass

LEVELS = (0, 1, 2)  # no communication, weak communication, strong communication
LEVEL_NAMES = {0: "none", 1: "weak", 2: "strong"}


@dataclass(frozen=True)
class Mechanism:
    key: str  # er | ip | ex
    name: str
    file: str  # the Reddit file in the authors' repository (dataset/<file>)
    factor: str  # the factor key in the EPITOME judge rubric (judges/rubric_epitome.yaml)


MECHANISMS = (
    Mechanism("er", "Emotional Reactions", "emotional-reactions-reddit.csv", "emotional_reactions"),
    Mechanism("ip", "Interpretations", "interpretations-reddit.csv", "interpretations"),
    Mechanism("ex", "Explorations", "explorations-reddit.csv", "explorations"),
)
BY_FACTOR = {m.factor: m for m in MECHANISMS}
KEYS = tuple(m.key for m in MECHANISMS)
METRIC_PREFIX = "epitome_"
METRIC_NAMES = tuple(METRIC_PREFIX + k for k in KEYS)  # the per-item fields: expected level 0-2


def metric_name(key: str) -> str:
    return METRIC_PREFIX + key
