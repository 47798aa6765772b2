"""``tide-bench consistency``: how a model's replies hold from one sample to the next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tide_bench.cli.options import out_option, path_option


def _ci(block: dict[str, Any], pct: bool = False) -> str:
    if block.get("mean") is None:
        return f"not estimable (n = {block.get('n', 0)})"
    f = (lambda x: f"{100 * x:.1f}%") if pct else (lambda x: f"{x:.2f}")
    return f"{f(block['mean'])} [{f(block['ci_low'])}, {f(block['ci_high'])}] (n = {block['n']})"


def format_consistency(report: dict[str, Any]) -> str:
    """The report's summary as the command prints it: per entry, every figure with its n and CI."""
    lines = [
        f"{report.get('model', '?')}: {report['k']} samples of {report['n_items']} items",
        f"  score spread (sd over samples, mean): {_ci(report['spread'])}",
        f"  safety flag agrees in every sample:    {_ci(report['flag_agreement'], pct=True)}",
    ]
    severe = report["severe"]
    if "not_estimable" in severe:
        lines.append(f"  severe items handled every time:       not estimable: {severe['not_estimable']}")
    else:
        lines.append(f"  severe items handled every time:       {_ci(severe['handled_every_time'], pct=True)}")
        lines.append(
            f"    mishandled in some sample: {severe['mishandled_in_some_sample']['n']}; "
            f"not known (a sample unjudged): {severe['not_known']['n']}"
        )
    for s, tally in enumerate(report["samples"], 1):
        unscored = ", ".join(f"{k} {n}" for k, n in tally["unscored"].items()) or "none"
        lines.append(f"  sample {s}: {tally['scored']} scored; unscored: {unscored}; not judged: {tally['not_judged']}")
    for what, key in (("spread", "spread_not_estimable"), ("flag agreement", "flag_agreement_not_estimable")):
        if report[key]["n"]:
            lines.append(f"  {what} not estimable (under two counted samples): {report[key]['n']} items")
    if report["items_not_in_every_sample"]["n"]:
        lines.append(f"  items not answered in every sample: {report['items_not_in_every_sample']['n']}")
    return "\n".join(lines)


@click.command("consistency")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option(
    "--judge-subdir",
    default="judge",
    show_default=True,
    help="The folder inside each sample run that holds its judgments (tide-bench judge --out).",
)
@path_option(
    "--labels",
    "TIDE risk labels (tide-bench data label-risk) that say which items are severe; the sample and the "
    "risk supplement carry their own.",
)
@out_option("The report to write (default: FOLDER/consistency.json).", required=False, default=None)
def consistency_cmd(folder: Path, judge_subdir: str, labels: Path | None, out: Path | None) -> None:
    """Consistency across samples of a model's replies (`tide-bench eval --samples K`).

    Reads FOLDER/samples.json and each judged sample (sample-N/judge/judgments.jsonl) and reports,
    per item, the spread of each factor's score over the K replies and whether the safety flag
    agrees; per model, the mean spread, the share of items whose flag agrees in every sample and,
    on the labelled severe risk items, the share handled in every sample ("handled every time"),
    each with n and a persona-cluster 95% CI. Unscored replies are counted with their reason.

    \b
    Example:
      tide-bench eval --data sample --model-args pretrained=demo --samples 3 --output-dir runs/demo-k3
      for s in 1 2 3; do tide-bench judge runs/demo-k3/sample-$s --out runs/demo-k3/sample-$s/judge; done
      tide-bench consistency runs/demo-k3          # writes runs/demo-k3/consistency.json
    """
    from tide_bench.judging.consistency import CONSISTENCY_FILE, consistency_of

    report = consistency_of(folder, judge_subdir, out, labels)
    click.echo(format_consistency(report))
    click.echo(f"report written: {out or Path(folder) / CONSISTENCY_FILE}")
