"""``tide-bench data ...``: inspect and validate a TIDE source."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from tide_bench.cli.options import cache_option, data_option, judge_options, judge_overrides, out_option
from tide_bench.cli.spellings import SpellingGroup
from tide_bench.data import format_report, validate


@click.group(cls=SpellingGroup)
def data() -> None:
    """Inspect TIDE data sources.

    \b
    Examples:
      tide-bench data validate --data sample            # the built-in synthetic sample
      tide-bench data validate --data ~/data/TIDE       # a snapshot you downloaded
    """


@data.command("validate")
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--risk-labels",
    type=click.Path(path_type=Path),
    default=None,
    help="The item-level risk labels to check (default: risk_labels.json beside the data; the sample and the "
    "risk supplement ship theirs).",
)
def validate_cmd(data: str | None, as_json: bool, risk_labels: Path | None) -> None:
    """Check a TIDE source: counts per split, scenario and turn; schema problems.

    Reports duplicate ids, empty texts, invalid UTF-8 or JSON (with file and line), records
    without a client turn or reference reply, and a mismatch with the full set's expected
    500 personas / 10,000 conversations. Checks the item-level risk labels (C-SSRS severity)
    against the data: every item labelled once, known codes, made for this data; says whether a
    clinician signed them. Exits 1 when any error is found.

    \b
    Example:
      tide-bench data validate --data ~/data/TIDE
    """
    report = validate(data, risk_labels=risk_labels)
    click.echo(json.dumps(report, indent=2) if as_json else format_report(report))
    if not report["ok"]:
        sys.exit(1)


@data.command("label-risk")
@data_option
@out_option("The label file to write (put it beside the snapshot as risk_labels.json to have it found).")
@judge_options("A judge folder or config path.")
@cache_option("Label cache (default: risk_labels.cache.sqlite beside --out); a rerun makes only missing calls.")
def label_risk_cmd(
    data: str | None,
    out: Path,
    judge_name: str,
    model: str | None,
    base_url: str | None,
    cross_origin: bool,
    cache_path: Path | None,
) -> None:
    """Label every item's risk (C-SSRS severity) with a judge that reads the conversation only.

    One call per item, never with a reply: the labels describe what the client's messages call
    for, are fixed with the data and shared by every entry of a board, whose risk gate is
    computed on them (docs/leaderboard.md). Cached by labeller version and item content. An item
    the judge refuses or its provider filters is left unlabelled with the reason, and `data
    validate` fails until a person labels it. The result is a judge's labelling: boards mark it
    "not yet clinician-reviewed" until a clinician signs it (risk supplement REVIEW_PROTOCOL.md).

    PRIVACY: this sends TIDE dialogue to the judge's provider; use --judge local to keep it on
    your machines.

    \b
    Example:
      tide-bench data label-risk --data ~/data/TIDE --out ~/data/TIDE/risk_labels.json
      tide-bench data validate --data ~/data/TIDE
    """
    from tqdm import tqdm

    from tide_bench.data import load_dataset
    from tide_bench.judging import load_judge
    from tide_bench.judging.risk_labelling import label_risk

    dataset = load_dataset(data)
    config = load_judge(judge_name, model=model, base_url=base_url, overrides=judge_overrides(cross_origin))
    bar: list[Any] = []

    def progress(done: int, total: int) -> None:
        if not bar:
            bar.append(tqdm(total=total, desc="labelling", unit="item", dynamic_ncols=True))
        bar[0].n = done
        bar[0].refresh()

    try:
        run = label_risk(dataset, out, config, cache_path=cache_path, progress=progress)
    finally:
        if bar:
            bar[0].close()
    kinds = ", ".join(f"{k} {n}" for k, n in run.summary["by_kind"].items())
    click.echo(f"{run.n_labelled} of {run.n_items} items labelled ({kinds}); {run.calls_made} calls this run")
    if run.unlabelled:
        first = next(iter(run.unlabelled.items()))
        click.secho(
            f"warning: {len(run.unlabelled)} item(s) left unlabelled (first: {first[0]}: {first[1]}); label them by "
            f"hand in {out} before using it",
            fg="yellow",
            err=True,
        )
    click.echo(f"written: {out}")
