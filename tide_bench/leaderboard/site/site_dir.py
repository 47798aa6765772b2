"""Where ``leaderboard build`` may write its site, and how the old site is replaced.

The build replaces its output folder wholesale, so it must only ever replace a folder it
wrote itself. Every built site carries a marker file (``.tide-bench-site``) listing the
files the build wrote. ``--out`` is accepted when it does not exist, is an empty folder, or
is a previous site whose marker is present and which holds nothing but the files the
marker lists. It is refused, before anything is read or written, when it is (or contains)
the submissions folder, the board file or the audit file, the file-system root or the home
folder, a symbolic link or a file. The new site is built in a staging folder next to
``--out`` and swapped in atomically (:mod:`tide_bench.core.atomic_dir`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tide_bench import __version__
from tide_bench.core.errors import ConfigError, TideBenchError
from tide_bench.core.jsonio import atomic_write_text, read_json

MARKER = ".tide-bench-site"
MARKER_MAX_BYTES = 1_000_000


def _site_files(folder: Path) -> set[str]:
    """Every non-folder entry under ``folder`` (links are listed, never followed)."""
    out = set()
    for root, dirs, files in os.walk(folder, followlinks=False):
        here = Path(root)
        out |= {(here / f).relative_to(folder).as_posix() for f in files}
        out |= {(here / d).relative_to(folder).as_posix() for d in dirs if (here / d).is_symlink()}
    return out


def _marker_files(out: Path) -> set[str] | None:
    try:
        marker = read_json(out / MARKER, max_bytes=MARKER_MAX_BYTES, follow_symlinks=False)
    except TideBenchError:
        return None
    files = (
        marker.get("files")
        if isinstance(marker, dict) and marker.get("tool") == "tide-bench leaderboard build"
        else None
    )
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else None


def check_out_dir(out: Path, protected: dict[str, Path | None]) -> None:
    """Refuse an ``--out`` the build must not replace (see the module docstring)."""
    target = out.expanduser().resolve()
    if target == Path(target.anchor) or target == Path.home().resolve():
        raise ConfigError(
            f"--out {out} is the {'file-system root' if target == Path(target.anchor) else 'home folder'}: "
            "give the build a folder of its own, e.g. --out site/"
        )
    for what, path in protected.items():
        if path is None:
            continue
        other = path.expanduser().resolve()
        if other == target or target in other.parents:
            raise ConfigError(
                f"--out {out} contains the {what} ({path}): the build replaces its output folder and would delete it",
                hint="choose a separate folder, e.g. --out site/",
            )
        if other.is_dir() and other in target.parents:
            raise ConfigError(
                f"--out {out} lies inside the {what} ({path})", hint="choose a folder outside it, e.g. --out site/"
            )
    if out.is_symlink():
        raise ConfigError(f"--out {out} is a symbolic link: give the real folder")
    if not out.exists():
        return
    if not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a folder")
    if not any(out.iterdir()):
        return
    listed = _marker_files(out)
    if listed is None:
        raise ConfigError(
            f"--out {out} is not empty and was not written by `tide-bench leaderboard build` (no valid {MARKER} "
            "marker): "
            "the build replaces its output folder, so it refuses to touch this one",
            hint="choose a new or empty folder, e.g. --out site/",
        )
    foreign = sorted(_site_files(out) - listed - {MARKER})
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise ConfigError(
            f"--out {out} holds files the previous build did not write ({shown}): move them out first, or choose "
            "another folder"
        )


def write_marker(staging: Path, built_at: str) -> None:
    files = sorted(_site_files(staging))
    marker: dict[str, Any] = {
        "tool": "tide-bench leaderboard build",
        "tide_bench_version": __version__,
        "built_at": built_at,
        "files": files,
    }
    atomic_write_text(staging / MARKER, json.dumps(marker, indent=2) + "\n")
