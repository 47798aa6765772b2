"""Judge a run directory: plan (what is cached, what to call), call, cache, summarise.

Synchronous mode runs the calls concurrently on one asyncio loop, ``concurrency`` workers each
taking the next item; batch mode (Anthropic Message Batches, 50 % price) lives in
:mod:`.providers.anthropic_batch`. Both settle each answer with the same rule
(:func:`.outcome.settle`), produce the same records and write the same outputs:

``judgments.jsonl``      one line per item of the run, scored or unscored (see judgment.py)
``judge_summary.json``   means with 95 % CIs, unscored counts and reasons, safety, cost,
                         the run folder and its run.json hash, the served models
``judge_config.json``    the resolved judge configuration, its version and the endpoint used
``severe_samples.jsonl`` the k calls of each item labelled severe and their majority
                         (:mod:`.severe_samples`; calls 2..k have keys of their own, cached)
``cache.sqlite``         the content-addressed cache (unless ``--cache`` points elsewhere)

The outputs are written at the end, atomically; the cache is written as each judgment
completes, so an interrupted run loses no paid work and the next run makes only the calls
that are missing. An ``out`` holding another run's or configuration's judgments is refused
unless ``overwrite``; an uncollected batch of another configuration blocks the run (see
:class:`.providers.anthropic_batch.BatchState`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.jsonio import iter_jsonl, write_json, write_jsonl
from tide_bench.generation.run_dir import Generation, RunDirectory, load_run
from tide_bench.judging.cache import JudgmentCache, judgment_key
from tide_bench.judging.capabilities import capabilities
from tide_bench.judging.config import JudgeConfig, nearest_priced_model
from tide_bench.judging.files import CACHE_FILE, CONFIG_FILE, JUDGMENTS_FILE, SEVERE_SAMPLES_FILE, SUMMARY_FILE
from tide_bench.judging.given_labels import with_item_labels
from tide_bench.judging.judgment import make_record, served_model_warnings
from tide_bench.judging.outcome import Retry, Unscored, settle
from tide_bench.judging.plan import Plan, make_plan
from tide_bench.judging.prompt import user_text
from tide_bench.judging.providers import make_provider
from tide_bench.judging.providers.anthropic_batch import STATE_FILE, BatchState
from tide_bench.judging.retry import FatalJudgeError, ItemFailure, call_with_retries, describe
from tide_bench.judging.session import JudgeOptions, JudgeSession, Spend, Tally
from tide_bench.judging.severe_samples import MAX_SAMPLES, sample_lines, severe_items
from tide_bench.judging.summary import summarize_judgments

__all__ = ["JudgeOptions", "JudgeResult", "dry_run", "judge_run"]


class JudgingInterrupted(KeyboardInterrupt):
    """Ctrl-C during judging: how many of the run's judgments are saved in the cache (a rerun of
    the same command judges only the others)."""

    def __init__(self, saved: int, total: int, cache: Path) -> None:
        super().__init__(f"{saved} of {total} judgments saved")
        self.saved, self.total, self.cache = saved, total, cache


@dataclass
class JudgeResult:
    out: Path
    summary: dict[str, Any]
    records: list[dict[str, Any]]
    calls_made: int
    warnings: list[str] = field(default_factory=list)  # served-model mismatches, skipped pre-flight, abandoned batches


def default_cache_path(out: Path, options: JudgeOptions) -> Path:
    return Path(options.cache_path) if options.cache_path else Path(out) / CACHE_FILE


def _as_run(run: str | Path | RunDirectory) -> RunDirectory:
    return run if isinstance(run, RunDirectory) else load_run(run)


def dry_run(
    run: str | Path | RunDirectory, out: str | Path, config: JudgeConfig, options: JudgeOptions
) -> dict[str, Any]:
    """Calls, tokens and dollars this run would cost (nothing is called, no key needed).
    ``run`` is a run directory, or a :class:`RunDirectory` such as ``probes.probe_run()``."""
    cache_path = default_cache_path(Path(out), options)
    run = _as_run(run)
    config = with_item_labels(config, run, options.risk_labels)  # rubric v4: the label block is priced too
    cache = JudgmentCache(cache_path) if cache_path.exists() else None
    try:
        return _plan(run, config, cache, options).estimate(config).as_dict()
    finally:
        if cache is not None:
            cache.close()


def _plan(run: RunDirectory, config: JudgeConfig, cache: JudgmentCache | None, options: JudgeOptions) -> Plan:
    """The run's plan, with its severe risk items judged ``options.severe_samples`` times."""
    severe = severe_items(run.manifest.get("data"), (g.item_id for g in run.generations), options.risk_labels)
    return make_plan(run, config, cache, options.retry_unscored, severe, options.severe_samples)


def _write_severe_samples(out: Path, plan: Plan, records_by_key: dict[str, dict[str, Any]]) -> None:
    """``severe_samples.jsonl``: each severe item's k votes and majority (none: no file)."""
    path = out / SEVERE_SAMPLES_FILE
    primaries = [records_by_key[key] for _, key in plan.keyed if key in plan.severe]
    if primaries:
        write_jsonl(path, sample_lines(primaries, records_by_key, plan.k))
    elif path.is_file():
        path.unlink()  # an earlier run's votes would describe calls this run did not ask for


def check_budget(config: JudgeConfig, max_cost: float | None) -> None:
    """A budget needs prices: refuse ``--max-cost`` rather than silently ignore it."""
    if max_cost is None:
        return
    if not max_cost >= 0:
        raise ConfigError(f"--max-cost must be a non-negative number of US dollars, got {max_cost}", field="max_cost")
    if config.prices is None:
        near = nearest_priced_model(config.model)
        similar = f" (judges/prices.yaml has {near!r}; if this is a snapshot of it, use its prices)" if near else ""
        raise ConfigError(
            f"--max-cost cannot be enforced: the judge model {config.model!r} has no price in "
            f"judges/prices.yaml{similar}",
            hint="pass --price-in and --price-out (USD per million tokens), or add a row to judges/prices.yaml",
            field="max_cost",
        )


def check_judge_options(config: JudgeConfig, options: JudgeOptions) -> None:
    """What :func:`judge_run` refuses before any work; a study also checks it when its file is read."""
    if not 1 <= options.severe_samples <= MAX_SAMPLES:
        raise ConfigError(
            f"--severe-samples must be 1..{MAX_SAMPLES} calls per severe item, got {options.severe_samples}",
            field="severe_samples",
        )
    if options.mode not in ("sync", "batch"):
        raise ConfigError(f"unknown mode {options.mode!r}: choose sync or batch", field="mode")
    if options.mode == "batch" and not capabilities(config.provider).supports_batch:
        raise ConfigError(
            f"batch mode is not implemented for the {config.provider} provider (Anthropic Message Batches are)",
            hint="use --mode sync with this judge",
            field="mode",
        )
    check_budget(config, options.max_cost)


def _check_out(out: Path, run: RunDirectory, config: JudgeConfig, overwrite: bool) -> None:
    """Refuse to replace another run's or configuration's judgments (their keys differ)."""
    path = out / JUDGMENTS_FILE
    if overwrite or not path.is_file():
        return
    try:
        existing = [rec for _, rec in iter_jsonl(path, DataError)]
    except DataError as exc:
        raise ConfigError(
            f"{out} holds a judgments file that cannot be read ({exc.detail})",
            path=path,
            hint="choose another --out, or pass --overwrite to replace it",
        ) from None
    keys = {rec.get("key") if isinstance(rec, dict) else None for rec in existing}
    if keys == {judgment_key(config.version, g) for g in run.generations}:
        return
    versions = sorted({str((rec.get("judge") or {}).get("version")) for rec in existing if isinstance(rec, dict)})
    what = "another judge configuration" if config.version not in versions else "another run (other items or replies)"
    raise ConfigError(
        f"{out} already holds judgments of {what}: {len(existing)} judgment(s), configuration "
        f"{', '.join(versions) or '?'}",
        hint="choose another --out, or pass --overwrite to replace them (the cache is kept: nothing paid is lost)",
    )


async def _judge_one(session: JudgeSession, gen: Generation, key: str) -> dict[str, Any]:
    config, spend, provider = session.config, session.spend, session.provider
    tally = Tally()
    last = Retry("malformed_output", "no answer")
    for _ in range(config.schema_retries + 1):
        if not spend.may_start():
            return session.record(
                gen,
                key,
                tally,
                Unscored("budget_exhausted", f"--max-cost {spend.max_cost} reached before this item"),
                mode="sync",
            )
        spend.in_flight += 1
        try:
            outcome, tries = await call_with_retries(
                lambda: provider.rate(session.system, user_text(config, gen)),  # a fresh reply tag per call
                max_retries=config.max_retries,
                base_s=config.backoff_base_s,
                cap_s=config.backoff_cap_s,
                on_retry=session.retried,
                retryable=provider.retryable,
            )
        except FatalJudgeError:
            raise
        except ItemFailure as exc:
            tally.attempts += exc.attempts
            return session.record(gen, key, tally, Unscored(exc.kind, str(exc)), mode="sync")
        except Exception as exc:  # an answer the SDK could not handle: it costs this item, never the run
            tally.attempts += 1
            return session.record(
                gen, key, tally, Unscored("api_rejected", f"unexpected answer: {describe(exc)}"), mode="sync"
            )
        finally:
            spend.in_flight -= 1
        tally.add(outcome, tries)
        spend.charge(outcome)
        verdict = settle(outcome, config.rubric)
        if isinstance(verdict, Retry):
            last = verdict
            continue
        return session.record(gen, key, tally, verdict, mode="sync")
    return session.record(
        gen, key, tally, Unscored(last.kind, f"{last.reason} (after {config.schema_retries + 1} tries)"), mode="sync"
    )


async def _judge_sync(session: JudgeSession, plan: Plan) -> list[dict[str, Any]]:
    """``concurrency`` workers take the next item from one shared iterator: as many calls in
    flight as allowed, and a few coroutines however long the plan (100,000 items are not
    100,000 waiting tasks)."""
    results: list[dict[str, Any]] = []
    unscored = 0
    total = len(plan.todo)
    todo = iter(plan.todo)

    async def worker() -> None:
        nonlocal unscored
        for gen, key in todo:  # one loop thread: taking the next item cannot race
            rec = await _judge_one(session, gen, key)
            session.keep(key, rec)
            results.append(rec)
            unscored += rec["status"] == "unscored"
            session.progress(len(results), unscored, total)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(max(1, session.config.concurrency), total)):
                group.create_task(worker())
    except* FatalJudgeError as eg:
        raise eg.exceptions[0] from None
    return results


async def _execute(session: JudgeSession, plan: Plan, warnings: list[str]) -> list[dict[str, Any]]:
    session.progress(0, 0, len(plan.todo))  # the bar shows from the start, not after the preflight's round trip
    try:
        if session.options.preflight:
            note = await session.provider.preflight()
            if note:
                warnings.append(note)
                session.event(note)
        if session.options.mode == "batch":
            return await session.provider.judge_batch(session, plan)
        return await _judge_sync(session, plan)
    finally:
        await session.provider.aclose()


def judge_run(
    run_dir: str | Path | RunDirectory, out: str | Path, config: JudgeConfig, options: JudgeOptions | None = None
) -> JudgeResult:
    """Judge every generation of a run directory and write the judge directory ``out``."""
    options = options or JudgeOptions()
    check_judge_options(config, options)
    run = _as_run(run_dir)
    config = with_item_labels(config, run, options.risk_labels)  # rubric v4: "What this message calls for"
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a folder")
    provider = make_provider(config)  # a missing key fails here, before any work
    _check_out(out, run, config, options.overwrite)
    abandoned = BatchState(out / STATE_FILE).guard(config.version, options.mode, options.abandon_batch)
    warnings = [
        f"abandoned uncollected batch {b} (--abandon-batch); it stays listed in {STATE_FILE}" for b in abandoned
    ]
    out.mkdir(parents=True, exist_ok=True)
    cache = JudgmentCache(default_cache_path(out, options))
    try:
        plan = _plan(run, config, cache, options)
        spend = Spend(config, options.max_cost, plan.estimate(config).per_call_cost(), batch=options.mode == "batch")
        session = JudgeSession(config, provider, cache, options, spend, out)
        new: list[dict[str, Any]] = []
        if plan.reused and plan.todo:
            session.event(
                f"{len(plan.reused)} of {len(plan.keyed)} item(s) already judged (from the cache {cache.path}); "
                f"{len(plan.todo)} to judge"
            )
        if plan.todo:
            try:
                new = asyncio.run(_execute(session, plan, warnings))
            except KeyboardInterrupt:
                raise JudgingInterrupted(len(plan.reused) + session.kept, len(plan.keyed), cache.path) from None
        records_by_key = {**plan.reused, **{r["key"]: r for r in new}}
        for gen, key in plan.empty:
            records_by_key[key] = make_record(
                gen, config, key, kind="empty_reply", reason="the model produced an empty reply"
            )
        records = [records_by_key[key] for _, key in plan.keyed]
        summary = summarize_judgments(
            records, run, config, mode=options.mode, calls_made=spend.usage.calls, new_usage=spend.usage
        )
        warnings += served_model_warnings(records, config.model)
        write_json(out / CONFIG_FILE, config.snapshot() | {"base_url": provider.public_endpoint})
        write_jsonl(out / JUDGMENTS_FILE, records)
        _write_severe_samples(out, plan, records_by_key)
        write_json(out / SUMMARY_FILE, summary)
        return JudgeResult(out, summary, records, spend.usage.calls, warnings)
    finally:
        cache.close()
