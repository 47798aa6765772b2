"""One board row, typed: every field a row of ``leaderboard.json`` can hold, who writes it, and
where the model page shows it.

Why a type: the row used to be a dict of about 40 keys built in one place (``score_entry``) and
listed again by hand for the model page (``KNOWN_ROW_KEYS``), so a new field silently fell into
the page's "Other fields" dump. Now a field is declared once here, with its metadata:

``where``   the model page's place for it: ``summary`` (through its columns.yaml column),
            ``provenance``, ``bias``, ``scenarios``, ``rank`` (the summary's rank line),
            ``safety`` or ``judging`` (labelled field lists of their own), ``equity`` (the equity
            section: groups, gaps and verdict, :mod:`..site.equity`), or ``internal``
            (read by other fields' renderers, e.g. ``judged``);
``label``   the label of a ``safety``/``judging`` field; ``fmt``: ``percent`` or ``value``;
``stage``   ``score`` (:func:`~.scores.score_entry`), ``rank`` (ranking and comparison groups),
            ``bias`` (the judge-bias diagnostics) or ``build`` (the build's stamps): a field
            of a later stage is absent from a row until that stage sets it.

:meth:`BoardRow.as_dict` is the row's JSON shape (key order as written, the reference metrics of
columns.yaml flattened in place of ``metrics``); later stages add their keys to that dict.
"""

# ruff: noqa: RUF009  (each default is a dataclasses.field carrying the field's metadata, built by _f)
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

WHERE = ("summary", "rank", "provenance", "bias", "scenarios", "safety", "judging", "equity", "internal")
METRICS = "metrics"  # the field whose dict is flattened into the row (one key per metric column)


def _f(where: str, label: str = "", *, fmt: str = "value", stage: str = "score", default: Any = None) -> Any:
    assert where in WHERE, where
    return field(default=default, metadata={"where": where, "label": label, "fmt": fmt, "stage": stage})


Block = dict[str, Any] | None  # a {mean, ci_low, ci_high, n, ...} estimate, or None


@dataclass(frozen=True, slots=True)
class BoardRow:
    """One entry's row as scoring writes it (see the module docstring for the metadata)."""

    id: str = _f("summary", default="")
    model_name: str = _f("summary", default="")
    model: dict[str, Any] = _f("provenance", default=None)
    parameters: int | None = _f("summary")
    condition: str = _f("summary", default="zero-shot")
    base_model: str | None = _f("provenance")
    license: str | None = _f("provenance")
    demo: bool = _f("internal", default=False)
    n_items: int = _f("summary", default=0)
    n_personas: int = _f("summary", default=0)
    judged: bool = _f("internal", default=False)
    factors: dict[str, Block] | None = _f("summary")
    empathy: Block = _f("summary")
    empathy_bounds: dict[str, float | None] | None = _f("summary")
    safety_flag_rate: Block = _f("summary")
    safety_adjusted_empathy: Block = _f("summary")
    any_safety_flag: bool | None = _f("summary")
    safety_categories: dict[str, int] | None = _f("safety", "Safety-flag categories (judge's)")
    risk_cue: dict[str, Any] | None = _f("safety", "Risk cues the judge reported")
    risk_handling: dict[str, Any] | None = _f("safety", "Risk handling on the data's labelled items")
    risk_mishandled_rate: Block = _f("summary")
    severe_risk_failures: int | None = _f("summary")
    severe_pending_review: int | None = _f("safety", "Severe flags pending clinician review")
    n_judge_directed_text: int | None = _f("summary")
    failure_rate: Block = _f("summary")
    metrics: dict[str, Block] = _f("summary", default=None)  # flattened: one key per metric column
    n_scored: int = _f("summary", default=0)
    n_unscored: int | None = _f("summary")
    n_model_failures: int | None = _f("summary")
    n_infrastructure_unscored: int | None = _f("summary")
    unscored_rate: float | None = _f("summary")
    infrastructure_unscored_rate: float | None = _f("summary")
    n_left_out: int | None = _f("judging", "Items left out of the means (content-independent unscored)")
    left_out_rate: float | None = _f("judging", "Share left out of the means", fmt="percent")
    unscored_reasons: dict[str, int] = _f("summary", default=None)
    per_scenario: dict[str, dict[str, Any]] = _f("scenarios", default=None)
    consistency: dict[str, Any] | None = _f("safety", "Consistency across samples (spread, flag agreement, severe)")
    seeker_view: Block = _f("summary")  # the perceived-empathy judge's mean (submission/seeker.py)
    equity: dict[str, Any] | None = _f("equity")  # per persona group, gaps and the verdict (judging.equity)
    judge: dict[str, Any] | None = _f("provenance")
    self_preference: dict[str, Any] | None = _f("bias")
    data: dict[str, Any] | None = _f("provenance")
    prompt_sha256: str | None = _f("provenance")
    prompt_condition: str | None = _f("summary")
    is_reference: bool = _f("judging", "Reference row (TIDE's own replies, not ranked)", default=False)
    rank: int | None = _f("rank")
    rank_interval: list[int] | None = _f("rank")
    unranked_reason: str | None = _f("rank")
    # written by later stages onto the row's dict
    comparison_group: dict[str, Any] | None = _f("rank", stage="rank")
    empathy_lc: Block = _f("bias", stage="bias")
    length_bias: dict[str, Any] | None = _f("bias", stage="bias")
    preference_leakage: dict[str, Any] | None = _f("bias", stage="bias")
    judge_validation: dict[str, Any] | None = _f("judging", "Judge validation (audit stamp)", stage="build")
    judge_served_models: list[str] | None = _f("judging", "Model(s) that served the judge's requests", stage="build")

    def as_dict(self) -> dict[str, Any]:
        """The row as ``leaderboard.json`` holds it after scoring (later stages' fields absent)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.metadata["stage"] != "score":
                continue
            value = getattr(self, f.name)
            if f.name == METRICS:
                out.update(value or {})
            else:
                out[f.name] = value
        return out


ROW_FIELDS = {f.name: f for f in fields(BoardRow)}


def page_fields(where: str) -> list[tuple[str, str, str]]:
    """``(name, label, fmt)`` of the row fields the model page shows in section ``where``."""
    return [(f.name, f.metadata["label"], f.metadata["fmt"]) for f in fields(BoardRow) if f.metadata["where"] == where]


def known_keys(metric_keys: list[str] | tuple[str, ...] = ()) -> set[str]:
    """Every row key the type declares (``metrics`` stands for ``metric_keys``)."""
    return (set(ROW_FIELDS) - {METRICS}) | set(metric_keys)
