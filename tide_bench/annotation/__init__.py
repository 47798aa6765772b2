"""Collecting human ratings: blinded assignments, an offline page per rater, and collection
into the ratings table that ``tide-bench audit`` reads.

Imports the earlier stages (runs, the judge's rubric: one source of truth for the wording).
Public API::

    from tide_bench.annotation import build_annotation, collect_returns
"""

from tide_bench.annotation.assign import AssignmentOptions, build_annotation
from tide_bench.annotation.collect import collect_returns

__all__ = ["AssignmentOptions", "build_annotation", "collect_returns"]
