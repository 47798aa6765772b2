"""``tide-bench judge FOLDER --out judge`` on a set of samples (``tide-bench eval --samples K``): every
sample judged into its own folder, priced together before anything is sent.

Why one command: the consistency report needs all K samples judged by the same judge, rubric and
severe-item calls; judging them one by one invites a sample judged otherwise, or forgotten. A
set's ``--out`` is the name of the judge folder inside each sample (``sample-s/judge``, what
``tide-bench consistency --judge-subdir`` reads), never a path elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError


def sample_targets(folder: Path, out: Path) -> list[tuple[Path, Path]]:
    """(run, judge folder) of every sample of the set in ``folder``; ``out`` must be a folder name."""
    from tide_bench.generation.sampled import read_samples_listing

    if out.is_absolute() or len(out.parts) != 1 or out.name in (".", ".."):
        raise ConfigError(
            f"{folder} is a set of samples: --out names the judge folder inside each sample, got {out}",
            field="--out",
            hint=f"tide-bench judge {folder} --out judge   (writes {folder}/sample-N/judge)",
        )
    return [(run, run / out.name) for run in read_samples_listing(folder)]


def _usd(x: float | None) -> str:
    return "unknown (no price entry for this model)" if x is None else f"${x:,.2f}"


def format_sample_estimates(estimates: list[dict[str, Any]]) -> str:
    """The dry run of a set: one line per sample and the total (K samples: K times the judging)."""
    lines = [f"{len(estimates)} samples, each judged in full (K times the calls and the cost of one run):", ""]
    lines.append(f"{'sample':<10}{'items':>8}{'cached':>8}{'calls':>8}   {'sync cost':<14}{'batch cost':<14}")
    for s, est in enumerate(estimates, 1):
        batch = est["batch"]["cost_usd"] if est["batch"] else None
        lines.append(
            f"{s:<10}{est['n_items']:>8}{est['n_cached']:>8}{est['n_calls']:>8}   {_usd(est['sync']['cost_usd']):<14}"
            f"{_usd(batch) if est['batch'] else '-':<14}"
        )
    costs = [e["sync"]["cost_usd"] for e in estimates]
    total = None if any(c is None for c in costs) else sum(costs)
    batches = [e["batch"]["cost_usd"] if e["batch"] else None for e in estimates]
    batch_total = None if any(c is None for c in batches) else sum(batches)
    n_calls = sum(e["n_calls"] for e in estimates)
    lines.append(
        f"{'total':<10}{sum(e['n_items'] for e in estimates):>8}{sum(e['n_cached'] for e in estimates):>8}"
        f"{n_calls:>8}   {_usd(total):<14}{_usd(batch_total) if estimates[0]['batch'] else '-':<14}"
    )
    return "\n".join(lines)


def judge_samples(
    folder: Path,
    out: Path,
    config: Any,
    options: Any,
    *,
    dry_run: bool,
    confirm: Callable[[Path, int], None],
    echo: Callable[[str], None],
) -> list[Any]:
    """Judge (or, ``dry_run``, price) every sample of the set in ``folder``; ``confirm(folder, n)``
    asks once for the set before a hosted judge receives anything. Returns the judge results."""
    from tide_bench.judging import dry_run as estimate_run
    from tide_bench.judging import judge_run
    from tide_bench.judging.estimate import format_cost_estimate

    pairs = sample_targets(folder, out)
    estimates = [estimate_run(run, judged, config, options) for run, judged in pairs]
    if dry_run:
        echo(format_cost_estimate(estimates[0]))
        echo("")
        echo(format_sample_estimates(estimates))
        return []
    confirm(folder, sum(int(e["n_calls"]) for e in estimates))
    results = []
    for s, (run, judged) in enumerate(pairs, 1):
        echo(f"sample {s} of {len(pairs)}: {run} -> {judged}")
        results.append(judge_run(run, judged, config, options))
    return results
