"""Leaderboard configuration (``leaderboard/leaderboard.yaml``): what submissions must match."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.core.resources import resource_dir
from tide_bench.leaderboard.ranking import CORRECTIONS


@dataclass
class BoardConfig:
    name: str = "TIDE empathy leaderboard"
    split: str = "test"
    split_sha256: str | None = None
    n_items: int | None = None
    item_ids_sha256: str | None = None
    judge_version: str | None = None
    require_judgments: bool = True
    max_submission_mb: float = 200.0
    spot_check_items: int = 50
    # Statistics (docs/leaderboard.md): entries with a larger share of items unscored for
    # infrastructure reasons are refused; entries with fewer scored items are shown unranked.
    max_infrastructure_unscored: float = 0.02
    min_scored_items: int = 10
    rank_correction: str = "holm"  # or "max-t"
    demo: bool = False
    source: str = ""


def load_board(path: str | Path | None = None) -> BoardConfig:
    path = Path(path) if path else resource_dir("leaderboard") / "leaderboard.yaml"
    try:
        raw: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError("leaderboard configuration not found", path=path) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"malformed YAML: {exc}", path=path) from None
    known = {f.name for f in fields(BoardConfig)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"unknown keys: {', '.join(unknown)}", path=path)
    config = BoardConfig(**raw, source=str(path))
    for name, kind in (("max_infrastructure_unscored", (int, float)), ("min_scored_items", int), ("rank_correction", str)):
        value = getattr(config, name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ConfigError(f"{name} has the wrong type ({type(value).__name__})", path=path, field=name)
    if config.rank_correction not in CORRECTIONS:
        raise ConfigError(f"rank_correction must be one of {', '.join(CORRECTIONS)}", path=path, field="rank_correction")
    if not 0 <= config.max_infrastructure_unscored <= 1:
        raise ConfigError("max_infrastructure_unscored is a share between 0 and 1", path=path, field="max_infrastructure_unscored")
    if config.min_scored_items < 1:
        raise ConfigError("min_scored_items must be at least 1", path=path, field="min_scored_items")
    return config
