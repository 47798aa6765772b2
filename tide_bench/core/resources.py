"""Locate the data folders shipped with tide-bench (task YAMLs, judge configs, schemas).

In a wheel they live under ``tide_bench/_resources/<name>``; in a source checkout or an
editable install they are the top-level folders of the repository. One lookup serves both.
"""

from __future__ import annotations

from pathlib import Path

from tide_bench.core.errors import ConfigError

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def resource_dir(name: str) -> Path:
    """Return the directory of the shipped resource folder ``name`` (e.g. ``"tasks"``)."""
    for candidate in (_PACKAGE_DIR / "_resources" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise ConfigError(
        f"resource folder '{name}' not found next to the tide_bench package",
        hint="reinstall tide-bench (pip install -e . or the wheel)",
    )
