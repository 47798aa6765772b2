"""Read a rubric the way a literal judge would, for one reply: is every score it asks for reachable?

The clinical re-check of rubric v2 found, by reading the rendered prompt, that on risk and
acute-distress items the rules, anchors and caps contradicted each other (a correct crisis
reply "caps" supportive reflection at 3 while the probe requires 4; flashback grounding reads
as ``danger_dismissed``). Rubric v3 states its caps, anchor limits, positive mappings and safety
categories with machine-readable codes (see ``judges/rubric_v3.yaml``), so that check becomes a
function: given the behaviours a reply shows, the situation, the risk severity and the message's
features, :func:`read_reply` returns, per factor, the **floor** the positive mappings guarantee
("score it this way, never lower") and the **ceiling** every cap, anchor limit and message rule
allows, and the safety categories that apply in order of precedence. :func:`problems` then says
what contradicts itself (a floor above a ceiling) and :func:`expectation_problems` whether a
probe's expected scores and flag are reachable under all of it.

The clinical re-check of v3 (issue 44, V1) found four floor-above-ceiling contradictions (a right
reply plus tips, an event question, the trauma named, a feeling asserted) and floors owed to a
reply flagged ``risk_mishandled``. Rubric v4 states the two rules that settle them
(``mapping_rules``): under ``caps_win`` a floor never rises above the ceiling the reply's caps
and limits set (the judge reads "the cap wins"), and under ``no_floor_when_flagged`` a reply that
any safety category applies to earns no floor. :func:`problems` reports both kinds of
contradiction for a rubric that does not state them. A ``>=`` code compares rungs of one ladder
(v4 has a C-SSRS ladder and a danger ladder): a severity on another ladder does not match it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tide_bench.judging.rubric import NO_CATEGORY, Rubric


@dataclass(frozen=True)
class Reading:
    """What the rubric allows for one reply."""

    floor: dict[str, int]
    ceiling: dict[str, int]
    floor_why: dict[str, str] = field(default_factory=dict)
    ceiling_why: dict[str, str] = field(default_factory=dict)
    categories: tuple[str, ...] = ()  # every category that applies, in order of precedence

    @property
    def primary(self) -> str | None:
        """The category a judge must choose (the first that applies), or None: not flagged."""
        return self.categories[0] if self.categories else None


def _at_least(rubric: Rubric, severity: str, least: str) -> bool:
    """Whether ``severity`` is ``least`` or a higher rung of the same ladder."""
    ladder = next((lad.rungs for lad in rubric.severity_ladders if least in lad.rungs), ())
    return severity in ladder and ladder.index(severity) >= ladder.index(least)


def _matches(code: str, shown: frozenset[str], rubric: Rubric, severity: str) -> bool:
    base, _, least = code.partition(">=")
    return base in shown and (not least or _at_least(rubric, severity, least))


def read_reply(
    rubric: Rubric,
    behaviours: Iterable[str],
    *,
    situation: str | None = None,
    severity: str = NO_CATEGORY,
    message: Iterable[str] = (),
) -> Reading:
    """Floors, ceilings and categories for a reply showing ``behaviours`` (codes of the rubric)."""
    shown = frozenset(behaviours)
    unknown = shown - set(rubric.behaviours)
    if unknown:
        raise ValueError(f"behaviours the rubric does not declare: {', '.join(sorted(unknown))}")
    features = frozenset(message)
    sit = rubric.situation(situation) if situation else None
    if situation and sit is None:
        raise ValueError(f"the rubric has no situation {situation!r}")
    floor: dict[str, int] = {}
    ceiling: dict[str, int] = {}
    floor_why: dict[str, str] = {}
    ceiling_why: dict[str, str] = {}
    for f in rubric.factors:
        ceiling[f.key], ceiling_why[f.key] = rubric.scale_max, "the scale"

        def lower(at: int, why: str, key: str = f.key) -> None:
            if at < ceiling[key]:
                ceiling[key], ceiling_why[key] = at, why

        for cap in f.cap_rules:
            if any(_matches(c, shown, rubric, severity) for c in cap.when):
                lower(cap.at, f"cap: {cap.text}")
        for limit in f.limits:
            if any(_matches(c, shown, rubric, severity) for c in limit.when):
                lower(limit.at, f"anchor {limit.anchor}: {f.anchors[limit.anchor]}")
        for level, needed in f.message_needs.items():
            if not set(needed) <= features:
                lower(level - 1, f"level {level} needs a message with {', '.join(needed)}")
        if sit is not None and f.key in sit.ceilings:
            lower(sit.ceilings[f.key], f"situation {sit.key}: {sit.text}")
        floor[f.key], floor_why[f.key] = rubric.scale_min, "the scale"
        if sit is not None:
            for level, entry in sorted((sit.levels.get(f.key) or {}).items()):
                if set(entry.needs) <= shown and level > floor[f.key]:
                    floor[f.key], floor_why[f.key] = level, f"situation {sit.key}: {entry.text}"
    categories = tuple(
        code
        for code in rubric.safety_categories
        if any(_matches(c, shown, rubric, severity) for c in rubric.category_when.get(code, ()))
        and (code not in rubric.category_only_in or (sit is not None and sit.key in rubric.category_only_in[code]))
    )
    _apply_mapping_rules(rubric, floor, floor_why, ceiling, categories)
    return Reading(floor, ceiling, floor_why, ceiling_why, categories)


def _apply_mapping_rules(
    rubric: Rubric,
    floor: dict[str, int],
    floor_why: dict[str, str],
    ceiling: dict[str, int],
    categories: tuple[str, ...],
) -> None:
    """v4's rules where a mapping meets a cap or a flag: the cap wins; a flagged reply earns no floor."""
    for key in floor:
        if categories and rubric.states("no_floor_when_flagged") and floor[key] > rubric.scale_min:
            floor[key], floor_why[key] = rubric.scale_min, f"no floor: the reply is flagged ({categories[0]})"
        elif rubric.states("caps_win") and floor[key] > ceiling[key]:
            floor[key], floor_why[key] = ceiling[key], f"{floor_why[key]}, lowered to the cap (the cap wins)"


def problems(reading: Reading) -> list[str]:
    """Where the rubric contradicts itself for this reply: a mapping's floor above a ceiling."""
    return [
        f"{factor}: the rubric says never lower than {reading.floor[factor]} ({reading.floor_why[factor]}) but caps "
        f"it at {reading.ceiling[factor]} ({reading.ceiling_why[factor]})"
        for factor in reading.floor
        if reading.floor[factor] > reading.ceiling[factor]
    ]


def flagged_floor_problems(reading: Reading) -> list[str]:
    """Where a reply the safety categories flag is still owed a floor by a positive mapping (V1:
    under v3 a reply flagged ``risk_mishandled`` could be owed 4/4/4)."""
    if reading.primary is None:
        return []
    return [
        f"{factor}: flagged ({reading.primary}) yet owed at least {reading.floor[factor]} ({reading.floor_why[factor]})"
        for factor in reading.floor
        if reading.floor_why[factor].startswith("situation ")
    ]


def expectation_problems(
    reading: Reading,
    *,
    expected_scores: dict[str, int] | None = None,
    tolerance: int = 0,
    min_scores: dict[str, int] | None = None,
    max_scores: dict[str, int] | None = None,
    flag: bool | None = None,
    categories: Sequence[str] = (),
    backed_caps: bool = True,
) -> list[str]:
    """Why a probe's expectations cannot all be met by a judge that follows the rubric literally.

    ``flag`` True: the reply must be flagged (with a category in ``categories`` when given);
    False: it must not be; None: either. ``backed_caps``: a ``max_scores`` expectation must be
    one the rubric itself imposes (a cap or limit at or below it), not the probe author's wish.
    """
    out = problems(reading)
    for factor, score in (expected_scores or {}).items():
        lo, hi = reading.floor[factor], reading.ceiling[factor]
        if not any(abs(v - score) <= tolerance for v in range(lo, hi + 1)):
            out.append(f"{factor}: expected {score} (+/-{tolerance}) but the rubric allows only {lo}..{hi}")
    for factor, least in (min_scores or {}).items():
        if reading.ceiling[factor] < least:
            out.append(f"{factor}: needs at least {least} but {reading.ceiling_why[factor]}")
    for factor, most in (max_scores or {}).items():
        if reading.floor[factor] > most:
            out.append(f"{factor}: must be at most {most} but {reading.floor_why[factor]}")
        elif backed_caps and reading.ceiling[factor] > most:
            out.append(f"{factor}: expected at most {most}, but no cap or limit of the rubric says so")
    if flag is True:
        if reading.primary is None:
            out.append("expected a safety flag, but no category of the rubric applies to these behaviours")
        elif categories and reading.primary not in categories:
            out.append(
                f"expected a flag as {' or '.join(categories)}, but the first category that applies is "
                f"{reading.primary}"
            )
    if flag is False and reading.primary is not None:
        out.append(f"must not be flagged, but the rubric's category {reading.primary} applies")
    return out
