"""``tide-bench judge``: a thin shell over :mod:`tide_bench.judging`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from tide_bench.cli.options import (
    cache_option,
    judge_options,
    judge_overrides,
    out_option,
    overwrite_option,
    spend_options,
)
from tide_bench.core.errors import ConfigError
from tide_bench.generation.sampled import SAMPLES_FILE, read_samples_listing
from tide_bench.judging.files import JUDGMENTS_FILE, SUMMARY_FILE
from tide_bench.judging.progress import Progress
from tide_bench.judging.report import format_summary
from tide_bench.judging.rubric import RUBRIC_VERSIONS

BUDGET_STOP_EXIT = 3  # the run finished cleanly but --max-cost left items unjudged


@click.command("judge")
@click.argument("run_dir", required=False, type=click.Path(path_type=Path))
@out_option("Judge directory: judgments.jsonl, judge_summary.json, judge_config.json, cache.sqlite.")
@judge_options()
@click.option(
    "--rubric",
    type=click.Choice(list(RUBRIC_VERSIONS)),
    default=None,
    help="Rubric and prompt version (default: the config's, v4). v1, v2 and v3 reproduce those judgments; results are "
    "comparable only with their own version (docs/judging.md). epitome rates EPITOME's three mechanisms "
    "(0-2) instead of TIDE's factors, quoting the words that carry each. perceived: the seeker's view, the lay "
    "perceived-empathy questions (felt understood, felt cared for) answered as the person who wrote the message.",
)
@click.option(
    "--reference/--no-reference",
    default=None,
    help="Show the judge the frontier reference reply (default: the config's choice, reference-free).",
)
@click.option(
    "--mode",
    type=click.Choice(["sync", "batch"]),
    default="sync",
    show_default=True,
    help="batch: Anthropic Message Batches (50% price, results within 24 h, resumable).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print calls, estimated tokens and dollars (sync and batch, with the range where prompt caching is best "
    "effort, and the share of output tokens) without calling anything or importing an SDK.",
)
@spend_options()
@click.option(
    "--price-in",
    type=float,
    default=None,
    help="Input price, USD per million tokens, for a model missing from judges/prices.yaml.",
)
@click.option("--price-out", type=float, default=None, help="Output price, USD per million tokens (with --price-in).")
@click.option(
    "--retry-unscored",
    is_flag=True,
    help="Call again for items whose cached outcome is unscored (refusal, malformed...).",
)
@cache_option("Judgment cache file (default: OUT/cache.sqlite). Share one across runs to never pay twice.")
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds between batch status checks.",
)
@click.option(
    "--no-preflight",
    is_flag=True,
    help="Skip the GET /v1/models check before the first call (for gateways that lack it).",
)
@overwrite_option("Replace judgments of another run or judge configuration in --out (the cache is kept).")
@click.option(
    "--abandon-batch",
    is_flag=True,
    help="Give up an uncollected Message Batch in --out that blocks this run (it stays listed in batch_state.json).",
)
@click.option(
    "--severe-samples",
    type=click.IntRange(min=1, max=15),
    default=3,
    show_default=True,
    help="Judge calls per item labelled severe (a risk label at the severe gate), flagged only on a majority, so "
    "one false positive cannot unrank a model; calls 2..k are cached under keys of their own (a rerun resumes "
    "them) and priced by --dry-run. Written to OUT/severe_samples.jsonl. 1: one call per item.",
)
@click.option(
    "--risk-labels",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The risk-label file that says which items are severe (TIDE labels from `tide-bench data label-risk`); "
    "default: the labels that ship with the run's data (the sample, the risk supplement).",
)
@click.option(
    "--yes",
    is_flag=True,
    help="Confirm sending the conversations to a hosted API without a prompt: needed on the first run from an "
    "--out folder to a hosted endpoint and model when no one is at a terminal (docs/privacy.md).",
)
@click.option(
    "--probes",
    is_flag=True,
    help="Judge the built-in probes instead of a run: minimal pairs with an expectation each (score low, not "
    "penalise, cap one factor, flag); writes probes_report.md/json with pass/fail per expectation.",
)
@click.option(
    "--probes-file",
    type=click.Path(path_type=Path),
    default=None,
    help="With --probes: a probes file of your own (default: judges/probes_v4.yaml for rubric v4, probes_v3.yaml "
    "for v3, judges/probes.yaml for v1 and v2).",
)
@click.option(
    "--swap-check",
    is_flag=True,
    help="Check the judge for identity bias instead of judging a run: the persona-swap pairs of the built-in "
    "sample, each side with the same fixed reply; passes when, per attribute, the mean score shift is within "
    "0.25 and the flag differs on at most 10% of pairs (swap_check.md/json; docs/robustness.md).",
)
def judge_cmd(
    run_dir: Path | None,
    out: Path,
    judge_name: str,
    cross_origin: bool,
    model: str | None,
    base_url: str | None,
    rubric: str | None,
    reference: bool | None,
    mode: str,
    dry_run: bool,
    max_cost: float | None,
    price_in: float | None,
    price_out: float | None,
    retry_unscored: bool,
    cache_path: Path | None,
    concurrency: int | None,
    poll_interval: float,
    no_preflight: bool,
    overwrite: bool,
    abandon_batch: bool,
    severe_samples: int,
    risk_labels: Path | None,
    yes: bool,
    probes: bool,
    probes_file: Path | None,
    swap_check: bool,
) -> None:
    """Rate every reply of a run on emotion recognition, distress normalization and
    supportive reflection (1-5, anchored rubric) plus a safety flag, with an LLM judge.

    The default rubric is v4: what the right reply to a risk, acute distress, plain talk or a
    rupture earns, caps that win over it for anything else a reply adds, the C-SSRS triage
    (and a danger graded soon or present now), over-escalation reported beside under-response,
    and a labelled item's fixed risk label shown as "What this message calls for" (the sample's
    and the risk supplement's labels ship with them). The judge answers risk cue, evidence,
    judge-directed text, over-escalation and safety first, then a one-sentence rationale before
    each score. --rubric v1, v2 and v3 reproduce those versions' judgments.

    One call per item returns all three scores with rationales through forced tool use
    (Anthropic) or a JSON schema (OpenAI and compatible servers). Judgments are cached by
    content: rerunning never pays twice, and an interrupted run resumes where it stopped.
    Items the judge could not score are kept as `unscored` with the reason and counted in
    every summary.

    PRIVACY: this sends TIDE dialogue to the judge's provider. Use --judge local with your
    own OpenAI-compatible server to keep it on your machines (docs/privacy.md). Before the
    first call to a hosted endpoint, stderr says how many conversations go where; the first
    run from an --out folder to an endpoint and model must be confirmed (at a terminal, or
    with --yes). Never send identifiable client text to a hosted API.

    Exit status: 0 done; 1 --swap-check did not pass (failed or inconclusive); 2 a usage or
    configuration error (nothing judged); 3 stopped by --max-cost (the rest is unscored as
    budget_exhausted; rerun with a higher budget).

    \b
    Examples:
      tide-bench judge runs/qwen0.5b --out runs/qwen0.5b/judge --dry-run
      tide-bench judge runs/qwen0.5b --out runs/qwen0.5b/judge
      tide-bench judge runs/qwen0.5b --out runs/qwen0.5b/judge --mode batch
      tide-bench judge runs/qwen0.5b --out ... --model claude-sonnet-4-5-20250929 \\
          --max-cost 5 --price-in 3 --price-out 15
      tide-bench judge runs/qwen0.5b --out ... --judge local \\
          --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-72B-Instruct
      tide-bench judge runs/qwen0.5b --out runs/qwen0.5b/judge-v1 --rubric v1
      tide-bench judge runs/qwen-k3 --out judge --dry-run   # a set of samples (eval --samples 3): each
                                                            # sample into runs/qwen-k3/sample-N/judge
      tide-bench judge --probes --out probes/
      tide-bench judge --probes --out probes-local/ --judge local --base-url http://127.0.0.1:8000/v1 \\
          --model Qwen/Qwen2.5-72B-Instruct
      tide-bench judge --swap-check --out swap-check/      # is the judge moved by a stated identity?
    """
    from tide_bench.judging import JudgeOptions, check_budget, judge_run, load_judge
    from tide_bench.judging import dry_run as estimate_run
    from tide_bench.judging.engine import JudgingInterrupted
    from tide_bench.judging.estimate import format_cost_estimate

    if (price_in is None) != (price_out is None):
        raise ConfigError("give both --price-in and --price-out (USD per million tokens)")
    prices = (price_in, price_out) if price_in is not None and price_out is not None else None
    config = load_judge(
        judge_name,
        model=model,
        base_url=base_url,
        reference=reference,
        overrides={"concurrency": concurrency} | judge_overrides(cross_origin),
        prices=prices,
        rubric=rubric,
    )
    bar = _ProgressBar()
    options = JudgeOptions(
        mode=mode,
        retry_unscored=retry_unscored,
        max_cost=max_cost,
        cache_path=cache_path,
        poll_interval_s=poll_interval,
        on_progress=bar.update,
        on_event=lambda text: click.echo(text, err=True),
        preflight=not no_preflight,
        overwrite=overwrite,
        abandon_batch=abandon_batch,
        severe_samples=severe_samples,
        risk_labels=risk_labels,
    )
    target, options, probes_file = _target(run_dir, config, options, probes=probes, probes_file=probes_file,
                                           swap_check=swap_check)  # fmt: skip
    check_budget(config, max_cost)  # a budget that could not be enforced is refused, in a dry run too
    if run_dir is not None and not (probes or swap_check) and (run_dir / SAMPLES_FILE).is_file():
        _judge_set(run_dir, out, config, options, dry_run=dry_run, yes=yes, bar=bar)
        return
    if dry_run:
        click.echo(format_cost_estimate(estimate_run(target, out, config, options)))
        return
    _before_sending(target, out, config, options, yes)
    try:
        if probes or swap_check:
            _run_check(out, config, options, probes_file if probes else None)
            bar.close()
            return
        result = judge_run(target, out, config, options)
    except JudgingInterrupted as stop:
        bar.close()
        click.echo(
            f"\ninterrupted: {stop.saved} of {stop.total} judgments are saved in {stop.cache}; run the same command "
            f"again to resume (only the other {stop.total - stop.saved} are judged, nothing is paid twice)",
            err=True,
        )
        sys.exit(130)
    finally:
        bar.close()
    click.echo(format_summary(result.summary))
    for warning in result.warnings:
        click.secho(f"warning: {warning}", fg="yellow", err=True)
    click.echo(f"\nwritten: {out / JUDGMENTS_FILE}, {out / SUMMARY_FILE}")
    if result.summary["unscored_reasons"].get("budget_exhausted"):
        sys.exit(BUDGET_STOP_EXIT)


def _target(
    run_dir: Path | None, config: Any, options: Any, *, probes: bool, probes_file: Path | None, swap_check: bool
) -> tuple[Path, Any, Path | None]:
    """What is judged: the swap check's pairs, the probes (each shown its label under v4) or the run."""
    if probes_file is not None and not probes:
        raise ConfigError("--probes-file goes with --probes")
    if probes and swap_check:
        raise ConfigError("--probes and --swap-check are two checks: run one at a time")
    if swap_check:
        from tide_bench.judging.swap_check import swap_check_run

        return swap_check_run(), options, probes_file
    if probes:
        from tide_bench.judging.probes import probe_options, probe_run, probes_path

        probes_file = probes_file or probes_path(config.rubric.version)
        return probe_run(probes_file), probe_options(config, options, probes_file), probes_file
    if run_dir is not None:
        return run_dir, options, probes_file
    raise ConfigError("give a run directory (or --probes)", hint="tide-bench judge runs/MODEL --out runs/MODEL/judge")


def _run_check(out: Path, config: Any, options: Any, probes_file: Path | None) -> None:
    """--probes (a probes file given) or --swap-check: judge, report, exit 1 when the swap check fails."""
    if probes_file is not None:
        from tide_bench.judging.probes import format_report, run_probes

        click.echo(format_report(run_probes(out, config, options, probes_file), config))
        return
    from tide_bench.judging.swap_check import format_swap_check, run_swap_check

    report = run_swap_check(out, config, options)
    click.echo(format_swap_check(report, config))
    if not report["passed"]:
        sys.exit(1)


def _judge_set(run_dir: Path, out: Path, config: Any, options: Any, *, dry_run: bool, yes: bool, bar: Any) -> None:
    """Every sample of a set (``eval --samples K``) judged into ``sample-N/<out>``, priced together;
    a --max-cost is shared out evenly, so that the whole set stays within it."""
    import dataclasses

    from tide_bench.cli.judge_samples import judge_samples

    k = len(read_samples_listing(run_dir))
    if options.max_cost is not None:
        options = dataclasses.replace(options, max_cost=options.max_cost / k)
        click.echo(f"--max-cost is shared by the {k} samples: ${options.max_cost:,.2f} each", err=True)
    try:
        results = judge_samples(
            run_dir,
            out,
            config,
            options,
            dry_run=dry_run,
            confirm=lambda folder, n: _confirm(folder, n, config, yes),
            echo=click.echo,
        )
    finally:
        bar.close()
    for s, result in enumerate(results, 1):
        click.echo(f"\nsample {s}:\n{format_summary(result.summary)}")
    if results:
        click.echo(f"\nnext: tide-bench consistency {run_dir} --judge-subdir {out}")
    if any(r.summary["unscored_reasons"].get("budget_exhausted") for r in results):
        sys.exit(BUDGET_STOP_EXIT)


def _before_sending(target: Any, out: Path, config: Any, options: Any, yes: bool) -> None:
    """The notice on stderr before any text goes to a hosted judge, and the first run's confirmation
    (:mod:`tide_bench.core.hosted`)."""
    from tide_bench.judging import dry_run as estimate_run

    _confirm(Path(out), int(estimate_run(target, out, config, options)["n_calls"]), config, yes)  # cached: nothing


def _confirm(folder: Path, n: int, config: Any, yes: bool) -> None:
    from tide_bench.core.hosted import confirm_hosted
    from tide_bench.judging.providers import make_provider

    confirm_hosted(
        Path(folder),
        n=n,
        provider=config.provider,
        endpoint=make_provider(config).public_endpoint,
        model=config.model,
        yes=yes,
        interactive=sys.stdin.isatty() and sys.stderr.isatty(),
        echo=lambda text: click.echo(text, err=True),
        ask=lambda question: click.confirm(question, err=True),
    )


class _ProgressBar:
    """A tqdm bar with rate, ETA and spend so far; shown from the first event (before any call ends)."""

    def __init__(self) -> None:
        self._bar: Any = None

    def update(self, progress: Progress) -> None:
        from tqdm import tqdm

        if self._bar is None:
            self._bar = tqdm(total=progress.total, desc="judging", unit="item", dynamic_ncols=True)
        self._bar.n = progress.done
        spent = "n/a" if progress.spent_usd is None else f"${progress.spent_usd:.2f}"
        retried = f", retries {progress.retries} (last: {progress.last_retry[:60]})" if progress.retries else ""
        self._bar.set_postfix_str(f"spent {spent}, unscored {progress.unscored}{retried}", refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
