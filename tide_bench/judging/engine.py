"""Judge a run directory: plan (what is cached, what to call), call, cache, summarise.

Synchronous mode runs the calls concurrently on one asyncio loop with a bounded semaphore;
batch mode (Anthropic Message Batches, 50 % price) lives in :mod:`.batch`. Both produce the
same records and write the same outputs:

``judgments.jsonl``      one line per item of the run, scored or unscored (see records.py)
``judge_summary.json``   means with 95 % CIs, unscored counts and reasons, safety, cost
``judge_config.json``    the resolved judge configuration and its version
``cache.sqlite``         the content-addressed cache (unless ``--cache`` points elsewhere)

The outputs are written at the end, atomically; the cache is written as each judgment
completes, so an interrupted run loses no paid work and the next run makes only the calls
that are missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.core.jsonio import write_json, write_jsonl
from tide_bench.generation.run_dir import Generation, RunDirectory, load_run
from tide_bench.judging.cache import JudgmentCache, is_cacheable, judgment_key
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.estimate import Estimate, estimate_tokens
from tide_bench.judging.parse import SchemaViolation, parse_rating
from tide_bench.judging.progress import Progress
from tide_bench.judging.prompt import system_text, user_text
from tide_bench.judging.providers import Provider, make_provider
from tide_bench.judging.records import make_record
from tide_bench.judging.retry import FatalJudgeError, RequestRejected, TransientFailure, call_with_retries
from tide_bench.judging.summary import summarize_judgments
from tide_bench.judging.usage import Usage

JUDGMENTS = "judgments.jsonl"
SUMMARY = "judge_summary.json"
CONFIG_SNAPSHOT = "judge_config.json"
CACHE_NAME = "cache.sqlite"


@dataclass
class JudgeOptions:
    mode: str = "sync"  # "sync" | "batch"
    retry_unscored: bool = False
    max_cost: float | None = None
    cache_path: Path | None = None
    poll_interval_s: float = 30.0
    on_progress: Callable[[Progress], None] | None = None
    on_event: Callable[[str], None] | None = None


@dataclass
class JudgeResult:
    out: Path
    summary: dict[str, Any]
    records: list[dict[str, Any]]
    calls_made: int


@dataclass
class Plan:
    run: RunDirectory
    keyed: list[tuple[Generation, str]]
    reused: dict[str, dict[str, Any]] = field(default_factory=dict)
    todo: list[tuple[Generation, str]] = field(default_factory=list)
    empty: list[tuple[Generation, str]] = field(default_factory=list)

    def estimate(self, config: JudgeConfig) -> Estimate:
        return Estimate(
            n_items=len(self.keyed),
            n_cached=len(self.reused),
            n_calls=len(self.todo),
            system_tokens=estimate_tokens(system_text(config)),
            user_tokens=sum(estimate_tokens(user_text(config, g)) for g, _ in self.todo),
            output_tokens=config.expected_output_tokens * len(self.todo),
            config=config,
        )


def make_plan(run: RunDirectory, config: JudgeConfig, cache: JudgmentCache | None, retry_unscored: bool) -> Plan:
    plan = Plan(run=run, keyed=[(g, judgment_key(config.version, g)) for g in run.generations])
    cached = cache.get_many(k for _, k in plan.keyed) if cache is not None else {}
    for gen, key in plan.keyed:
        hit = cached.get(key)
        if not gen.reply.strip():
            plan.empty.append((gen, key))
        elif hit is not None and not (retry_unscored and hit["status"] == "unscored"):
            plan.reused[key] = hit | {"cached": True}
        else:
            plan.todo.append((gen, key))
    return plan


def default_cache_path(out: Path, options: JudgeOptions) -> Path:
    return Path(options.cache_path) if options.cache_path else Path(out) / CACHE_NAME


def dry_run(run_dir: str | Path, out: str | Path, config: JudgeConfig, options: JudgeOptions) -> dict[str, Any]:
    """Calls, tokens and dollars this run would cost (nothing is called, no key needed)."""
    run = load_run(run_dir)
    cache_path = default_cache_path(Path(out), options)
    cache = JudgmentCache(cache_path) if cache_path.exists() else None
    try:
        return make_plan(run, config, cache, options.retry_unscored).estimate(config).as_dict()
    finally:
        if cache is not None:
            cache.close()


class _Spend:
    """Running totals, and the budget check made before every new call."""

    def __init__(self, config: JudgeConfig, max_cost: float | None, per_call: float, batch: bool) -> None:
        self.usage = Usage()
        self.config, self.max_cost, self.per_call, self.batch = config, max_cost, per_call, batch
        self.in_flight = 0

    @property
    def spent(self) -> float | None:
        return self.usage.cost(self.config.prices, batch=self.batch)

    def may_start(self) -> bool:
        if self.max_cost is None:
            return True
        spent = self.spent or 0.0
        return spent + (self.in_flight + 1) * self.per_call <= self.max_cost


async def _judge_one(provider: Provider, config: JudgeConfig, gen: Generation, key: str, system: str, spend: _Spend) -> dict[str, Any]:
    usage, attempts = Usage(), 0
    problem: tuple[str, str] = ("malformed_output", "no answer")
    user = user_text(config, gen)

    def record(**kw: Any) -> dict[str, Any]:
        return make_record(gen, config, key, usage=usage, attempts=attempts, **kw)

    for _ in range(config.schema_retries + 1):
        if not spend.may_start():
            return record(kind="budget_exhausted", reason=f"--max-cost {spend.max_cost} reached before this item")
        spend.in_flight += 1
        try:
            outcome, tries = await call_with_retries(
                lambda: provider.rate(system, user),
                max_retries=config.max_retries,
                base_s=config.backoff_base_s,
                cap_s=config.backoff_cap_s,
            )
        except RequestRejected as exc:
            return record(kind="api_rejected", reason=str(exc))
        except TransientFailure as exc:
            return record(kind="transient_failure", reason=str(exc))
        finally:
            spend.in_flight -= 1
        attempts += tries
        usage.add(outcome.usage)
        spend.usage.add(outcome.usage)
        if outcome.refusal:
            return record(kind="refusal", reason=outcome.refusal)
        if outcome.filtered:
            return record(kind="content_filtered", reason=outcome.filtered)
        if outcome.malformed:
            problem = ("malformed_output", outcome.malformed)
            continue
        try:
            return record(rating=parse_rating(outcome.payload, config.rubric))
        except SchemaViolation as exc:
            problem = ("schema_violation", str(exc))
    return record(kind=problem[0], reason=f"{problem[1]} (after {config.schema_retries + 1} tries)")


async def _judge_sync(plan: Plan, config: JudgeConfig, provider: Provider, cache: JudgmentCache, options: JudgeOptions, spend: _Spend) -> list[dict[str, Any]]:
    system = system_text(config)
    semaphore = asyncio.Semaphore(max(1, config.concurrency))
    results: list[dict[str, Any]] = []
    total = len(plan.todo)

    async def worker(gen: Generation, key: str) -> None:
        async with semaphore:
            rec = await _judge_one(provider, config, gen, key, system, spend)
        if is_cacheable(rec):
            cache.put(key, rec)
        results.append(rec)
        if options.on_progress:
            options.on_progress(Progress(len(results), total, sum(r["status"] == "unscored" for r in results), spend.spent))

    try:
        async with asyncio.TaskGroup() as group:
            for gen, key in plan.todo:
                group.create_task(worker(gen, key))
    except* FatalJudgeError as eg:
        raise eg.exceptions[0] from None
    return results


def judge_run(run_dir: str | Path | RunDirectory, out: str | Path, config: JudgeConfig, options: JudgeOptions | None = None) -> JudgeResult:
    """Judge every generation of a run directory and write the judge directory ``out``."""
    options = options or JudgeOptions()
    if options.mode not in ("sync", "batch"):
        raise ConfigError(f"unknown mode {options.mode!r}: choose sync or batch")
    if options.mode == "batch" and config.provider != "anthropic":
        raise ConfigError("batch mode is implemented for Anthropic Message Batches only", hint="use --mode sync with this judge")
    run = run_dir if isinstance(run_dir, RunDirectory) else load_run(run_dir)
    out = Path(out)
    provider = make_provider(config)  # a missing key fails here, before any work
    out.mkdir(parents=True, exist_ok=True)
    cache = JudgmentCache(default_cache_path(out, options))
    try:
        plan = make_plan(run, config, cache, options.retry_unscored)
        estimate = plan.estimate(config)
        spend = _Spend(config, options.max_cost, estimate.per_call_cost(), batch=options.mode == "batch")
        new: list[dict[str, Any]] = []
        if plan.todo:
            new = asyncio.run(_execute(plan, config, provider, cache, options, spend, out))
        records_by_key = {**plan.reused, **{r["key"]: r for r in new}}
        for gen, key in plan.empty:
            records_by_key[key] = make_record(gen, config, key, kind="empty_reply", reason="the model produced an empty reply")
        records = [records_by_key[key] for _, key in plan.keyed]
        summary = summarize_judgments(records, run, config, mode=options.mode, calls_made=spend.usage.calls, new_usage=spend.usage)
        write_json(out / CONFIG_SNAPSHOT, config.snapshot())
        write_jsonl(out / JUDGMENTS, records)
        write_json(out / SUMMARY, summary)
        return JudgeResult(out, summary, records, spend.usage.calls)
    finally:
        cache.close()


async def _execute(plan: Plan, config: JudgeConfig, provider: Provider, cache: JudgmentCache, options: JudgeOptions, spend: _Spend, out: Path) -> list[dict[str, Any]]:
    try:
        await provider.preflight()
        if options.mode == "batch":
            from tide_bench.judging.batch import judge_batch

            return await judge_batch(plan, config, provider, cache, options, spend, out)
        return await _judge_sync(plan, config, provider, cache, options, spend)
    finally:
        await provider.aclose()
