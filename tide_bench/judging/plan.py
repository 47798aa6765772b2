"""What a judge run will do before it calls anyone: which items are cached, which are empty
replies (unscored without a call), which need a call, and what those calls will cost.

Both the synchronous engine (:mod:`.engine`) and the Anthropic batch provider
(:mod:`.providers.anthropic_batch`) execute a :class:`Plan`; the dry run prices one. It lives
apart from the engine so that the batch provider can take a plan without importing the engine
that calls it.

Under rubric v4 a cached judgment is reused only when it was made with the label the item is
shown now (its ``risk_label``: the kind, severity and hash of the label text): the cache key names
the judge and the reply, and an edited label makes a new judgment, not a stale one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tide_bench.generation.run_dir import Generation, RunDirectory
from tide_bench.judging.answer_size import typical_output_tokens
from tide_bench.judging.cache import JudgmentCache, judgment_key
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.estimate import CostEstimate, estimate_tokens
from tide_bench.judging.given_labels import label_record
from tide_bench.judging.prompt import output_spec, system_text, user_text
from tide_bench.judging.severe_samples import sample_key

__all__ = ["MIN_MEASURED", "Plan", "make_plan", "output_tokens_per_call"]
MIN_MEASURED = 20  # cached calls before their mean output tokens replace the derived estimate


@dataclass
class Plan:
    """``keyed``: every item and its judgment key; ``severe``: the keys of the items judged ``k``
    times, whose calls 2..k are in ``samples`` (key -> the item's own key) and, where cached, in
    ``reused`` like any call (:mod:`.severe_samples`)."""

    run: RunDirectory
    keyed: list[tuple[Generation, str]]
    reused: dict[str, dict[str, Any]] = field(default_factory=dict)
    todo: list[tuple[Generation, str]] = field(default_factory=list)
    empty: list[tuple[Generation, str]] = field(default_factory=list)
    severe: set[str] = field(default_factory=set)
    samples: dict[str, str] = field(default_factory=dict)
    k: int = 1

    def estimate(self, config: JudgeConfig) -> CostEstimate:
        output, method, note = output_tokens_per_call(config, self.reused.values())
        return CostEstimate(
            severe_items=len(self.severe),
            severe_k=self.k,
            sample_calls=sum(key in self.samples for _, key in self.todo),
            n_items=len(self.keyed),
            n_cached=len(self.reused) - sum(key in self.samples for key in self.reused),
            n_calls=len(self.todo),
            system_tokens=estimate_tokens(system_text(config)),
            tool_tokens=estimate_tokens(json.dumps(output_spec(config))),
            user_tokens=sum(estimate_tokens(user_text(config, g)) for g, _ in self.todo),
            output_tokens=output * len(self.todo),
            config=config,
            output_method=method,
            output_note=note,
        )


def output_tokens_per_call(config: JudgeConfig, judged: Iterable[dict[str, Any]]) -> tuple[int, str, str]:
    """Output tokens one call will produce, how that was found, and the note the dry run prints:
    measured on this configuration's judgments already made (at least :data:`MIN_MEASURED`
    calls), else the judge config's own figure, else derived from the rubric's output schema."""
    calls = tokens = 0
    for record in judged:
        usage = record.get("usage") or {}
        if record.get("status") == "scored" and usage.get("output_tokens", 0) > 0 and usage.get("calls", 0) > 0:
            calls, tokens = calls + int(usage["calls"]), tokens + int(usage["output_tokens"])
    if calls >= MIN_MEASURED:
        return round(tokens / calls), "measured", f"measured: the mean of {calls} calls already judged (cache)"
    if config.expected_output_tokens:
        return config.expected_output_tokens, "configured", "as the judge configuration states (expected_output_tokens)"
    derived = typical_output_tokens(output_spec(config), config.prompt.typical_answer, config.rubric.render())
    return (
        derived,
        "derived",
        "derived from the rubric's output schema at the prompt's typical lengths (typical_answer)",
    )


def make_plan(
    run: RunDirectory,
    config: JudgeConfig,
    cache: JudgmentCache | None,
    retry_unscored: bool,
    severe: Iterable[str] = (),
    k: int = 1,
) -> Plan:
    """What to call: every item once, and the items ``severe`` (ids) ``k`` times in all (calls 2..k
    keyed by :func:`.severe_samples.sample_key`); what the cache holds is reused, an empty reply
    is never sent."""
    plan = Plan(run=run, keyed=[(g, judgment_key(config.version, g)) for g in run.generations], k=k)
    wanted = set(severe) if k > 1 else set()
    calls = list(plan.keyed)
    for gen, key in plan.keyed:
        if gen.item_id in wanted and gen.reply.strip():
            plan.severe.add(key)
            for s in range(2, k + 1):
                plan.samples[sample_key(key, s)] = key
                calls.append((gen, sample_key(key, s)))
    cached = cache.get_many(key for _, key in calls) if cache is not None else {}
    for gen, key in calls:
        hit = cached.get(key)
        if not gen.reply.strip():
            plan.empty.append((gen, key))
        elif (
            hit is not None
            and not (retry_unscored and hit["status"] == "unscored")
            and (not config.prompt.label_block or hit.get("risk_label") == label_record(config, gen))
        ):
            plan.reused[key] = {"served_model": None, **hit, "cached": True}
        else:
            plan.todo.append((gen, key))
    return plan
