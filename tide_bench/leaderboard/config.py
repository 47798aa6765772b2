"""Leaderboard configuration (``leaderboard/leaderboard.yaml``): what submissions must match."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.core.resources import resource_dir


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
    return BoardConfig(**raw, source=str(path))
