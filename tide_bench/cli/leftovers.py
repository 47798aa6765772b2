"""A refused command leaves no folder it created.

A command that stops with a user error (an unknown backend, a submission refused, a typo in
a study file) may already have made its output folder, and an empty ``runs/typo1/`` left behind
reads as a run that started. Before a command runs, :func:`absent_paths` notes which paths named
on its command line (and their missing parents) do not exist; after a user error,
:func:`~tide_bench.core.paths.remove_empty_folders` removes those that are now empty folders.
Nothing that existed before the command, and no folder holding anything, is ever touched.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tide_bench.core.paths import missing_folders

_MAX_ARG = 4096


def _candidates(args: Iterable[str]) -> Iterable[str]:
    for arg in args:
        if arg.startswith("-"):
            if "=" in arg:  # --out=DIR
                yield arg.split("=", 1)[1]
            continue
        yield arg


def absent_paths(args: Iterable[str]) -> list[Path]:
    """The paths named in ``args``, and their parents, that do not exist yet."""
    found: list[Path] = []
    for text in _candidates(args):
        if text and len(text) <= _MAX_ARG and "\0" not in text:
            found.extend(p for p in missing_folders(Path(text)) if p not in found)
    return found
