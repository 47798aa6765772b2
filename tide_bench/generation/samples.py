"""The typed reader of lm-eval's samples files: one :class:`Generation` per line.

A samples line (``samples_<task>_<date>.jsonl``, written by lm-eval with ``--log_samples``)
holds the TIDE item as ``doc``, the prompt, the reply and the per-item reference metrics.
Every field tide-bench uses is type-checked here, once, for the judge, the leaderboard,
the audit and the annotation pages: a problem is reported as
``samples_x.jsonl:LINE, field 'doc.turn': must be an integer, got a string``.

Accepted: any task whose name starts with ``tide_empathy`` or ``ed_empathy`` (the EmpatheticDialogues
tasks, whose items have the same shape). Reference metrics may be NaN
(``distinct_2`` of a one-word reply, ``cosine_sim`` when no embedding model loaded): lm-eval
writes Python's ``NaN`` for them, which is read as "not defined"; infinities are refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.core.fields import Fields
from tide_bench.core.jsonio import iter_jsonl, loads_strict
from tide_bench.data.schema import TideItem
from tide_bench.metrics.table import metric_names

TASK_PREFIX = ("tide_empathy", "ed_empathy")  # str.startswith takes the tuple
TASK_PATTERN = "tide_empathy* or ed_empathy*"  # how messages name them
ROLES = ("user", "assistant")


@dataclass(frozen=True)
class Generation:
    """One generated reply with the TIDE item it answers and its reference metrics."""

    item_id: str
    task: str
    persona_id: str
    conversation_id: str
    turn: int
    scenario: str
    split: str
    history: list[dict[str, str]]
    client_utterance: str
    reference_reply: str
    reply: str
    prompt: str
    persona: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    split_sha256: str = ""
    tide_source: str = ""
    file: str = ""
    line: int = 0

    def item(self) -> TideItem:
        """The TIDE item this reply answers, as the dataset loader built it (for content hashes)."""
        return TideItem(
            item_id=self.item_id,
            persona_id=self.persona_id,
            conversation_id=self.conversation_id,
            turn=self.turn,
            scenario=self.scenario or None,
            split=self.split,
            client_utterance=self.client_utterance,
            reference_reply=self.reference_reply,
            history=self.history,
            persona=self.persona,
        )


def _reply(sample: dict[str, Any]) -> Any:
    filtered = sample.get("filtered_resps")
    if isinstance(filtered, list) and filtered:
        value = filtered[0]
        return value[0] if isinstance(value, list) and value else value
    resps = sample.get("resps")
    if isinstance(resps, list) and resps and isinstance(resps[0], list) and resps[0]:
        return resps[0][0]
    return None


def _prompt(sample: dict[str, Any]) -> str:
    args = sample.get("arguments")
    if isinstance(args, dict):
        first: Any = next(iter(args.values()), {})
        value = first.get("arg_0", "") if isinstance(first, dict) else ""
    elif isinstance(args, list) and args and isinstance(args[0], list) and args[0]:
        value = args[0][0]
    else:
        value = ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _history(doc: Fields) -> list[dict[str, str]]:
    history = doc.listing("history", optional=True) or []
    for k, message in enumerate(history):
        if (
            not isinstance(message, dict)
            or message.get("role") not in ROLES
            or not isinstance(message.get("content"), str)
        ):
            doc.fail(f"history[{k}]", "must be an object with role 'user' or 'assistant' and a string content")
    return [{"role": m["role"], "content": m["content"]} for m in history]


def _persona(doc: Fields, seen: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The persona, parsed once per distinct text (a persona's 20 conversations share it);
    the returned dict may be shared between items: read it, never change it."""
    text = doc.string("persona_json", optional=True)
    if not text:
        return {}
    if text in seen:
        return seen[text]
    try:
        persona = loads_strict(text)
    except ValueError:
        doc.fail("persona_json", "is not valid JSON")
    if not isinstance(persona, dict):
        doc.fail("persona_json", "must encode a JSON object")
    seen[text] = persona
    return persona


def _metrics(sample: Fields) -> dict[str, float]:
    metrics = {}
    for name in metric_names():  # the EPITOME scorer's too, where a run has them
        value = sample.number(name, optional=True, allow_nan=True)
        if value is not None:
            metrics[name] = value
    return metrics


def parse_sample(
    obj: Any,
    task: str,
    path: Path,
    line: int,
    error: type[TideBenchError] = DataError,
    personas: dict[str, dict[str, Any]] | None = None,
) -> Generation:
    """Check one parsed samples line and turn it into a :class:`Generation`."""
    sample = Fields(obj, path=path, line=line, error=error)
    doc = sample.child("doc")
    assert doc is not None
    reply = _reply(sample.obj)
    if not isinstance(reply, str):
        sample.fail("filtered_resps", "holds no generated reply (a string in filtered_resps[0] or resps[0][0])")
    turn = doc.integer("turn", minimum=1)
    return Generation(
        item_id=doc.string("item_id", nonempty=True, max_len=300),
        task=task,
        persona_id=doc.string("persona_id", nonempty=True, max_len=200),
        conversation_id=doc.string("conversation_id", nonempty=True, max_len=200),
        turn=turn,
        scenario=doc.string("scenario", optional=True) or "",
        split=doc.string("split"),
        history=_history(doc),
        client_utterance=doc.string("client_utterance"),
        reference_reply=doc.string("reference_reply"),
        reply=reply,
        prompt=_prompt(sample.obj),
        persona=_persona(doc, {} if personas is None else personas),
        metrics=_metrics(sample),
        split_sha256=doc.string("split_sha256", optional=True) or "",
        tide_source=doc.string("tide_source", optional=True) or "",
        file=str(path),
        line=line,
    )


def iter_samples_file(
    path: Path,
    task: str,
    *,
    error: type[TideBenchError] = DataError,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
) -> Iterator[Generation]:
    """Parse one lm-eval samples file of a tide-bench task."""
    if not task.startswith(TASK_PREFIX):
        raise error(f"samples of task {task!r}, not a tide-bench task ({TASK_PATTERN})", path=path)
    personas: dict[str, dict[str, Any]] = {}
    for line, obj in iter_jsonl(path, error, max_bytes=max_bytes, follow_symlinks=follow_symlinks, allow_nan=True):
        yield parse_sample(obj, task, path, line, error, personas)


def read_generations(
    root: Path,
    samples: dict[str, str],
    *,
    error: type[TideBenchError] = DataError,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
) -> list[Generation]:
    """All generations of the samples files listed in a manifest, checked for duplicates.

    ``max_bytes`` applies to each file. Paths are taken as given: callers that read a
    stranger's manifest confine them first (see :mod:`tide_bench.leaderboard.validate`).
    """
    generations: list[Generation] = []
    seen: dict[str, str] = {}
    for task, rel in sorted(samples.items()):
        path = root / rel
        for gen in iter_samples_file(path, task, error=error, max_bytes=max_bytes, follow_symlinks=follow_symlinks):
            if gen.item_id in seen:
                raise error(
                    f"item {gen.item_id} appears twice (also in {seen[gen.item_id]})",
                    path=path,
                    line=gen.line,
                    field="doc.item_id",
                )
            seen[gen.item_id] = rel
            generations.append(gen)
    return generations
