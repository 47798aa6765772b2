"""The item pins a board's data implies: the split hash, the item count and the item-id hash
(``leaderboard pin`` writes them; validation recomputes them from the submitted items)."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

from tide_bench.core.errors import ConfigError
from tide_bench.core.hashing import sha256_json
from tide_bench.data.sources import load_dataset
from tide_bench.leaderboard.config import BoardConfig


@lru_cache(maxsize=4)
def sample_split_hash(split: str) -> str:
    """The split hash of tide-bench's built-in synthetic sample (never a TIDE board's items)."""
    return load_dataset("sample").content_hash(split)


def item_ids_hash(ids: list[str]) -> str:
    return sha256_json(sorted(ids))


@lru_cache(maxsize=4)
def _data_pins(spec: str, split: str) -> tuple[str, int, str]:
    dataset = load_dataset(spec)
    items = dataset.items_for(split)
    return dataset.content_hash(split), len(items), item_ids_hash([i.item_id for i in items])


def effective_board(board: BoardConfig) -> BoardConfig:
    """The board with the item pins its ``data_source`` implies (as ``pin`` would write them):
    a board that can load its data is pinned to it. A pin that contradicts the data is a
    misconfigured board, refused loudly."""
    if not board.data_source:
        return board
    split_hash, n_items, ids_hash = _data_pins(board.data_source, board.split)
    for key, value in (("split_sha256", split_hash), ("n_items", n_items), ("item_ids_sha256", ids_hash)):
        pinned = getattr(board, key)
        if pinned is not None and pinned != value:
            raise ConfigError(
                f"pins {key} {str(pinned)[:16]}, but the board's data_source {board.data_source!r} gives "
                f"{str(value)[:16]}",
                path=board.source or None,
                field=key,
                hint="re-pin the board (tide-bench leaderboard pin) or correct data_source",
            )
    return dataclasses.replace(board, split_sha256=split_hash, n_items=n_items, item_ids_sha256=ids_hash)
