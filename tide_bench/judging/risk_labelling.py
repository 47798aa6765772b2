"""``tide-bench data label-risk``: item-level risk labels for TIDE, made once, reply-free, cached.

Why: the board's risk gate needs to know which items are risk items, and how severe, before any
entry's reply is read (docs/leaderboard.md, "Safety first"). TIDE's risk prevalence is not
public and no labels ship with it, so this makes them with a judge: one call per item that sees
the conversation only (``judges/risk_label_v2.yaml``, which renders rubric v4's risk-cue kinds
and ladders), never a model's reply. Answers are cached by labeller version and item
content (``cache.sqlite`` beside the output; a rerun makes only the missing calls). An item the
judge refuses or its provider filters is left unlabelled with the reason (``unlabelled`` in the
file), so ``tide-bench data validate`` fails until a person labels it: a refusal is no label.

The output is a :mod:`tide_bench.data.risk_labels` file with ``labelled_by.kind = "judge"``
(the judge, its labeller version, the prompt's hash). It is a judge's labelling, "not yet
clinician-reviewed" on every board until a clinician signs it (``REVIEW_PROTOCOL.md``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.core.hashing import sha256_json, sha256_text
from tide_bench.core.jsonio import write_json
from tide_bench.core.provenance import utc_now
from tide_bench.core.resources import resource_dir
from tide_bench.data.risk_labels import FORMAT, GRADED, KINDS, LADDER, NONE, parse_label
from tide_bench.data.schema import TideItem
from tide_bench.data.sources import LoadedDataset
from tide_bench.judging.cache import JudgmentCache
from tide_bench.judging.capabilities import provider_class
from tide_bench.judging.config import JudgeConfig, PromptTemplate
from tide_bench.judging.outcome import CallOutcome
from tide_bench.judging.prompt import TOOL_NAME, fence
from tide_bench.judging.providers import make_provider
from tide_bench.judging.retry import FatalJudgeError, ItemFailure, call_with_retries, describe
from tide_bench.judging.rubric import load_rubric, rubric_path

LABELLER_FILE = "risk_label_v2.yaml"
LABELLER_RUBRIC = "v4"  # the rubric whose risk-cue section the labeller reads
CACHE_NAME = "risk_labels.cache.sqlite"
SCHEMA_RETRIES = 2


def label_schema() -> dict[str, Any]:
    """The labeller's answer: rationale first, then the kind and the severity (strict-mode JSON schema)."""
    properties = {
        "rationale": {"type": "string"},
        "kind": {"type": "string", "enum": list(KINDS)},
        "severity": {"type": "string", "enum": list(LADDER)},
    }
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _output_spec(provider: str) -> dict[str, Any]:
    """The labeller's answer, asked the way ``provider``'s protocol asks for structured output."""
    return provider_class(provider).output_spec(
        TOOL_NAME,
        "Submit the risk label of the client's messages: rationale, kind, severity.",
        "tide_risk_label",
        label_schema(),
    )


def labeller_config(judge: JudgeConfig) -> JudgeConfig:
    """``judge`` turned into the labeller: the labelling prompt (rendering rubric v4's risk cue) and schema."""
    raw = yaml.safe_load((resource_dir("judges") / LABELLER_FILE).read_text(encoding="utf-8"))
    rubric = load_rubric(rubric_path(LABELLER_RUBRIC))
    cue = rubric.render().split("## Risk cue\n", 1)[1].split("\n## ", 1)[0].strip()
    prompt = PromptTemplate(
        system=str(raw["system"]).replace("{risk_cue}", "Risk cue. " + cue),
        user=str(raw["user"]),
        reference_block="",
        decoding=dict(raw.get("decoding") or {}),
        expected_output_tokens=raw.get("expected_output_tokens"),
    )
    return dataclasses.replace(
        judge,
        prompt=prompt,
        decoding=dict(judge.decoding) | prompt.decoding,
        expected_output_tokens=int(prompt.expected_output_tokens or 80),
        extra=dict(judge.extra) | {"output_spec": _output_spec(judge.provider)},
    )


def labeller_version(config: JudgeConfig) -> str:
    """What can change a label: provider, model, prompt, schema and decoding."""
    return sha256_json(
        {
            "kind": "tide-bench-risk-labeller/2",
            "provider": config.provider,
            "model": config.model,
            "system": config.prompt.system,
            "user": config.prompt.user,
            "schema": label_schema(),
            "decoding": config.decoding,
        }
    )[:16]


def user_message(config: JudgeConfig, item: TideItem) -> str:
    lines = [
        f"{'Client' if m.get('role') == 'user' else 'Supporter'}: {fence(str(m.get('content', '')))}"
        for m in item.history
    ]
    history = "\n".join(lines) if lines else "(this is the client's first message)"
    return (
        config.prompt.user.replace("{history}", history)
        .replace("{client_utterance}", fence(item.client_utterance))
        .strip()
    )


def item_key(version: str, item: TideItem) -> str:
    """The cache key: the labeller and the conversation (no reply exists in a label call)."""
    return sha256_json(
        {"labeller": version, "item": item.item_id, "history": item.history, "client": item.client_utterance}
    )


def read_label(payload: Any) -> dict[str, str]:
    """A label answer, checked; raises ValueError with the reason (asked again, then unlabelled)."""
    if not isinstance(payload, dict):
        raise ValueError("the answer is not an object")
    kind, severity, rationale = payload.get("kind"), payload.get("severity"), payload.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise ValueError("'rationale' must be a non-empty string")
    if kind not in KINDS or severity not in LADDER:
        raise ValueError(f"unknown kind {kind!r} or severity {severity!r}")
    if severity not in GRADED.get(kind, (NONE,)):
        raise ValueError(
            f"severity {severity!r} contradicts kind {kind!r} (its ladder: {', '.join(GRADED.get(kind, (NONE,)))})"
        )
    return {"kind": str(kind), "severity": str(severity), "rationale": rationale.strip()[:1000]}


@dataclass
class LabelRun:
    out: Path
    n_items: int
    n_labelled: int
    unlabelled: dict[str, str]
    calls_made: int
    summary: dict[str, Any]


async def _label_one(provider: Any, config: JudgeConfig, item: TideItem) -> tuple[dict[str, Any], int]:
    """``(record, calls)``: a label, or an unlabelled record with the reason."""
    calls = 0
    reason = "no answer"
    for _ in range(SCHEMA_RETRIES + 1):
        try:
            outcome, tries = await call_with_retries(
                lambda: provider.rate(config.prompt.system, user_message(config, item)),
                max_retries=config.max_retries,
                base_s=config.backoff_base_s,
                cap_s=config.backoff_cap_s,
                retryable=provider.retryable,
            )
        except FatalJudgeError:
            raise
        except ItemFailure as exc:
            return {"status": "unscored", "unscored_kind": exc.kind, "reason": str(exc)}, calls + exc.attempts
        except Exception as exc:  # an answer the SDK could not handle costs this item, never the run
            return {"status": "unscored", "unscored_kind": "api_rejected", "reason": describe(exc)}, calls + 1
        calls += tries
        verdict = _settle(outcome)
        if verdict.get("retry"):
            reason = verdict["reason"]
            continue
        return verdict, calls
    return {"status": "unscored", "unscored_kind": "schema_violation", "reason": reason}, calls


def _settle(outcome: CallOutcome) -> dict[str, Any]:
    if outcome.rejected:
        return {"status": "unscored", "unscored_kind": "api_rejected", "reason": outcome.rejected}
    if outcome.refusal or outcome.filtered:
        kind = "refusal" if outcome.refusal else "content_filtered"
        return {"status": "unscored", "unscored_kind": kind, "reason": outcome.refusal or outcome.filtered}
    if outcome.malformed:
        return {"retry": True, "reason": outcome.malformed}
    try:
        return {"status": "scored", "label": read_label(outcome.payload), "served_model": outcome.served_model}
    except ValueError as exc:
        return {"retry": True, "reason": str(exc)}


async def _label_all(
    config: JudgeConfig,
    todo: list[tuple[TideItem, str]],
    cache: JudgmentCache,
    version: str,
    progress: Callable[[int, int], None] | None,
) -> tuple[dict[str, dict[str, Any]], int]:
    provider = make_provider(config)
    semaphore = asyncio.Semaphore(max(1, config.concurrency))
    results: dict[str, dict[str, Any]] = {}
    calls = 0

    async def worker(item: TideItem, key: str) -> None:
        nonlocal calls
        async with semaphore:
            record, made = await _label_one(provider, config, item)
        calls += made
        record |= {"item_id": item.item_id, "judge": {"version": version}}
        if record["status"] == "scored" or record.get("unscored_kind") in ("refusal", "content_filtered"):
            cache.put(key, record)
        results[key] = record
        if progress:
            progress(len(results), len(todo))

    try:
        async with asyncio.TaskGroup() as group:
            for item, key in todo:
                group.create_task(worker(item, key))
    except* FatalJudgeError as eg:
        raise eg.exceptions[0] from None
    finally:
        await provider.aclose()
    return results, calls


def label_risk(
    dataset: LoadedDataset,
    out: str | Path,
    judge: JudgeConfig,
    *,
    cache_path: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LabelRun:
    """Label every item of ``dataset`` (reply-free) and write the label file ``out``."""
    out = Path(out)
    if out.exists() and not out.is_file():
        raise ConfigError(f"--out {out} is not a file")
    config = labeller_config(judge)
    version = labeller_version(config)
    cache = JudgmentCache(Path(cache_path) if cache_path else out.with_name(CACHE_NAME))
    try:
        keyed = [(item, item_key(version, item)) for item in dataset.items]
        cached = cache.get_many(k for _, k in keyed)
        todo = [(i, k) for i, k in keyed if k not in cached]
        fresh, calls = asyncio.run(_label_all(config, todo, cache, version, progress)) if todo else ({}, 0)
    finally:
        cache.close()
    records = {**cached, **fresh}
    labels: dict[str, dict[str, str]] = {}
    unlabelled: dict[str, str] = {}
    for item, key in keyed:
        rec = records[key]
        if rec["status"] == "scored":
            label = {k: rec["label"][k] for k in ("kind", "severity")} | {"case": rec["label"]["rationale"]}
            parse_label(label, out, f"labels.{item.item_id}")  # the same checks the reader makes
            labels[item.item_id] = label
        else:
            unlabelled[item.item_id] = f"{rec.get('unscored_kind')}: {str(rec.get('reason'))[:300]}"
    served = sorted({str(r["served_model"]) for r in records.values() if r.get("served_model")})
    doc = {
        "_notice": "Risk labels made by a judge reading each conversation without any reply (tide-bench data "
        "label-risk). A judge's labels, NOT yet clinician-reviewed: see REVIEW_PROTOCOL.md of the risk supplement.",
        "format": FORMAT,
        "dataset_sha256": dataset.content_hash("all"),
        "data": dataset.provenance("all"),
        "labelled_by": {
            "kind": "judge",
            "judge": {"name": judge.name, "provider": judge.provider, "model": judge.model},
            "served_models": served,
            "labeller_version": version,
            "prompt_sha256": sha256_text(config.prompt.system + "\n" + config.prompt.user),
            "made_at": utc_now(),
        },
        "labels": labels,
        "unlabelled": unlabelled,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, doc)
    kinds: dict[str, int] = {}
    for label in labels.values():
        kinds[label["kind"]] = kinds.get(label["kind"], 0) + 1
    return LabelRun(out, len(keyed), len(labels), unlabelled, calls, {"by_kind": dict(sorted(kinds.items()))})
