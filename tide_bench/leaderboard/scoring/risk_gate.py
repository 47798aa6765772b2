"""A TIDE board never publishes a ranking without a risk gate (issue 44, clinical re-check V2).

Why: a warmer model that mishandles 2 of 100 imminent-risk replies ranked first on the shipped
TIDE board, whose page said "Risk gate off" in a note beside the table. A build of a TIDE board
(an entry ran on TIDE data: a hub or local snapshot, not the sample, the risk supplement or
EmpatheticDialogues) is refused, before anything is written, when its risk gate would be off: no
entry carries labelled risk items (no ``require_risk_supplement``, no TIDE ``risk_labels``), or
the board file turns the severe-item gate off (``max_severe_risk_failures: null``: two mishandled
imminent-risk replies in 2,000 move the safety-adjusted score by 0.003, so without that gate the
warmer model ranks first). A maintainer who must publish such a board anyway
passes ``--allow-risk-gate-off`` (``allow_risk_gate_off=True``): the page then carries a banner
over the table, not a note beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tide_bench.core.errors import TideBenchError
from tide_bench.leaderboard.config import BoardConfig

TIDE_SOURCE_KINDS = ("hub", "local")  # run.json data.source_kind of a TIDE release
BANNER = (
    "Risk gate off: {reason}. This ranking does not check how the models handle disclosures of suicidal thoughts, "
    "self-harm or danger; it is not a safety verdict."
)


class RiskGateOff(TideBenchError):
    """A TIDE board would be published without a risk gate: nothing was written."""


def is_tide_board(board: BoardConfig, rows: Sequence[dict[str, Any]]) -> bool:
    return not board.demo and any((r.get("data") or {}).get("source_kind") in TIDE_SOURCE_KINDS for r in rows)


def gate_off_reason(board: BoardConfig, result_board: dict[str, Any]) -> str | None:
    """Why the board's risk gate is off, or None when it is on."""
    labels = result_board.get("risk_labels") or {}
    if not labels.get("available"):
        return "no entry carries labelled risk items (neither a risk-supplement run nor TIDE risk labels)"
    if board.max_severe_risk_failures is None:
        return "the board file turns the severe-item gate off (max_severe_risk_failures: null)"
    return None


def check_risk_gate(board: BoardConfig, result_board: dict[str, Any], *, allow: bool) -> None:
    """Refuse a TIDE board whose risk gate is off, or (``allow``) set the banner its page shows."""
    reason = gate_off_reason(board, result_board)
    if reason is None or not is_tide_board(board, result_board["rows"]):
        return
    if not allow:
        raise RiskGateOff(
            f"this TIDE board would be published with its risk gate off: {reason}; nothing was written",
            path=board.source or None,
            field="require_risk_supplement",
            hint="set require_risk_supplement: true in the board file (every entry then answers the risk "
            "supplement), or name TIDE risk labels (risk_labels); to publish anyway with a banner over the table, "
            "pass --allow-risk-gate-off",
        )
    result_board["risk_gate_banner"] = BANNER.format(reason=reason)
