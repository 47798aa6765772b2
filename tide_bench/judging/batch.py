"""Anthropic Message Batches: half price, asynchronous, resumable.

1. Build one request per item still to judge (``custom_id`` = the cache key).
2. Submit, and write the batch id to ``batch_state.json`` before doing anything else.
3. Poll until the batch has ended; stream its results.
4. Each result goes through the same interpretation as a synchronous call; final outcomes
   are cached at once. Errored, expired or cancelled requests, and malformed outputs, are
   re-submitted in a new batch with only those items, up to the retry limits.

An interrupted run (Ctrl-C, ``kill -9``, a closed laptop) is resumed by running the same
command again: batches in the state file that were not collected are polled and collected,
never submitted twice. OpenAI's Batch API is not implemented (sync mode works for OpenAI).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from tide_bench.core.jsonio import read_json, write_json
from tide_bench.core.provenance import utc_now
from tide_bench.judging.cache import JudgmentCache, is_cacheable
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.parse import SchemaViolation, parse_rating
from tide_bench.judging.progress import Progress
from tide_bench.judging.prompt import system_text, user_text
from tide_bench.judging.providers.anthropic_api import AnthropicProvider, interpret_message
from tide_bench.judging.records import make_record
from tide_bench.judging.retry import call_with_retries
from tide_bench.judging.usage import Usage

STATE_FILE = "batch_state.json"


class _BatchJob:
    def __init__(self, plan: Any, config: JudgeConfig, provider: AnthropicProvider, cache: JudgmentCache, options: Any, spend: Any, out: Path) -> None:
        self.config, self.provider, self.cache, self.options, self.spend = config, provider, cache, options, spend
        self.client = provider.client
        self.gens = {key: gen for gen, key in plan.todo}
        self.final: dict[str, dict[str, Any]] = {}
        self.usage: dict[str, Usage] = {k: Usage() for k in self.gens}
        self.tries: Counter[str] = Counter()
        self.problem: dict[str, tuple[str, str]] = {}
        self.max_submissions = max(config.max_retries, config.schema_retries) + 1
        self.state_path = out / STATE_FILE
        self.state = self._load_state()
        self.system = system_text(config)

    # ----------------------------------------------------------------- state
    def _load_state(self) -> dict[str, Any]:
        if self.state_path.is_file():
            state = read_json(self.state_path)
            if state.get("judge_version") == self.config.version:
                return state
        return {"judge_version": self.config.version, "batches": []}

    def _save_state(self) -> None:
        write_json(self.state_path, self.state)

    def _event(self, text: str) -> None:
        if self.options.on_event:
            self.options.on_event(text)

    async def _api(self, fn: Any) -> Any:
        result, _ = await call_with_retries(fn, max_retries=self.config.max_retries, base_s=self.config.backoff_base_s, cap_s=self.config.backoff_cap_s)
        return result

    # ----------------------------------------------------------------- outcome handling
    def _finish(self, key: str, **kw: Any) -> None:
        rec = make_record(self.gens[key], self.config, key, usage=self.usage[key], attempts=self.tries[key], mode="batch", **kw)
        if is_cacheable(rec):
            self.cache.put(key, rec)
        self.final[key] = rec

    def _take(self, key: str, result: Any) -> None:
        kind = getattr(result, "type", None)
        if kind != "succeeded":
            error = getattr(getattr(result, "error", None), "error", None)
            self.problem[key] = ("transient_failure", f"batch request {kind}" + (f": {getattr(error, 'message', '')}" if error else ""))
            return
        outcome = interpret_message(result.message)
        self.usage[key].add(outcome.usage)
        self.spend.usage.add(outcome.usage)
        if outcome.refusal:
            self._finish(key, kind="refusal", reason=outcome.refusal)
        elif outcome.malformed:
            self.problem[key] = ("malformed_output", outcome.malformed)
        else:
            try:
                self._finish(key, rating=parse_rating(outcome.payload, self.config.rubric))
            except SchemaViolation as exc:
                self.problem[key] = ("schema_violation", str(exc))

    # ----------------------------------------------------------------- batches
    async def _wait(self, batch_id: str) -> None:
        while True:
            batch = await self._api(lambda: self.client.messages.batches.retrieve(batch_id))
            counts = batch.request_counts
            self._event(f"batch {batch_id}: {batch.processing_status} (processing {counts.processing}, succeeded {counts.succeeded}, errored {counts.errored})")
            if batch.processing_status == "ended":
                return
            await asyncio.sleep(self.options.poll_interval_s)

    async def _collect(self, entry: dict[str, Any]) -> None:
        await self._wait(entry["id"])
        seen: set[str] = set()
        results = await self._api(lambda: self.client.messages.batches.results(entry["id"]))
        async for item in results:
            key = item.custom_id
            if key in self.gens and key not in self.final:
                seen.add(key)
                self._take(key, item.result)
        for key in set(entry["keys"]) - seen:
            if key in self.gens and key not in self.final:
                self.problem.setdefault(key, ("transient_failure", "no result returned for this request"))
        entry["collected_at"] = utc_now()
        self._save_state()
        if self.options.on_progress:
            self.options.on_progress(Progress(len(self.final), len(self.gens), sum(r["status"] == "unscored" for r in self.final.values()), self.spend.spent))

    async def run(self) -> list[dict[str, Any]]:
        for entry in self.state["batches"]:  # resume: collect what was submitted before
            for key in entry["keys"]:
                self.tries[key] += 1
            if not entry.get("collected_at"):
                self._event(f"resuming batch {entry['id']}")
                await self._collect(entry)
        while True:
            pending = [k for k in self.gens if k not in self.final]
            for key in [k for k in pending if self.tries[k] >= self.max_submissions]:
                kind, reason = self.problem.get(key, ("transient_failure", "no result"))
                self._finish(key, kind=kind, reason=f"{reason} (after {self.tries[key]} batch submissions)")
            pending = [k for k in pending if k not in self.final]
            if not pending:
                break
            if self.spend.max_cost is not None:
                cost_each = self.spend.per_call * (self.config.prices.batch if self.config.prices else 1.0)
                affordable = int(max(0.0, self.spend.max_cost - (self.spend.spent or 0.0)) // cost_each) if cost_each > 0 else len(pending)
                for key in pending[affordable:]:
                    self._finish(key, kind="budget_exhausted", reason=f"--max-cost {self.spend.max_cost} would be exceeded")
                pending = pending[:affordable]
                if not pending:
                    break
            requests = [{"custom_id": k, "params": self.provider.params(self.system, user_text(self.config, self.gens[k]))} for k in pending]
            batch = await self._api(lambda reqs=requests: self.client.messages.batches.create(requests=reqs))
            entry = {"id": batch.id, "keys": pending, "submitted_at": utc_now()}
            self.state["batches"].append(entry)
            self._save_state()  # the batch id is on disk before anything else happens
            self._event(f"submitted batch {batch.id} with {len(pending)} requests")
            for key in pending:
                self.tries[key] += 1
            await self._collect(entry)
        return list(self.final.values())


async def judge_batch(plan: Any, config: JudgeConfig, provider: Any, cache: JudgmentCache, options: Any, spend: Any, out: Path) -> list[dict[str, Any]]:
    return await _BatchJob(plan, config, provider, cache, options, spend, out).run()
