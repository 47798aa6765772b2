"""What the page says about the safety verdict, over and beside the table (issue 44).

The risk gate's basis (which labels, who labelled them, whether a clinician signed them: unsigned
labels read "developer-labelled, not yet clinician-reviewed"), its measured error rates ("not yet
measured" where no evidence was attached, never an invented number), the clinicians'
adjudication of severe flags ("pending review" where none exists), and, on a TIDE board published
without a risk gate, a banner over the table (:mod:`..scoring.risk_gate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tide_bench.leaderboard.site.html import esc


def gate_banner(board: Mapping[str, Any]) -> str:
    """The banner over the table of a TIDE board built with ``--allow-risk-gate-off`` (else nothing)."""
    text = board.get("risk_gate_banner")
    return f'<div class="banner warn" role="alert" id="risk-gate-banner"><b>{esc(text)}</b></div>' if text else ""


def _label_set(block: Mapping[str, Any]) -> str:
    review = str(block.get("review") or "not yet clinician-reviewed")
    part = block.get("part")
    name = f"{esc(part)} labels" if part else "labels"
    return f"{name} ({esc(block.get('source'))}): <b>{esc(review)}</b>"


def risk_labels_note(block: Mapping[str, Any] | None) -> str:
    """What the risk gate rests on, and whether a clinician has reviewed it."""
    if not block:
        return ""
    if not block.get("available"):
        return f'<p class="warn" id="risk-labels">Risk gate off: {esc(block.get("note"))}.</p>'
    kinds = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in (block.get("by_kind") or {}).items()) or "none"
    ladder = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in (block.get("by_severity") or {}).items()) or "none"
    sources = ", ".join(f"{esc(k)} {n}" for k, n in (block.get("by_source") or {}).items())
    sets = block.get("label_sets") or [block]
    reviewed = all(s.get("reviewed", str(s.get("review", "")).startswith("clinician-reviewed")) for s in sets)
    return (
        f'<p class="{"muted" if reviewed else "warn"}" id="risk-labels">Risk items: every entry is gated on '
        f"{esc(block.get('n_risk_items'))} items with an item-level risk label"
        f"{f' ({sources})' if sources else ''}: {esc(kinds)}; severity: {esc(ladder)}. "
        + "; ".join(_label_set(s) for s in sets)
        + ".</p>"
    )


def _rate(block: Mapping[str, Any] | None) -> str:
    if not block or block.get("mean") is None:
        return "n/a (no such item)"
    ci = f" [{100 * block['ci_low']:.1f}, {100 * block['ci_high']:.1f}]" if block.get("ci_low") is not None else ""
    return f"{100 * block['mean']:.1f}%{ci} (n {esc(block.get('n'))})"


def _errors(name: str, block: Mapping[str, Any]) -> str:
    if not block.get("measured"):
        return f"{name}: <b>{esc(block.get('note'))}</b>"
    return (
        f"{name}: false positives {_rate(block.get('false_positive'))}, false negatives "
        f'{_rate(block.get("false_negative"))} <span class="muted">({esc(block.get("note"))})</span>'
    )


def gate_errors_note(block: Mapping[str, Any] | None) -> str:
    """The gate's measured false-positive and false-negative rates, beside the verdict."""
    if not block:
        return ""
    return (
        '<p id="gate-errors">How often the judge\'s safety flag is wrong, per call (95% CI): '
        f"{_errors('on the probes', block.get('probes') or {})}; {_errors('on the gold set', block.get('gold') or {})}"
        ".</p>"
    )


def adjudication_note(board: Mapping[str, Any]) -> str:
    """Whether a clinician has read the severe flags the gate counts."""
    pending = sum(int(r.get("severe_pending_review") or 0) for r in board.get("rows") or [])
    adjudication = board.get("adjudication")
    if adjudication:
        done = (
            f"{esc(adjudication.get('n_records'))} reply verdict(s) in {esc(adjudication.get('source'))} "
            f"({esc(adjudication.get('confirmed'))} confirmed, {esc(adjudication.get('cleared'))} cleared)"
        )
    else:
        done = "no adjudication file (severe_adjudication in the board file)"
    if not pending and not adjudication:
        return ""
    return (
        f'<p id="adjudication" class="{"warn" if pending else "muted"}">Clinician review of severe flags: {done}; '
        f"<b>{pending} severe flag(s) pending review</b>: a judge's flag on a severe item counts until a clinician "
        "clears it.</p>"
    )


def safety_notes(board: Mapping[str, Any]) -> str:
    """Everything the page says beside the table about the safety verdict."""
    return (
        risk_labels_note(board.get("risk_labels"))
        + gate_errors_note(board.get("gate_error_rates"))
        + adjudication_note(board)
    )
