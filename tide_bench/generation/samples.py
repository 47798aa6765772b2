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
from typing import Annotated, Any

from annotated_types import Ge, MaxLen
from pydantic import AliasPath, BeforeValidator, ConfigDict, Field, Strict, TypeAdapter, ValidationInfo, model_validator

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.core.jsonio import iter_jsonl, loads_strict
from tide_bench.core.records import Int, NonBlank, Str, load, null_as, refusal, type_name
from tide_bench.data.schema import TideItem
from tide_bench.metrics.table import metric_names

TASK_PREFIX = ("tide_empathy", "ed_empathy")  # str.startswith takes the tuple
TASK_PATTERN = "tide_empathy* or ed_empathy*"  # how messages name them
ROLES = ("user", "assistant")


def _doc(name: str, **default: Any) -> Any:
    """Where a field is on a samples line: under ``doc`` (the TIDE item), by this name."""
    return Field(validation_alias=AliasPath("doc", name), **default)


def _message(value: Any) -> Any:
    if not isinstance(value, dict) or value.get("role") not in ROLES or not isinstance(value.get("content"), str):
        raise refusal("must be an object with role 'user' or 'assistant' and a string content")
    return {"role": value["role"], "content": value["content"]}


NullAsEmpty = null_as(str)  # a field a line may leave out or null: read as ""
Message = Annotated[dict[str, str], BeforeValidator(_message)]


@dataclass(frozen=True)
class Generation:
    """One generated reply with the TIDE item it answers and its reference metrics.

    Declared once: built by name (the judge's probes, the study), or read from one line of an
    lm-eval samples file by :func:`iter_samples_file`, where the item's fields are under
    ``doc`` (their paths below), the reply is ``filtered_resps[0]`` (or ``resps[0][0]``), the
    metrics are the line's own keys, and ``task``, ``file`` and ``line`` say where it was read.
    """

    __pydantic_config__ = ConfigDict(validate_by_name=True, validate_by_alias=True)

    item_id: Annotated[NonBlank, MaxLen(300), _doc("item_id")]
    task: Str
    persona_id: Annotated[NonBlank, MaxLen(200), _doc("persona_id")]
    conversation_id: Annotated[NonBlank, MaxLen(200), _doc("conversation_id")]
    turn: Annotated[Int, Ge(1), _doc("turn")]
    scenario: Annotated[Str, NullAsEmpty, _doc("scenario", default="")]
    split: Annotated[Str, _doc("split")]
    history: Annotated[list[Message], null_as(list), _doc("history", default=[])]
    client_utterance: Annotated[Str, _doc("client_utterance")]
    reference_reply: Annotated[Str, _doc("reference_reply")]
    reply: Str
    prompt: Str
    persona: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Annotated[float, Strict()]] = field(default_factory=dict)  # NaN: not defined
    split_sha256: Annotated[Str, NullAsEmpty, _doc("split_sha256", default="")] = ""
    tide_source: Annotated[Str, NullAsEmpty, _doc("tide_source", default="")] = ""
    file: str = ""
    line: int = 0

    @model_validator(mode="before")
    @classmethod
    def _from_samples_line(cls, data: Any, info: ValidationInfo) -> Any:
        """A samples line's reply, prompt, metrics and persona, and where it was read (the
        reader's ``context``), added to the line (which is the reader's own)."""
        read = info.context
        if not read or type(data) is not dict:
            return data
        doc = data.get("doc")
        if type(doc) is not dict:
            raise refusal("is missing" if "doc" not in data else f"must be an object, got {type_name(doc)}", "doc")
        reply = _reply(data)
        if not isinstance(reply, str):
            raise refusal("holds no generated reply (a string in filtered_resps[0] or resps[0][0])", "filtered_resps")
        data["reply"], data["prompt"], data["persona"] = reply, _prompt(data), _persona(doc, read["personas"])
        data["metrics"] = {name: data[name] for name in read["names"] if data.get(name) is not None}
        data["task"], data["file"], data["line"] = read["task"], read["file"], read["line"]
        return data

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


SAMPLE = TypeAdapter(Generation)


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


def _persona(doc: dict[str, Any], seen: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The persona of ``doc["persona_json"]``, parsed once per distinct text in a file (a
    persona's 20 conversations share it); the dict may be shared: read it, never change it."""
    text = doc.get("persona_json")
    if text is not None and not isinstance(text, str):
        raise refusal(f"must be a string or null, got {type_name(text)}", "doc.persona_json")
    if not text:
        return {}
    if text in seen:
        return seen[text]
    try:
        persona = loads_strict(text)
    except ValueError:
        raise refusal("is not valid JSON", "doc.persona_json") from None
    if not isinstance(persona, dict):
        raise refusal("must encode a JSON object", "doc.persona_json")
    seen[text] = persona
    return persona


def _relocate(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """A metric's error is at the line's own key (the record gathers them under ``metrics``)."""
    return loc[1:] if loc[:1] == ("metrics",) and len(loc) > 1 else loc


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
    read: dict[str, Any] = {"task": task, "file": str(path), "personas": {}, "names": tuple(metric_names())}
    for line, obj in iter_jsonl(path, error, max_bytes=max_bytes, follow_symlinks=follow_symlinks, allow_nan=True):
        read["line"] = line
        yield load(SAMPLE, obj, path=path, line=line, error=error, context=read, relocate=_relocate)


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
    stranger's manifest confine them first (see :mod:`tide_bench.leaderboard.submission.validate`).
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
