"""Grouped cross-validation folds: every reply to one seeker post falls in the same fold.

Several replies answer the same seeker post (and 61 (post, reply) rows are duplicated in the
authors' files); a fold that split them would let the model see the test post in training.
The fold of a post is a salted hash of its id, so it is the same on every machine and for
every library version (sklearn's GroupKFold assigns groups by size and has changed across
versions), and a post's fold does not move when other posts are added.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tide_bench.core.hashing import bucket

FOLD_SALT = "epitome-cv-v1"
N_FOLDS = 5


def fold_of(group: str, n_folds: int = N_FOLDS, salt: str = FOLD_SALT) -> int:
    return bucket(group, salt, n_folds)


def assign_folds(groups: Sequence[str], n_folds: int = N_FOLDS, salt: str = FOLD_SALT) -> np.ndarray:
    """The fold (0..n_folds-1) of each row, by its group (the seeker post id)."""
    return np.asarray([fold_of(str(g), n_folds, salt) for g in groups], dtype=np.int64)
