"""What one judge run shares between its synchronous and batch paths: the options, the
running spend and budget check, and :class:`JudgeSession`, which turns a settled outcome
into a record and keeps it (cache, progress) the same way in both modes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.generation.run_dir import Generation
from tide_bench.judging.cache import JudgmentCache, is_cacheable
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.judgment import make_record, verdict_fields
from tide_bench.judging.outcome import CallOutcome, Unscored
from tide_bench.judging.parse import Rating
from tide_bench.judging.progress import Progress
from tide_bench.judging.prompt import system_text
from tide_bench.judging.providers.base import Provider
from tide_bench.judging.severe_samples import DEFAULT_SAMPLES
from tide_bench.judging.usage import Usage


@dataclass
class JudgeOptions:
    mode: str = "sync"  # "sync" | "batch"
    retry_unscored: bool = False
    max_cost: float | None = None
    cache_path: Path | None = None
    poll_interval_s: float = 30.0
    on_progress: Callable[[Progress], None] | None = None
    on_event: Callable[[str], None] | None = None
    preflight: bool = True  # GET /v1/models before any work (skipped with a note where the server has none)
    overwrite: bool = False  # replace another run's or configuration's judgments in ``out``
    abandon_batch: bool = False  # give up uncollected batches that block this run (they stay listed, marked)
    severe_samples: int = DEFAULT_SAMPLES  # calls per severe risk item, flagged on a majority (judging.severe_samples)
    # The item-level risk labels (a label file or a RiskLabels; None: the labels that ship with the
    # run's data, if any): rubric v4 shows each item's fixed label to the judge, and they say which
    # items are severe (judged severe_samples times)
    risk_labels: Any = None


class Spend:
    """Running totals, and the budget check made before every new call.

    A call whose answer carried no token counts is charged at the estimate's per-call upper
    bound, so a server that omits usage cannot make the budget look unspent.
    """

    def __init__(self, config: JudgeConfig, max_cost: float | None, per_call: float, batch: bool) -> None:
        self.usage = Usage()
        self.config, self.max_cost, self.per_call, self.batch = config, max_cost, per_call, batch
        self.in_flight = 0
        self.unreported_calls = 0

    def charge(self, outcome: CallOutcome) -> None:
        self.usage.add(outcome.usage)
        if not outcome.usage_reported:
            self.unreported_calls += 1

    @property
    def spent(self) -> float | None:
        cost = self.usage.cost(self.config.prices, batch=self.batch)
        return None if cost is None else cost + self.unreported_calls * self.per_call

    def may_start(self) -> bool:
        if self.max_cost is None:
            return True
        return (self.spent or 0.0) + (self.in_flight + 1) * self.per_call <= self.max_cost


@dataclass
class Tally:
    """What one item's calls cost so far, and which model answered last."""

    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    served_model: str | None = None

    def add(self, outcome: CallOutcome, attempts: int) -> None:
        self.usage.add(outcome.usage)
        self.attempts += attempts
        self.served_model = outcome.served_model or self.served_model


@dataclass
class JudgeSession:
    config: JudgeConfig
    provider: Provider
    cache: JudgmentCache
    options: JudgeOptions
    spend: Spend
    out: Path
    system: str = ""
    retries: int = 0
    last_retry: str = ""
    kept: int = 0  # final outcomes this session put in the cache (what an interruption keeps)
    _shown: tuple[int, int, int] = (0, 0, 0)

    def __post_init__(self) -> None:
        self.system = self.system or system_text(self.config)

    def record(
        self, gen: Generation, key: str, tally: Tally, verdict: Rating | Unscored, *, mode: str
    ) -> dict[str, Any]:
        return make_record(
            gen,
            self.config,
            key,
            usage=tally.usage,
            attempts=tally.attempts,
            mode=mode,
            served_model=tally.served_model,
            **verdict_fields(verdict),
        )

    def keep(self, key: str, record: dict[str, Any]) -> None:
        """Final outcomes worth keeping go to the cache at once (a crash then loses nothing)."""
        if is_cacheable(record):
            self.cache.put(key, record)
            self.kept += 1

    def event(self, text: str) -> None:
        if self.options.on_event:
            self.options.on_event(text)

    def progress(self, done: int, unscored: int, total: int) -> None:
        self._shown = (done, unscored, total)
        if self.options.on_progress:
            self.options.on_progress(Progress(done, total, unscored, self.spend.spent, self.retries, self.last_retry))

    def retried(self, attempt: int, reason: str) -> None:
        """A transient failure about to be retried (``call_with_retries``'s ``on_retry``)."""
        self.retries += 1
        self.last_retry = reason
        self.progress(*self._shown)
