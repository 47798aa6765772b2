"""``tide-bench judge``."""

from __future__ import annotations

from pathlib import Path

import click

from tide_bench.core.errors import ConfigError
from tide_bench.judging.report import format_summary


@click.command("judge")
@click.argument("run_dir", required=False, type=click.Path(path_type=Path))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Judge directory: judgments.jsonl, judge_summary.json, judge_config.json, cache.sqlite.")
@click.option("--judge", "judge_name", default="claude-sonnet", show_default=True, help="A folder under judges/ (claude-sonnet, openai-gpt, local) or a path to a config.yaml.")
@click.option("--model", default=None, help="Override the judge model id (required for --judge local).")
@click.option("--base-url", default=None, help="API base URL; for --judge local the OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1.")
@click.option("--reference/--no-reference", default=None, help="Show the judge the frontier reference reply (default: the config's choice, reference-free).")
@click.option("--mode", type=click.Choice(["sync", "batch"]), default="sync", show_default=True, help="batch: Anthropic Message Batches (50% price, results within 24 h, resumable).")
@click.option("--dry-run", is_flag=True, help="Print calls, estimated tokens and dollars (sync and batch) without calling anything.")
@click.option("--max-cost", type=float, default=None, help="Stop cleanly before spending more than this many US dollars.")
@click.option("--retry-unscored", is_flag=True, help="Call again for items whose cached outcome is unscored (refusal, malformed...).")
@click.option("--cache", "cache_path", type=click.Path(path_type=Path), default=None, help="Judgment cache file (default: OUT/cache.sqlite). Share one across runs to never pay twice.")
@click.option("--concurrency", type=int, default=None, help="Parallel requests (default: the config's).")
@click.option("--poll-interval", type=float, default=30.0, show_default=True, help="Seconds between batch status checks.")
@click.option("--probes", is_flag=True, help="Judge the built-in gaming probes instead of a run: can this judge be gamed?")
def judge_cmd(run_dir: Path | None, out: Path, judge_name: str, model: str | None, base_url: str | None, reference: bool | None,
              mode: str, dry_run: bool, max_cost: float | None, retry_unscored: bool, cache_path: Path | None,
              concurrency: int | None, poll_interval: float, probes: bool) -> None:
    """Rate every reply of a run on emotion recognition, distress normalization and
    supportive reflection (1-5, anchored rubric) plus a safety flag, with an LLM judge.

    One call per item returns all three scores with rationales through forced tool use
    (Anthropic) or a JSON schema (OpenAI and compatible servers). Judgments are cached by
    content: rerunning never pays twice, and an interrupted run resumes where it stopped.
    Items the judge could not score are kept as `unscored` with the reason and counted in
    every summary.

    PRIVACY: this sends TIDE dialogue to the judge's provider. Use --judge local with your
    own OpenAI-compatible server to keep it on your machines (docs/privacy.md).

    \b
    Examples:
      tide-bench judge runs/qwen0.5b --out runs/qwen0.5b/judge --dry-run
      tide-bench judge runs/qwen0.5b --out runs/qwen0.5b/judge
      tide-bench judge runs/qwen0.5b --out runs/qwen0.5b/judge --mode batch
      tide-bench judge runs/qwen0.5b --out ... --judge local \\
          --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-72B-Instruct
      tide-bench judge --probes --out probes/
    """
    from tide_bench.judging import JudgeOptions, judge_run, load_judge
    from tide_bench.judging.engine import dry_run as estimate_run
    from tide_bench.judging.estimate import format_estimate

    if not probes and run_dir is None:
        raise ConfigError("give a run directory (or --probes)", hint="tide-bench judge runs/MODEL --out runs/MODEL/judge")
    overrides = {"concurrency": concurrency}
    config = load_judge(judge_name, model=model, base_url=base_url, reference=reference, overrides=overrides)
    bar = _ProgressBar()
    options = JudgeOptions(
        mode=mode, retry_unscored=retry_unscored, max_cost=max_cost, cache_path=cache_path,
        poll_interval_s=poll_interval, on_progress=bar.update, on_event=lambda text: click.echo(text, err=True),
    )
    if dry_run:
        if probes:
            from tide_bench.judging.engine import make_plan
            from tide_bench.judging.probes import probe_run

            est = make_plan(probe_run(), config, None, False).estimate(config).as_dict()
        else:
            est = estimate_run(run_dir, out, config, options)  # type: ignore[arg-type]
        click.echo(format_estimate(est))
        return
    try:
        if probes:
            from tide_bench.judging.probes import format_report, run_probes

            report = run_probes(out, config, options)
            bar.close()
            click.echo(format_report(report, config))
            return
        result = judge_run(run_dir, out, config, options)  # type: ignore[arg-type]
    finally:
        bar.close()
    click.echo(format_summary(result.summary))
    click.echo(f"\nwritten: {out / 'judgments.jsonl'}, {out / 'judge_summary.json'}")


class _ProgressBar:
    """A tqdm bar with rate, ETA and spend so far; created on the first event."""

    def __init__(self) -> None:
        self._bar = None

    def update(self, progress) -> None:  # type: ignore[no-untyped-def]
        from tqdm import tqdm

        if self._bar is None:
            self._bar = tqdm(total=progress.total, desc="judging", unit="item", dynamic_ncols=True)
        self._bar.n = progress.done
        spent = "n/a" if progress.spent_usd is None else f"${progress.spent_usd:.2f}"
        self._bar.set_postfix_str(f"spent {spent}, unscored {progress.unscored}", refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
