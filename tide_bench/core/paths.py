"""Where tide-bench keeps its own files outside a run directory (the cache), and the folders a
refused command created (removed again, so that a failed command leaves nothing behind)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

CACHE_ENV = "TIDE_BENCH_CACHE"


def cache_dir() -> Path:
    """``$TIDE_BENCH_CACHE``, else ``$XDG_CACHE_HOME/tide-bench``, else ``~/.cache/tide-bench``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tide-bench"


def missing_folders(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, deepest first: what creating it
    would create (and all that a refused command may remove again, with :func:`remove_empty_folders`)."""
    chain: list[Path] = []
    try:
        current = Path(path).expanduser().absolute()
        while not current.exists() and not current.is_symlink() and current != current.parent:
            chain.append(current)
            current = current.parent
    except (OSError, ValueError):
        return []
    return chain


def remove_empty_folders(paths: Iterable[Path]) -> None:
    """Remove each of ``paths`` that is now an empty folder (never a link), deepest first."""
    for path in sorted(paths, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
                path.rmdir()
