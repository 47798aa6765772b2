"""Where tide-bench keeps its own files outside a run directory (the cache)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "TIDE_BENCH_CACHE"


def cache_dir() -> Path:
    """``$TIDE_BENCH_CACHE``, else ``$XDG_CACHE_HOME/tide-bench``, else ``~/.cache/tide-bench``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tide-bench"
