"""Deterministic persona-disjoint splits.

TIDE ships no official split. tide-bench assigns each *persona* (never a single
conversation) to a split by a stable hash of its id, so every conversation of a persona
lands in the same split and a model fine-tuned on ``train`` never sees a ``test`` persona.

Proportions: 70 % train, 10 % validation, 20 % test (buckets 0-69, 70-79, 80-99 of
``sha256("tide-bench-split-v1:" + persona_id)``). On the 500 TIDE personas the expected
sizes are about 350 / 50 / 100 personas; the exact counts are whatever the hash gives and
are reported by ``tide-bench data validate``. Changing this scheme changes every result:
bump ``SPLIT_VERSION`` if it ever must change.
"""

from __future__ import annotations

from tide_bench.core.hashing import bucket

SPLIT_VERSION = "tide-bench-split-v1"
TRAIN_BELOW = 70
VALIDATION_BELOW = 80


def split_of(persona_id: str) -> str:
    b = bucket(persona_id, SPLIT_VERSION)
    if b < TRAIN_BELOW:
        return "train"
    if b < VALIDATION_BELOW:
        return "validation"
    return "test"
