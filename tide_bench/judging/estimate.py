"""Cost before spending: calls, tokens and dollars per mode, without calling, and as ranges
where the provider does not promise what it will bill.

**Input.** Token counts are estimates at ~4 characters per token (:mod:`.tokens`; the dry run
says so). The fixed part of every call is the system block *plus* the output definition (the
rating tool or JSON schema, billed as input on every call); the item's message is counted per
item.

**Output**, most of the bill, comes first from judgments already made: the mean output tokens
of this configuration's judgments in the cache (``measured``); else from the judge config's
``expected_output_tokens`` (a figure its owner measured); else it is derived from the rubric's
output schema filled at the prompt's typical lengths (:mod:`.answer_size`, ``derived``).

**Prompt caching** decides the price of the fixed part, and it is not guaranteed:

=================  ==========================================================================
Anthropic, sync    the fixed part is marked ``cache_control``. Expected: the first wave of
                   ``concurrency`` calls writes the cache (they start before any answer exists),
                   every later call reads it. Low: one write; high: every call a write.
Anthropic, batch   requests carry ``cache_control`` too, but cache hits in a batch are best
                   effort: the cost is a range, from one write and all reads (low) to every
                   request a cache write (high; a write costs 1.25x input). ``cost_usd`` is the
                   high end: what to plan for.
OpenAI             caching is automatic and best effort (misses cost the input price): from
                   hits after the first wave (low) to none (high, ``cost_usd``).
=================  ==========================================================================

``--max-cost`` reserves, per call in flight, :meth:`CostEstimate.per_call_cost`: the high end of the
caching range (the fixed part at the dearer of a cache write and plain input, no cache read),
the item, and the expected output. What was spent is counted from the API's usage fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tide_bench.judging.capabilities import capabilities
from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.tokens import CHARS_PER_TOKEN, estimate_tokens
from tide_bench.judging.usage import Usage

__all__ = ["CHARS_PER_TOKEN", "CostEstimate", "estimate_tokens", "format_cost_estimate"]
BOUNDS = ("low", "expected", "high")


@dataclass
class CostEstimate:
    n_items: int
    n_cached: int
    n_calls: int
    system_tokens: int  # the system block's text
    tool_tokens: int  # the tool / JSON-schema definition sent with every call
    user_tokens: int
    output_tokens: int  # all calls to make
    config: JudgeConfig
    output_method: str = "derived"  # "measured" | "configured" | "derived"
    output_note: str = ""
    severe_items: int = 0  # items judged severe_k times, flagged on the majority (judging.severe_samples)
    severe_k: int = 1
    sample_calls: int = 0  # of n_calls: the severe items' calls 2..k still to make

    @property
    def fixed_tokens(self) -> int:
        """Input every call repeats: the system block and the output definition."""
        return self.system_tokens + self.tool_tokens

    @property
    def output_per_call(self) -> int:
        return round(self.output_tokens / self.n_calls) if self.n_calls else 0

    @property
    def max_output_tokens(self) -> int:
        return int(self.config.decoding.get("max_tokens", 1024))

    @property
    def caching(self) -> str:
        """The provider's prompt caching (``capabilities.prompt_caching``): ``explicit`` (the request
        marks the cached prefix) when the configuration enables it, ``automatic`` when cache reads
        are priced below input, else ``none``."""
        kind = capabilities(self.config.provider).prompt_caching
        if kind == "explicit":
            return "explicit" if self.config.prompt_caching else "none"
        if kind == "automatic" and self.config.prices and self.config.prices.cache_read < self.config.prices.input:
            return "automatic"
        return "none"

    def usage(self, bound: str = "expected", *, caching: bool = True, batch: bool = False) -> Usage:
        """Tokens of every call to make, at one end of the caching range (:data:`BOUNDS`)."""
        n, fixed = self.n_calls, self.fixed_tokens
        usage = Usage(input_tokens=self.user_tokens, output_tokens=self.output_tokens, calls=n)
        kind = self.caching if caching else "none"
        if not n or kind == "none":
            usage.input_tokens += fixed * n
            return usage
        first_wave = min(n, max(1, self.config.concurrency))
        if bound == "expected" and (batch or kind == "automatic"):
            bound = "high"  # best effort: plan for no hits
        misses = {"low": 1, "expected": first_wave, "high": n}[bound]
        usage.cache_read_tokens = fixed * (n - misses)
        if kind == "explicit":
            usage.cache_write_tokens = fixed * misses
        else:
            usage.input_tokens += fixed * misses
        return usage

    def cost(self, bound: str = "expected", *, caching: bool = True, batch: bool = False) -> float | None:
        return self.usage(bound, caching=caching, batch=batch).cost(self.config.prices, batch=batch)

    def per_call_cost(self) -> float:
        """One call at the high end of the caching range (its fixed part a cache write, or plain
        input where that is dearer), reserved by ``--max-cost`` for every call in flight."""
        p = self.config.prices
        if p is None or not self.n_calls:
            return 0.0
        fixed_price = max(p.input, p.cache_write) if self.caching == "explicit" else p.input
        return (
            self.fixed_tokens * fixed_price
            + self.user_tokens / self.n_calls * p.input
            + self.output_per_call * p.output
        ) / 1e6

    def _mode(self, *, batch: bool, caching: bool = True) -> dict[str, Any]:
        expected = self.usage("expected", caching=caching, batch=batch)
        cost = expected.cost(self.config.prices, batch=batch)
        low, high = (self.cost(b, caching=caching, batch=batch) for b in ("low", "high"))
        output = Usage(output_tokens=self.output_tokens).cost(self.config.prices, batch=batch)
        return {
            "usage": expected.as_dict(),
            "cost_usd": cost,
            "cost_low_usd": low,
            "cost_high_usd": high,
            "output_share": None if not cost or output is None else output / cost,
            "prompt_caching": self.caching if caching else "none",
        }

    def as_dict(self) -> dict[str, Any]:
        batch = capabilities(self.config.provider).supports_batch
        return {
            "judge": self.config.identity(),
            "n_items": self.n_items,
            "n_cached": self.n_cached,
            "n_calls": self.n_calls,
            "calls_per_item": 1,
            "severe_samples": {
                "k": self.severe_k,
                "n_severe_items": self.severe_items,
                "extra_calls": self.sample_calls,
                "rule": f"items labelled severe are judged {self.severe_k} times and flagged on a majority"
                if self.severe_k > 1
                else "one call per item",
            },
            "token_estimate_method": (
                f"estimate: ~{CHARS_PER_TOKEN:g} characters per token (no offline token counter for this provider); "
                f"input per call includes the rating tool/schema ({self.tool_tokens} tokens) but not the provider's "
                f"own tool-use preamble; output {self.output_per_call} tokens per call, {self.output_note}"
            ),
            "tokens_per_call": {
                "system": self.system_tokens,
                "tool_definition": self.tool_tokens,
                "item": round(self.user_tokens / self.n_calls) if self.n_calls else 0,
                "output": self.output_per_call,
                "output_method": self.output_method,
                "max_output": self.max_output_tokens,
            },
            "sync": self._mode(batch=False),
            "sync_without_caching": self._mode(batch=False, caching=False),
            "batch": self._mode(batch=True) if batch else None,
            "max_cost_reserve_per_call_usd": self.per_call_cost() if self.config.prices else None,
            "prices_usd_per_mtok": None if self.config.prices is None else vars(self.config.prices),
        }


def format_cost_estimate(est: dict[str, Any]) -> str:
    def usd(x: float | None) -> str:
        return "unknown (no price entry for this model)" if x is None else f"${x:,.2f}"

    def span(row: dict[str, Any]) -> str:
        low, high = row["cost_low_usd"], row["cost_high_usd"]
        return "" if low is None or high is None or abs(high - low) < 0.005 else f"{usd(low)} - {usd(high)}"

    severe = est.get("severe_samples") or {}
    per_item = (
        f"1 per item, and {severe['extra_calls']} more for the {severe['n_severe_items']} severe risk items judged "
        f"{severe['k']} times (majority)"
        if severe.get("n_severe_items") and severe.get("k", 1) > 1
        else "1 per item"
    )
    lines = [
        f"judge: {est['judge']['name']} ({est['judge']['provider']} {est['judge']['model']}, config "
        f"{est['judge']['version']})",
        f"items: {est['n_items']}   already judged (cache): {est['n_cached']}   calls to make: {est['n_calls']} "
        f"({per_item})",
        f"tokens: {est['token_estimate_method']}",
        "",
        f"{'mode':<28}{'input':>12}{'cache write':>13}{'cache read':>13}{'output':>10}   {'cost':<12}"
        f"{'range (caching)':<22}output share",
    ]
    rows = [("sync", est["sync"]), ("sync, no prompt caching", est["sync_without_caching"])]
    if est["batch"]:
        rows.append(("batch (Message Batches)", est["batch"]))
    for label, row in rows:
        u = row["usage"]
        share = "" if row["output_share"] is None else f"{row['output_share']:.0%}"
        lines.append(
            f"{label:<28}{u['input_tokens']:>12,}{u['cache_write_tokens']:>13,}{u['cache_read_tokens']:>13,}"
            f"{u['output_tokens']:>10,}   {usd(row['cost_usd']):<12}{span(row):<22}{share}"
        )
    notes = []
    if est["batch"]:
        notes.append("batch: cache hits are best effort; the cost shown is the high end of the range")
    if est["sync"]["prompt_caching"] == "explicit":
        notes.append("sync: the first wave of concurrent calls writes the cache, later calls read it")
    elif est["sync"]["prompt_caching"] == "automatic":
        notes.append("sync: the provider caches automatically, best effort; the cost shown assumes no hits")
    if est["max_cost_reserve_per_call_usd"] is not None:
        notes.append(
            f"--max-cost reserves {usd(est['max_cost_reserve_per_call_usd'])} per call in flight (the high end: "
            "no cache hit)"
        )
    return "\n".join([*lines, "", *notes] if notes else lines)
