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
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.core.fields import Fields
from tide_bench.core.jsonio import iter_jsonl, loads_strict
from tide_bench.core.records import from_checked
from tide_bench.data.schema import TideItem
from tide_bench.data.sources import split_content_hash
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


def _metrics(sample: Fields, names: tuple[str, ...]) -> dict[str, float]:
    metrics = {}
    for name in names:  # the common line never comes here: _fast_sample reads it
        value = sample.number(name, optional=True, allow_nan=True)
        if value is not None:
            metrics[name] = value
    return metrics


_DocFields = tuple[str, str, str, int, str, str, list[dict[str, str]], str, str, dict[str, Any], str, str]


def _doc_fields(doc: Fields, personas: dict[str, dict[str, Any]]) -> _DocFields:
    """What a sample's ``doc`` (the TIDE item) gives a :class:`Generation`, every field checked."""
    return (
        doc.string("item_id", nonempty=True, max_len=300),
        doc.string("persona_id", nonempty=True, max_len=200),
        doc.string("conversation_id", nonempty=True, max_len=200),
        doc.integer("turn", minimum=1),
        doc.string("scenario", optional=True) or "",
        doc.string("split"),
        _history(doc),
        doc.string("client_utterance"),
        doc.string("reference_reply"),
        _persona(doc, personas),
        doc.string("split_sha256", optional=True) or "",
        doc.string("tide_source", optional=True) or "",
    )


class DocMemo:
    """The checked ``doc`` blocks of the samples files read last, by item id.

    Why: every entry of a board answers the same items, so its samples files repeat the same
    ``doc`` objects (the TIDE item: ids, turns, history, persona) line for line; checking each
    again field by field was a tenth of a build's CPU. A ``doc`` equal to one that passed the
    checks gives the same fields, so they are taken from here. Equal means equal as JSON
    values of the same types: Python's ``==`` also holds for ``1 == 1.0 == True``, so the one
    number the checks read (``turn``) must also be an ``int``, as it was in the checked doc
    (every other field read is a string, a list of objects of strings, which equal only
    their kind). Holds one read's docs (``remember`` replaces them): bounded by one entry.

    A read whose every doc equals one of the read before, with as many items, holds the same
    items: :meth:`split_hash` then gives the previous read's content hash without hashing the
    items again.
    """

    def __init__(self) -> None:
        self._checked: dict[str, tuple[dict[str, Any], _DocFields]] = {}
        self._next: dict[str, tuple[dict[str, Any], _DocFields]] = {}
        self._hits = self._reads = 0
        self._read: list[Generation] | None = None  # the last read's generations, as returned
        self._count = 0  # reads remembered so far
        self._repeated = False  # whether the last read holds the same items as the one before
        self._hash: tuple[int, str, str] | None = None  # (read count, split, hash)

    def fields(self, raw: dict[str, Any], check: Callable[[], _DocFields]) -> _DocFields:
        """The fields of the ``doc`` object ``raw``: remembered, or ``check()`` (every field
        checked: :func:`_doc_fields`, called only when ``raw`` is new)."""
        key = raw.get("item_id")
        hit = self._checked.get(key) if type(key) is str else None
        self._reads += 1
        if hit is not None and type(raw.get("turn")) is int and hit[0] == raw:
            self._hits += 1
            # the doc kept is the one it equals, so that ``raw`` is freed with its line: keeping
            # every read's docs until the next read cost more than the comparisons (measured)
            self._next[hit[1][0]] = hit
            return hit[1]
        found = check()
        self._next[found[0]] = (raw, found)
        return found

    def begin(self) -> None:
        """Start a read (what an unfinished read before left is dropped)."""
        self._next, self._hits, self._reads = {}, 0, 0

    def remember(self, read: list[Generation] | None = None) -> None:
        """Keep the docs read since the last call (and forget the ones before); ``read``: the
        generations that read returned."""
        self._repeated = self._hits == self._reads == len(self._next) == len(self._checked) > 0
        self._checked, self._next = self._next, {}
        self._hits = self._reads = 0
        self._read = read
        self._count += 1

    def split_hash(self, gens: list[Generation], split: str) -> str:
        """:func:`~tide_bench.data.sources.split_content_hash` of the items of ``gens``, taken
        from the read before when ``gens`` is the last read (unchanged) and it repeated that
        read's items."""
        last = gens is self._read and len(gens) == len(self._checked)
        if last and self._repeated and self._hash is not None and self._hash[:2] == (self._count - 1, split):
            recomputed = self._hash[2]
        else:
            recomputed = split_content_hash([g.item() for g in gens], split)
        if last:
            self._hash = (self._count, split, recomputed)
        return recomputed


def parse_sample(
    obj: Any,
    task: str,
    path: Path,
    line: int,
    error: type[TideBenchError] = DataError,
    personas: dict[str, dict[str, Any]] | None = None,
    *,
    memo: DocMemo | None = None,
    names: tuple[str, ...] | None = None,
) -> Generation:
    """Check one parsed samples line and turn it into a :class:`Generation`. ``memo`` takes the
    fields of a ``doc`` already checked (:class:`DocMemo`); ``names``: :func:`metric_names`."""
    sample = Fields(obj, path=path, line=line, error=error)
    doc = sample.child("doc")
    assert doc is not None
    reply = _reply(sample.obj)
    if not isinstance(reply, str):
        sample.fail("filtered_resps", "holds no generated reply (a string in filtered_resps[0] or resps[0][0])")
    known = {} if personas is None else personas
    doc_fields = memo.fields(doc.obj, lambda: _doc_fields(doc, known)) if memo is not None else _doc_fields(doc, known)
    metrics = _metrics(sample, metric_names() if names is None else names)
    return _generation(doc_fields, task, reply, _prompt(sample.obj), metrics, path, line)


def _generation(
    doc_fields: tuple[Any, ...],
    task: str,
    reply: str,
    prompt: Any,
    metrics: dict[str, float],
    path: Path,
    line: int,
) -> Generation:
    """The :class:`Generation` of a checked line (both readers' one constructor; :func:`.from_checked`)."""
    item_id, persona_id, conversation_id, turn, scenario, split, history, client, reference, persona, sha, source = (
        doc_fields
    )
    return from_checked(
        Generation,
        {
            "item_id": item_id,
            "task": task,
            "persona_id": persona_id,
            "conversation_id": conversation_id,
            "turn": turn,
            "scenario": scenario,
            "split": split,
            "history": history,
            "client_utterance": client,
            "reference_reply": reference,
            "reply": reply,
            "prompt": prompt,
            "persona": persona,
            "metrics": metrics,
            "split_sha256": sha,
            "tide_source": source,
            "file": str(path),
            "line": line,
        },
    )


_INFINITIES = (math.inf, -math.inf)


def _fast_sample(
    obj: Any,
    task: str,
    path: Path,
    line: int,
    error: type[TideBenchError],
    personas: dict[str, dict[str, Any]],
    memo: DocMemo | None,
    names: tuple[str, ...],
) -> Generation | None:
    """The common line (an object with a ``doc`` object, the reply a string in
    ``filtered_resps[0]``, every metric a float or absent) read without :class:`Fields` around
    the line; None for anything else, which :func:`parse_sample` then reads (and refuses with
    its message). Its result is :func:`parse_sample`'s: the ``doc`` goes through the same
    checks (or :class:`DocMemo`), and a check that fails here fails there first in the same
    order (the line, ``doc``, the reply, then the doc's fields, then the metrics).
    ``tests/test_reader_fast_paths.py`` holds the two paths equal on mutated lines."""
    if type(obj) is not dict:
        return None
    get = obj.get
    raw_doc, filtered = get("doc"), get("filtered_resps")
    if type(raw_doc) is not dict or type(filtered) is not list or not filtered or type(filtered[0]) is not str:
        return None
    metrics = {}
    for name in names:
        value = get(name)
        if type(value) is float and value not in _INFINITIES:  # finite or NaN (lm-eval's undefined metric)
            metrics[name] = value
        elif value is not None:
            return None

    def check() -> _DocFields:
        return _doc_fields(Fields(raw_doc, path=path, line=line, prefix="doc", error=error), personas)

    doc_fields = memo.fields(raw_doc, check) if memo is not None else check()
    return _generation(doc_fields, task, filtered[0], _prompt(obj), metrics, path, line)


def iter_samples_file(
    path: Path,
    task: str,
    *,
    error: type[TideBenchError] = DataError,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
    memo: DocMemo | None = None,
) -> Iterator[Generation]:
    """Parse one lm-eval samples file of a tide-bench task."""
    if not task.startswith(TASK_PREFIX):
        raise error(f"samples of task {task!r}, not a tide-bench task ({TASK_PATTERN})", path=path)
    personas: dict[str, dict[str, Any]] = {}
    names = tuple(metric_names())
    for line, obj in iter_jsonl(path, error, max_bytes=max_bytes, follow_symlinks=follow_symlinks, allow_nan=True):
        yield _fast_sample(obj, task, path, line, error, personas, memo, names) or parse_sample(
            obj, task, path, line, error, personas, memo=memo, names=names
        )


def read_generations(
    root: Path,
    samples: dict[str, str],
    *,
    error: type[TideBenchError] = DataError,
    max_bytes: int | None = None,
    follow_symlinks: bool = True,
    memo: DocMemo | None = None,
) -> list[Generation]:
    """All generations of the samples files listed in a manifest, checked for duplicates.

    ``max_bytes`` applies to each file. Paths are taken as given: callers that read a
    stranger's manifest confine them first (see :mod:`tide_bench.leaderboard.submission.validate`).
    ``memo`` (:class:`DocMemo`) skips re-checking the ``doc`` blocks of the read before; it
    then remembers this read's.
    """
    generations: list[Generation] = []
    seen: dict[str, str] = {}
    if memo is not None:
        memo.begin()
    for task, rel in sorted(samples.items()):
        path = root / rel
        for gen in iter_samples_file(
            path, task, error=error, max_bytes=max_bytes, follow_symlinks=follow_symlinks, memo=memo
        ):
            if gen.item_id in seen:
                raise error(
                    f"item {gen.item_id} appears twice (also in {seen[gen.item_id]})",
                    path=path,
                    line=gen.line,
                    field="doc.item_id",
                )
            seen[gen.item_id] = rel
            generations.append(gen)
    if memo is not None:
        memo.remember(generations)
    return generations
