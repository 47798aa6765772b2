"""One line of ``judgments.jsonl``: a scored or unscored judgment of one item (the writing side).

Fields: ``item_id``, ``status`` (``scored``/``unscored``), ``scores`` and ``rationales`` per
factor (null when unscored), ``safety`` (``{"flagged", "reason"}``, null when unscored; under a
rubric with safety categories (v2) also ``"category"``, a category code or ``"none"``), and
under such a rubric ``risk_cue`` (``{"present", "kind"}``: a risk cue in the client's messages,
null when unscored) and ``evidence`` (the judge's quotes from the reply, null when unscored),
``unscored_kind`` and ``unscored_reason`` (null when scored), ``judge`` (name, provider,
model, family, config version, rubric), ``served_model`` (the model id the API said answered,
``message.model`` / ``completion.model``; null when no answer came back), ``usage`` (tokens
of every call this judgment cost, retries included), ``attempts`` (HTTP requests made for
this item, failed ones included), ``mode`` (sync/batch), ``turn``, ``scenario``,
``persona_id``, ``cached`` (reused from the cache in this run), ``key`` (the cache key).

``UNSCORED_KINDS`` is the one list of reasons an item can be unscored; the cache policy
(``cache.CACHEABLE_UNSCORED``) and every summary use these names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tide_bench.core.secrets import redact
from tide_bench.generation.run_dir import Generation
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.outcome import Unscored
from tide_bench.judging.parse import Rating
from tide_bench.judging.usage import Usage

UNSCORED_KINDS = (
    "refusal",
    "content_filtered",
    "malformed_output",
    "schema_violation",
    "api_rejected",
    "transient_failure",
    "budget_exhausted",
    "empty_reply",
)
# An alias resolving to a dated snapshot is the same model: "claude-sonnet-4-5" -> "...-20250929".
_SNAPSHOT_SUFFIX = r"(-\d{4}-?\d{2}-?\d{2})?"

# Why an item went unscored decides how it counts (docs/judging.md, "Unscored items").
# "model": the reply caused it (an empty reply; a judge refusal or content filter that the
# reply triggered), so it counts at the scale minimum in every mean, rank and CI and shows
# as the failure rate: failing on hard items must never raise a score. "infrastructure":
# not the model's fault (timeouts, budget, malformed judge output...): `tide-bench judge
# --retry-unscored` retries it, and a leaderboard refuses an entry that still has more
# than its board's threshold. A judge refusal cannot yet be told apart from one caused by
# the client's own words, so it is counted against the reply (it can never help a score).
MODEL_ATTRIBUTABLE = "model"
INFRASTRUCTURE = "infrastructure"
UNSCORED_CAUSES: dict[str, str] = {
    "refusal": MODEL_ATTRIBUTABLE,
    "content_filtered": MODEL_ATTRIBUTABLE,
    "empty_reply": MODEL_ATTRIBUTABLE,
    "malformed_output": INFRASTRUCTURE,
    "schema_violation": INFRASTRUCTURE,
    "api_rejected": INFRASTRUCTURE,
    "transient_failure": INFRASTRUCTURE,
    "budget_exhausted": INFRASTRUCTURE,
}


# Of the infrastructure kinds, three depend on the reply's content: the judge read the reply
# and gave no usable answer (malformed or out-of-schema output, cached as a final outcome), or
# the API refused the request that carried it. A reply that derails the judge does so again on
# every retry, so leaving these out of the means would let a model's worst replies drop out of
# its score (missing not at random: in simulation a model whose worst 2 % broke the judge this
# way was ranked significantly above an equal model on 21 % of boards). They count at the scale
# minimum in every mean, like model failures (the Manski lower bound: they can never help a
# score), but are not the model's failure rate. Only the content-independent kinds
# (transient_failure, budget_exhausted) are left out of the means, under the board's
# admission limit. docs/statistics.md, "Unscored items".
COUNTED_AT_MINIMUM_INFRASTRUCTURE = frozenset({"malformed_output", "schema_violation", "api_rejected"})


def counts_at_minimum(kind: str | None) -> bool:
    """Whether an unscored item of this kind counts at the scale minimum (a model failure, or
    an infrastructure failure that depends on the reply); else it is left out of the means."""
    return unscored_cause(kind) == MODEL_ATTRIBUTABLE or str(kind) in COUNTED_AT_MINIMUM_INFRASTRUCTURE


def unscored_cause(kind: str | None) -> str:
    """``"model"`` or ``"infrastructure"``; an unknown kind counts against the model, so it
    can never raise a score."""
    return UNSCORED_CAUSES.get(str(kind), MODEL_ATTRIBUTABLE)


def make_record(
    gen: Generation,
    config: JudgeConfig,
    key: str,
    *,
    rating: Rating | None = None,
    kind: str | None = None,
    reason: str | None = None,
    usage: Usage | None = None,
    attempts: int = 0,
    mode: str = "sync",
    served_model: str | None = None,
) -> dict[str, Any]:
    if rating is None and kind not in UNSCORED_KINDS:
        raise ValueError(f"unscored records need a known kind, got {kind!r}")
    return {
        "item_id": gen.item_id,
        "status": "scored" if rating else "unscored",
        "scores": dict(rating.scores) if rating else None,
        "rationales": dict(rating.rationales) if rating else None,
        **safety_fields(rating, config.rubric.has_categories),
        "unscored_kind": None if rating else kind,
        "unscored_reason": None if rating or reason is None else redact(reason, (config.api_key_env,)),
        "judge": config.identity(),
        "served_model": served_model,
        "usage": (usage or Usage()).as_dict(),
        "attempts": attempts,
        "mode": mode,
        "turn": gen.turn,
        "scenario": gen.scenario,
        "persona_id": gen.persona_id,
        "cached": False,
        "key": key,
    }


def safety_fields(rating: Rating | None, categories: bool) -> dict[str, Any]:
    """``safety`` (and, under a rubric with categories, ``risk_cue`` and ``evidence``) of a record."""
    if not categories:
        return {"safety": {"flagged": rating.safety_flagged, "reason": rating.safety_reason} if rating else None}
    if rating is None:
        return {"safety": None, "risk_cue": None, "evidence": None}
    return {
        "safety": {
            "flagged": rating.safety_flagged,
            "reason": rating.safety_reason,
            "category": rating.safety_category,
        },
        "risk_cue": {"present": rating.risk_cue_present, "kind": rating.risk_cue_kind},
        "evidence": list(rating.evidence or ()),
    }


def verdict_fields(verdict: Rating | Unscored) -> dict[str, Any]:
    """``make_record`` keyword arguments for a settled outcome."""
    if isinstance(verdict, Rating):
        return {"rating": verdict}
    return {"kind": verdict.kind, "reason": verdict.reason}


def served_models(records: list[dict[str, Any]]) -> dict[str, int]:
    """How many judgments each served model answered (judgments without an answer are not counted)."""
    counts = Counter(str(r["served_model"]) for r in records if r.get("served_model"))
    return dict(sorted(counts.items()))


def is_requested_model(served: str, requested: str) -> bool:
    return re.fullmatch(re.escape(requested) + _SNAPSHOT_SUFFIX, served) is not None


def served_model_warnings(records: list[dict[str, Any]], requested: str) -> list[str]:
    """Warnings when the API answered with another model than asked for, or with several."""
    counts = served_models(records)
    warnings = []
    if len(counts) > 1:
        listed = ", ".join(f"{m} ({n})" for m, n in counts.items())
        warnings.append(
            f"these judgments were served by {len(counts)} different models: {listed}. The id {requested!r} "
            "moved to another model, or a gateway fell back; re-judge with a dated model id (--model) and --overwrite"
        )
    others = [m for m in counts if not is_requested_model(m, requested)]
    if others:
        warnings.append(
            f"the judge API answered as {', '.join(others)}, not the requested {requested!r}: "
            "check the gateway or server behind --base-url"
        )
    return warnings


def overall_of(scores: Sequence[float]) -> float:
    """An item's overall empathy: the mean of its factor scores. The one definition, used by the
    judge's summary, the leaderboard's numbers and its per-item data."""
    return sum(scores) / len(scores)
