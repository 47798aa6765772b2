"""Validation: audit any judge configuration against public expert ratings, with no recruiting.

Imports :mod:`tide_bench.core`, :mod:`tide_bench.generation` (the item adapter builds a run),
:mod:`tide_bench.judging` (a judge rates a pack's replies) and :mod:`tide_bench.agreement`
(the alternative annotator test); the model leaderboard imports it for the judges' stamps.
Packs are data files (``packs/*.yaml``). Public API::

    from tide_bench.validation import fetch_pack, report_pack, run_pack, build_board
    fetch_pack("annomi", accept_licence=True, source="path/to/AnnoMI")   # or from the network
    report = report_pack("mentalalign", ["published"], mode="authors")
"""

from tide_bench.validation.fetch import fetch_pack, licence_notice
from tide_bench.validation.manifest import Pack, available_packs, load_pack
from tide_bench.validation.report import report_pack, report_packs, write_report
from tide_bench.validation.run import run_pack
from tide_bench.validation.store import load_fetched

__all__ = [
    "Pack",
    "available_packs",
    "fetch_pack",
    "licence_notice",
    "load_fetched",
    "load_pack",
    "report_pack",
    "report_packs",
    "run_pack",
    "write_report",
]
