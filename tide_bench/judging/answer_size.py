"""How long a judge's answer is, in output tokens: derived from the output schema it must fill.

Output tokens are most of a judge's bill (about three quarters of a cached Claude Sonnet call,
docs/judging.md "What judging costs"), so the estimate does not take them from a constant: it
builds the answer the rubric's schema asks for (the tool input or JSON object that
:func:`.prompt.output_spec` sends, whatever its version) with every text field at the length
the prompt asks for, and counts that answer's tokens like every other estimate (~4 characters
per token). A rubric with more factors, a new field or longer rationales costs more by
construction; v3 (or any later rubric file) is measured the same way.

The lengths are data: a prompt file's ``typical_answer`` (words per rationale, quotes and words
per quote, words in a safety reason; see ``judges/prompt_v2.yaml``), else
:data:`DEFAULT_LENGTHS`. The typical answer is an unflagged one (no risk cue, category
``none``), the common case; its text is the rubric's own words, so word lengths are those of the
judge's vocabulary. Once judgments exist, the estimate prefers their measured output tokens
(:mod:`.estimate`).
"""

from __future__ import annotations

import json
from itertools import cycle, islice
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.judging.tokens import estimate_tokens

NONE_CODE = "none"
DEFAULT_LENGTHS: dict[str, int] = {
    "rationale_words": 60,  # two to four sentences of ~20 words
    "quotes": 3,  # evidence: short quotes from the reply
    "quote_words": 8,
    "reason_words": 0,  # the safety reason of an unflagged reply is empty
    "text_words": 15,  # any other text field of a schema
}


def answer_lengths(raw: Any, path: Path) -> dict[str, int]:
    """A prompt file's ``typical_answer`` mapping, checked; missing keys take the defaults."""
    if raw is None:
        return dict(DEFAULT_LENGTHS)
    if not isinstance(raw, dict) or not set(raw) <= set(DEFAULT_LENGTHS):
        raise ConfigError(
            f"must be a mapping with keys among {', '.join(DEFAULT_LENGTHS)}", path=path, field="typical_answer"
        )
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10_000:
            raise ConfigError("must be a whole number of words (0-10000)", path=path, field=f"typical_answer.{key}")
    return DEFAULT_LENGTHS | raw


def _words(vocabulary: list[str], n: int) -> str:
    return " ".join(islice(cycle(vocabulary), n)) if n and vocabulary else ""


def typical_answer(schema: dict[str, Any], lengths: dict[str, int], vocabulary: list[str]) -> Any:
    """An instance of ``schema`` (the strict-mode subset: objects, arrays, enums, strings,
    booleans, integers) with each text at its typical length."""

    def fill(node: dict[str, Any], name: str, in_list: bool = False) -> Any:
        if "enum" in node:
            options = list(node["enum"])
            if NONE_CODE in options:
                return NONE_CODE
            return options[len(options) // 2] if all(isinstance(o, int) for o in options) else options[0]
        kind = node.get("type")
        if kind == "object":
            return {key: fill(child, key) for key, child in (node.get("properties") or {}).items()}
        if kind == "array":
            count = lengths["quotes"] if name == "evidence" else 1
            return [fill(node.get("items") or {}, name, in_list=True) for _ in range(count)]
        if kind == "string":
            if in_list and name == "evidence":
                return _words(vocabulary, lengths["quote_words"])
            key = {"rationale": "rationale_words", "reason": "reason_words"}.get(name, "text_words")
            return _words(vocabulary, lengths[key])
        if kind == "boolean":
            return False
        if kind in ("integer", "number"):
            return node.get("minimum", 0)
        return None

    return fill(schema, "")


def output_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema inside an output specification (an Anthropic tool or an OpenAI format)."""
    if "input_schema" in spec:
        return dict(spec["input_schema"])
    return dict((spec.get("json_schema") or {}).get("schema") or {})


def typical_output_tokens(spec: dict[str, Any], lengths: dict[str, int], vocabulary_text: str) -> int:
    """Output tokens of a typical answer to ``spec``, written as JSON the way models write it."""
    words = (word.strip(".,;:()'\"`!?") for word in vocabulary_text.split())
    vocabulary = [word for word in words if word.isalpha()]
    answer = typical_answer(output_schema(spec), lengths, vocabulary)
    return estimate_tokens(json.dumps(answer, ensure_ascii=False))
