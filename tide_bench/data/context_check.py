"""How often reference replies mention persona facts the conversation never states.

Context rule (docs/data.md): neither the evaluated model nor the judge sees the persona
metadata, only the conversation. If TIDE's references were written with the persona in view,
a reference that names the client's trauma ("after the assault", "on deployment") rewards
models that guess it, in similarity metrics and with the judge. This check counts such
references so a user with the real snapshot can see how large the effect could be.

It is a lexical heuristic, stated as such, and an upper bound (read the examples): a *persona
term* is a word of five or more letters from the persona's factual metadata (fields whose name
mentions the trauma, event, context, background, history or occupation; all string fields when
none does), not a stop word and not a word used in more than ``GENERIC_SHARE`` of all
references; a reference *leaks* when it contains a persona term (or its stem) that appears
nowhere in the conversation up to that turn.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from tide_bench.data.schema import TideItem

GENERIC_SHARE = 0.2
FACT_FIELDS = ("trauma", "event", "context", "background", "history", "occupation", "incident", "story")
MAX_EXAMPLES = 5
_WORD = re.compile(r"[a-z]{5,}")
_STOP = frozenset(
    (
        "about",
        "above",
        "after",
        "again",
        "against",
        "being",
        "below",
        "between",
        "both",
        "could",
        "doing",
        "during",
        "each",
        "further",
        "having",
        "their",
        "there",
        "these",
        "those",
        "through",
        "under",
        "until",
        "where",
        "which",
        "while",
        "would",
        "years",
        "since",
        "before",
        "other",
        "others",
        "often",
        "people",
        "person",
        "someone",
        "something",
        "things",
        "still",
        "first",
        "second",
        "three",
        "every",
        "never",
        "always",
        "really",
        "female",
        "males",
        "male",
        "women",
        "woman",
        "children",
        "child",
        "family",
        "friend",
        "friends",
        "month",
        "months",
        "weeks",
        "hours",
        "night",
        "nights",
        "morning",
        "evening",
        "today",
    )
)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def _persona_terms(persona: dict[str, Any]) -> set[str]:
    strings = {k: v for k, v in persona.items() if isinstance(v, str) and k != "persona_id"}
    factual = {k: v for k, v in strings.items() if any(word in k.lower() for word in FACT_FIELDS)}
    return _terms(" ".join((factual or strings).values()))


def persona_leaks(items: Sequence[TideItem]) -> dict[str, Any]:
    """Counts of references naming persona terms absent from their conversation, with examples."""
    if not items:
        return {"n_checked": 0, "n_leaking": 0, "share": None, "examples": [], "method": "no items"}
    reference_terms = [_terms(i.reference_reply) for i in items]
    frequency: Counter[str] = Counter(t for terms in reference_terms for t in terms)
    generic = {t for t, n in frequency.items() if n > GENERIC_SHARE * len(items)}
    leaking: list[tuple[str, list[str]]] = []
    checked = 0
    for item, ref_terms in zip(items, reference_terms, strict=True):
        persona = _persona_terms(item.persona) - generic
        if not persona:
            continue
        checked += 1
        conversation = _terms(" ".join([*(m["content"] for m in item.history), item.client_utterance]))
        leaked = sorted((ref_terms & persona) - conversation)
        if leaked:
            leaking.append((item.item_id, leaked))
    return {
        "n_checked": checked,
        "n_leaking": len(leaking),
        "share": round(len(leaking) / checked, 4) if checked else None,
        "examples": [{"item_id": i, "terms": t} for i, t in leaking[:MAX_EXAMPLES]],
        "method": "lexical heuristic (an upper bound): factual persona-metadata words of 5+ letters in the reference "
        "but not in the conversation",
    }


def format_leaks(report: dict[str, Any], lines: Iterable[str] = ()) -> list[str]:
    """Terminal lines for ``data validate``."""
    out = list(lines)
    if not report["n_checked"]:
        out.append("persona facts in references: not checked (no persona metadata)")
        return out
    out.append(
        f"persona facts in references: {report['n_leaking']} of {report['n_checked']} references "
        f"({100 * report['share']:.1f} %) use metadata words the conversation never states"
    )
    out += [f"  e.g. {e['item_id']}: {', '.join(e['terms'])}" for e in report["examples"]]
    if report["n_leaking"]:
        out.append("  neither the model nor the judge sees the persona: see docs/data.md (context rule)")
    return out
