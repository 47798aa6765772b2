"""Anthropic Message Batches: half price, asynchronous, resumable.

1. Build one request per item still to judge (``custom_id`` = the cache key).
2. Submit, and write the batch id to ``batch_state.json`` (under this judge configuration's
   version, :class:`BatchState` below) before doing anything else.
3. Poll until the batch has ended; stream its results.
4. Each result is settled by the same rule as a synchronous call
   (:func:`tide_bench.judging.outcome.settle`); final outcomes are cached at once. Errored,
   expired or cancelled requests, and malformed outputs, are re-submitted in a new batch with
   only those items, up to the retry limits.

An interrupted run (Ctrl-C, ``kill -9``, a closed laptop) is resumed by running the same
command again: batches in the state file that were not collected are polled and collected,
never submitted twice. OpenAI's Batch API is not implemented (sync mode works for OpenAI).

:class:`BatchState` keeps ``batch_state.json``: every Message Batch ever submitted from a judge directory, per judge
configuration, so a paid batch is never forgotten.

A batch id is written here before anything else happens to it. Entries are never dropped:
a batch is marked ``collected_at`` when its results are in, or ``abandoned_at`` when the
user says so (``--abandon-batch``). While a batch is neither, any run in that directory with
another configuration, or in sync mode, is refused with the batch named: its results are
paid for and only a batch-mode rerun with that configuration collects them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.jsonio import read_json, write_json
from tide_bench.core.provenance import utc_now
from tide_bench.judging.outcome import CallOutcome, Retry, Unscored, settle
from tide_bench.judging.parse import Rating
from tide_bench.judging.plan import Plan
from tide_bench.judging.prompt import user_text
from tide_bench.judging.providers.anthropic_message import interpret_message
from tide_bench.judging.providers.transport import answer_limit
from tide_bench.judging.retry import FatalJudgeError, call_with_retries
from tide_bench.judging.session import JudgeSession, Tally

__all__ = ["STATE_FILE", "BatchState", "judge_batch"]


# --- batch_state.json ----------------------------------------------------------------------

STATE_FILE = "batch_state.json"
SCHEMA_VERSION = 2


class BatchState:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.jobs: dict[str, list[dict[str, Any]]] = self._read()

    def _read(self) -> dict[str, list[dict[str, Any]]]:
        if not self.path.is_file():
            return {}
        raw = read_json(self.path, DataError)
        if isinstance(raw, dict) and "judge_version" in raw:  # schema 1: one configuration per file
            return {str(raw["judge_version"]): list(raw.get("batches") or [])}
        jobs = raw.get("jobs") if isinstance(raw, dict) else None
        if not isinstance(jobs, dict) or not all(isinstance(b, list) for b in jobs.values()):
            raise DataError("not a tide-bench batch state file", path=self.path, hint="move it away if it is not yours")
        return {str(version): list(batches) for version, batches in jobs.items()}

    def save(self) -> None:
        write_json(self.path, {"schema_version": SCHEMA_VERSION, "jobs": self.jobs})

    def batches(self, version: str) -> list[dict[str, Any]]:
        return self.jobs.setdefault(version, [])

    def open_batches(self) -> list[tuple[str, dict[str, Any]]]:
        """(judge version, entry) of every batch neither collected nor abandoned."""
        return [
            (v, b)
            for v, entries in self.jobs.items()
            for b in entries
            if not b.get("collected_at") and not b.get("abandoned_at")
        ]

    def guard(self, version: str, mode: str, abandon: bool) -> list[str]:
        """Refuse to start while another configuration's (or a sync run's) batch is open;
        with ``abandon`` mark those batches abandoned instead. Returns what was abandoned."""
        blocking = [(v, b) for v, b in self.open_batches() if v != version or mode != "batch"]
        if not blocking:
            return []
        names = ", ".join(
            f"{b.get('id')} (judge configuration {v}, submitted {b.get('submitted_at')})" for v, b in blocking
        )
        if not abandon:
            same = all(v == version for v, _ in blocking)
            hint = (
                "rerun with --mode batch to collect it"
                if same
                else "rerun with that judge configuration and --mode batch to collect it"
            )
            raise ConfigError(
                f"{self.path.parent} has an uncollected, paid Message Batch: {names}",
                hint=hint + ", or pass --abandon-batch to give it up deliberately",
            )
        for _, entry in blocking:
            entry["abandoned_at"] = utc_now()
        self.save()
        return [str(b.get("id")) for _, b in blocking]


# --- submitting and collecting ------------------------------------------------------------


class BatchProvider(Protocol):
    """What batch mode needs of its provider (:class:`.anthropic_api.AnthropicProvider`)."""

    client: Any
    public_endpoint: str

    def params(self, system: str, user: str) -> dict[str, Any]: ...

    def retryable(self, exc: BaseException) -> bool: ...


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


class _BatchJob:
    def __init__(self, session: JudgeSession, plan: Plan) -> None:
        self.provider: BatchProvider = session.provider  # type: ignore[assignment]
        self.session, self.config = session, session.config
        self.client = self.provider.client
        self.gens = {key: gen for gen, key in plan.todo}
        self.final: dict[str, dict[str, Any]] = {}
        self.tally: dict[str, Tally] = {k: Tally() for k in self.gens}
        self.tries: Counter[str] = Counter()
        self.problem: dict[str, tuple[str, str]] = {}
        self.max_submissions = max(self.config.max_retries, self.config.schema_retries) + 1
        self.state = BatchState(session.out / STATE_FILE)
        self.batches = self.state.batches(self.config.version)

    async def _api(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        result, _ = await call_with_retries(
            fn,
            max_retries=self.config.max_retries,
            base_s=self.config.backoff_base_s,
            cap_s=self.config.backoff_cap_s,
            on_retry=self.session.retried,
            retryable=self.provider.retryable,
        )
        return result

    # ----------------------------------------------------------------- outcome handling
    def _finish(self, key: str, verdict: Rating | Unscored) -> None:
        tally = self.tally[key]
        tally.attempts = self.tries[key]
        rec = self.session.record(self.gens[key], key, tally, verdict, mode="batch")
        self.session.keep(key, rec)
        self.final[key] = rec

    def _take(self, key: str, result: Any) -> None:
        kind = _get(result, "type")
        if kind != "succeeded":
            error = _get(_get(result, "error"), "error")
            self.problem[key] = (
                "transient_failure",
                f"batch request {kind}" + (f": {_get(error, 'message') or ''}" if error else ""),
            )
            return
        try:
            outcome = interpret_message(_get(result, "message"))
        except Exception as exc:  # a result line of a shape no one expected: this item only
            outcome = CallOutcome(malformed=f"unreadable batch result ({type(exc).__name__})", usage_reported=False)
        self.tally[key].add(outcome, 0)
        self.session.spend.charge(outcome)
        verdict = settle(outcome, self.config.rubric)
        if isinstance(verdict, Retry):
            self.problem[key] = (verdict.kind, verdict.reason)
        else:
            self._finish(key, verdict)

    # ----------------------------------------------------------------- batches
    async def _wait(self, batch_id: str) -> None:
        while True:
            batch = await self._api(lambda: self.client.messages.batches.retrieve(batch_id))
            counts = _get(batch, "request_counts")
            status = _get(batch, "processing_status")
            self.session.event(
                f"batch {batch_id}: {status} (processing {_get(counts, 'processing')}, "
                f"succeeded {_get(counts, 'succeeded')}, errored {_get(counts, 'errored')})"
            )
            if status == "ended":
                return
            await asyncio.sleep(self.session.options.poll_interval_s)

    async def _collect(self, entry: dict[str, Any]) -> None:
        await self._wait(entry["id"])
        seen: set[str] = set()
        with answer_limit(self.config.max_answer_bytes * max(1, len(entry["keys"]))):  # one answer per request
            results = await self._api(lambda: self.client.messages.batches.results(entry["id"]))
        async for item in results:
            key = _get(item, "custom_id")
            if key in self.gens and key not in self.final:
                seen.add(key)
                self._take(key, _get(item, "result"))
        for key in set(entry["keys"]) - seen:
            if key in self.gens and key not in self.final:
                self.problem.setdefault(key, ("transient_failure", "no result returned for this request"))
        entry["collected_at"] = utc_now()
        self.state.save()
        unscored = sum(r["status"] == "unscored" for r in self.final.values())
        self.session.progress(len(self.final), unscored, len(self.gens))

    def _stop_over_budget(self, pending: list[str]) -> list[str]:
        spend = self.session.spend
        if spend.max_cost is None:
            return pending
        cost_each = spend.per_call * (self.config.prices.batch if self.config.prices else 1.0)
        affordable = (
            int(max(0.0, spend.max_cost - (spend.spent or 0.0)) // cost_each) if cost_each > 0 else len(pending)
        )
        for key in pending[affordable:]:
            self._finish(key, Unscored("budget_exhausted", f"--max-cost {spend.max_cost} would be exceeded"))
        return pending[:affordable]

    async def run(self) -> list[dict[str, Any]]:
        for entry in self.batches:  # resume: collect what was submitted before
            for key in entry["keys"]:
                self.tries[key] += 1
            if not entry.get("collected_at") and not entry.get("abandoned_at"):
                self.session.event(f"resuming batch {entry['id']}")
                await self._collect(entry)
        while True:
            pending = [k for k in self.gens if k not in self.final]
            for key in [k for k in pending if self.tries[k] >= self.max_submissions]:
                kind, reason = self.problem.get(key, ("transient_failure", "no result"))
                self._finish(key, Unscored(kind, f"{reason} (after {self.tries[key]} batch submissions)"))
            pending = self._stop_over_budget([k for k in pending if k not in self.final])
            if not pending:
                break
            requests = [
                {
                    "custom_id": k,
                    "params": self.provider.params(self.session.system, user_text(self.config, self.gens[k])),
                }
                for k in pending
            ]
            batch = await self._api(lambda reqs=requests: self.client.messages.batches.create(requests=reqs))
            batch_id = _get(batch, "id")
            if not isinstance(batch_id, str) or not batch_id:
                raise FatalJudgeError(
                    f"the server at {self.provider.public_endpoint} did not answer like the Anthropic API (a batch "
                    "without an id)"
                )
            entry = {"id": batch_id, "keys": pending, "submitted_at": utc_now()}
            self.batches.append(entry)
            self.state.save()  # the batch id is on disk before anything else happens
            self.session.event(f"submitted batch {batch_id} with {len(pending)} requests")
            for key in pending:
                self.tries[key] += 1
            await self._collect(entry)
        return list(self.final.values())


async def judge_batch(session: JudgeSession, plan: Plan) -> list[dict[str, Any]]:
    return await _BatchJob(session, plan).run()
