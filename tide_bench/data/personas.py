"""The persona attributes equity is reported by: age group, gender, trauma type and education.

TIDE gives every persona a metadata file (``metadata/<persona>_metadata.json``: demographics, trauma
context, behaviour), and every generation item carries it (``TideItem.persona``, the samples'
``doc.persona_json``). The exact keys of the gated release are not public (``docs/data.md``); the
built-in sample writes ``age`` and ``age_group``, ``gender``, ``education``, ``occupation`` and
``trauma_type``, and this module reads those. Where a file gives an ``age`` but no ``age_group``,
the group is derived with the bands of the rating page (18-24 ... 65+).

Nothing is guessed and nothing is dropped: a persona whose metadata lack an attribute, or give it
as something other than a plain value, is counted under "not given" for that attribute, and each
such case is said in a note (which persona, which attribute, why), so a report can show how many
personas took no part in a comparison and why. A persona whose items disagree about an attribute
(two metadata files for one persona id) is treated the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

EQUITY_ATTRIBUTES = ("age_group", "gender", "trauma_type", "education")
ATTRIBUTE_LABELS = {
    "age_group": "age group",
    "gender": "gender",
    "trauma_type": "trauma type",
    "education": "education",
}
AGE_BANDS = ((18, 24), (25, 34), (35, 44), (45, 54), (55, 64))
MAX_VALUE_CHARS = 80  # a longer value is free text, not a group


@dataclass
class PersonaAttributes:
    """attribute -> persona -> value (None: not given), and one note per problem found."""

    values: dict[str, dict[str, str | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def n_without(self, attribute: str) -> int:
        return sum(1 for v in self.values.get(attribute, {}).values() if v is None)


def age_group(age: Any) -> str | None:
    """The rating page's band of an age in years (``65+`` from 65), or None when it is no age."""
    if isinstance(age, bool) or not isinstance(age, int | float) or not 0 <= age < 130 or age != age:
        return None
    if age < 18:
        return "under 18"
    for low, high in AGE_BANDS:
        if low <= age <= high:
            return f"{low}-{high}"
    return "65+" if age >= 65 else None


def persona_value(meta: Mapping[str, Any], attribute: str) -> tuple[str | None, str | None]:
    """The attribute's value in one persona's metadata, and why there is none (None when there is)."""
    raw = meta.get(attribute)
    if raw is None and attribute == "age_group" and meta.get("age") is not None:
        derived = age_group(meta.get("age"))
        return (derived, None) if derived else (None, f"'age' is {str(meta.get('age'))[:20]!r}, not an age in years")
    if raw is None:
        return None, f"has no {attribute!r} field"
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return None, f"{attribute!r} is a {type(raw).__name__}, not a single value"
    text = " ".join(str(raw).split()).lower()
    if not text:
        return None, f"{attribute!r} is empty"
    if len(text) > MAX_VALUE_CHARS:
        return None, f"{attribute!r} is free text ({len(text)} characters), not a group"
    return text, None


def persona_attributes(
    pairs: Iterable[tuple[str, Mapping[str, Any] | None]], attributes: Iterable[str] = EQUITY_ATTRIBUTES
) -> PersonaAttributes:
    """Each persona's value of each attribute from ``(persona_id, metadata)`` pairs (one per item:
    the metadata of a persona's items should agree). Missing or malformed values are None with a
    note; at most five notes per attribute and cause are listed, with the count of the rest."""
    wanted = tuple(attributes)
    out = PersonaAttributes({a: {} for a in wanted})
    problems: dict[tuple[str, str], set[str]] = {}
    for persona, meta in pairs:
        for attribute in wanted:
            value, why = persona_value(meta or {}, attribute)
            seen = out.values[attribute]
            if persona not in seen:
                seen[persona] = value
                if why:
                    problems.setdefault((attribute, why), set()).add(persona)
            elif seen[persona] != value:
                problems.setdefault((attribute, "its items give different values"), set()).add(persona)
                seen[persona] = None
    for (attribute, why), personas in problems.items():
        names = sorted(personas)
        listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        out.notes.append(
            f"{len(names)} persona(s) ({listed}): {why}; counted under 'not given' for "
            f"{ATTRIBUTE_LABELS.get(attribute, attribute)}, in no comparison"
        )
    return out
