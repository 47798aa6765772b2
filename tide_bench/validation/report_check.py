"""What a validation report file may hold, checked when the judges board reads it.

A report (``tide-bench validation report --json``) is a file anyone can hand to ``validation
board``, and the board's page is copied into the model board's site. So every field the board
reads is checked for its type before anything is computed or written (R3S-3): a number where a
number is shown, a count where a count is, a text where a text is, a list of texts for the
excluded responders. A wrong one is refused with the report file and the field's full path
(``judges.<judge>.dimensions.<dimension>.qwk.value``), never a traceback; fields the board
does not read are left alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError

__all__ = ["check_report"]


@dataclass(frozen=True)
class Req:
    """A field that must be present (others may be absent or null)."""

    spec: Any


@dataclass(frozen=True)
class MapOf:
    """An object whose keys are texts (names) and values follow ``spec``."""

    spec: Any


ESTIMATE = {"value": "number", "ci_low": "number", "ci_high": "number"}
ALT_RESULT = {
    "passed": "bool",
    "winning_rate": "number",
    "advantage_probability": "number",
    "epsilon": "number",
    "method": "text",
    "per_rater": [{"p": Req("number")}],
    "p_values": ["number"],
}
DIMENSION_STATS = {
    "n": "count",
    **{name: ESTIMATE for name in ("qwk", "spearman", "bias", "length_bias_per_100_words")},
    "alt_test": {"result": ALT_RESULT},
}
JUDGE = {
    "identity": {"name": "text", "version": "text", "rubric": "text"},
    "source": "text",
    "model": "text",
    "family": "text",
    "usd_per_1000_items": "number",
    "excluded_responders": ["text"],
    "n_unscored": "count",
    "n_judged": "count",
    "dimensions": Req(MapOf(DIMENSION_STATS)),
}
PACK_REPORT = {
    "pack": Req("text"),
    "judges": Req(MapOf(JUDGE)),
    "mode": "text",
    "title": "text",
    "citation": "text",
    "design": "text",
    "dimensions": MapOf({"judge_factor": "text", "proxy_for": "text", "map": "text"}),
    "provenance": {"licence": "text", "revision": "text", "unpinned": ["text"]},
    "human_baseline": MapOf({"n_passed": Req("count"), "n": Req("count"), "n_randomised_passed": Req("count")}),
}
KINDS = {
    "text": (lambda v: isinstance(v, str), "a text"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "count": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a whole number >= 0"),
    "number": (
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v),
        "a finite number",
    ),
}


def check_report(report: Any, path: str | Path, where: str = "") -> dict[str, Any]:
    """``report`` (one pack's report) if every field the board reads has its type; else a
    :class:`DataError` naming the file and the field."""
    _check(report, Req(PACK_REPORT), path, where.rstrip("."))
    return report  # type: ignore[no-any-return]


def _check(value: Any, spec: Any, path: str | Path, where: str) -> None:
    if isinstance(spec, Req):
        spec = spec.spec
    elif value is None:
        return
    if isinstance(spec, str):
        ok, expected = KINDS[spec]
        if not ok(value):
            _fail(path, where, expected, value)
    elif isinstance(spec, list):
        if not isinstance(value, list):
            _fail(path, where, "a list", value)
        for k, item in enumerate(value):
            _check(item, Req(spec[0]), path, f"{where}[{k}]")
    elif isinstance(spec, MapOf):
        if not isinstance(value, dict):
            _fail(path, where, "an object", value)
        for key, item in value.items():
            _check(item, Req(spec.spec), path, f"{where}.{key}" if where else str(key))
    else:
        if not isinstance(value, dict):
            _fail(path, where, "an object", value)
        for key, sub in spec.items():
            if isinstance(sub, Req) and key not in value:
                _fail(path, f"{where}.{key}" if where else key, "present", None)
            _check(value.get(key), sub, path, f"{where}.{key}" if where else key)


def _fail(path: str | Path, where: str, expected: str, value: Any) -> None:
    shown = "missing" if value is None else f"a {type(value).__name__}"
    raise DataError(
        f"must be {expected}, not {shown}",
        path=path,
        field=where or "(the report)",
        hint="a validation report is written by `tide-bench validation report --json`; this one was edited or damaged",
    )
