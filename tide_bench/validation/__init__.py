"""Validation: audit any judge configuration against public expert ratings, with no recruiting.

Imports :mod:`tide_bench.core`, :mod:`tide_bench.generation` (the item adapter builds a run),
:mod:`tide_bench.judging` (a judge rates a pack's replies) and :mod:`tide_bench.agreement`
(the alternative annotator test); the model leaderboard imports it for the judges' stamps.
Packs are data files (``packs/*.yaml``). Public API::

    from tide_bench.validation import fetch_pack, report_pack, run_pack, build_board
    fetch_pack("annomi", accept_licence=True, source="path/to/AnnoMI")   # or from the network
    report = report_pack("mentalalign", ["published"], mode="authors")
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Imported on first use: the model leaderboard reads only the stamps (stamps.py), and a
# `leaderboard validate` must not pay for scipy and openpyxl.
_API = {
    "Pack": "manifest",
    "available_packs": "manifest",
    "load_pack": "manifest",
    "fetch_pack": "fetch",
    "licence_notice": "fetch",
    "load_fetched": "store",
    "report_pack": "report",
    "report_packs": "report",
    "write_report": "report",
    "run_pack": "run",
}


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'tide_bench.validation' has no attribute {name!r}")
    return getattr(import_module(f"tide_bench.validation.{_API[name]}"), name)


__all__ = sorted(_API)
