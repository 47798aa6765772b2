"""``tide-bench annotate build|collect``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tide_bench.annotation.assign import AssignmentOptions
from tide_bench.cli.options import out_option, seed_option
from tide_bench.cli.spellings import SpellingGroup
from tide_bench.core.stats import DEFAULT_SEED
from tide_bench.judging.rubric import DEFAULT_RUBRIC


@click.group("annotate", cls=SpellingGroup)
def annotate() -> None:
    """Collect human ratings with offline, blinded annotation pages.

    \b
    Examples:
      tide-bench annotate build runs/model-a runs/model-b --per-rater 40 --raters 5 --out annotation/
      tide-bench annotate collect annotation/returns/*.json --out human_ratings.csv --raters-out raters.csv
    """


@annotate.command("build")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--per-rater",
    type=click.IntRange(min=1),
    default=AssignmentOptions.per_rater,
    show_default=True,
    help="Items per rater (before repeats); the default gives the alt-test >= 80 % power (`annotate plan`).",
)
@click.option("--raters", type=click.IntRange(min=1), default=5, show_default=True, help="Number of raters (pages).")
@click.option(
    "--overlap", type=click.IntRange(min=1), default=3, show_default=True, help="Raters per item (alpha needs overlap)."
)
@click.option(
    "--repeats",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Items shown twice to each rater (self-consistency).",
)
@seed_option("Seed of the assignment and the item order.", DEFAULT_SEED)
@click.option("--title", default="Rating supportive replies", show_default=True, help="Title of every rating page.")
@click.option(
    "--rubric",
    type=click.Choice(["v1", "v2", "v3", "v4"]),
    default=DEFAULT_RUBRIC,
    show_default=True,
    help="The rubric the raters see: the one the audited judge used.",
)
@click.option(
    "--instrument",
    type=click.Choice(["expert", "lay"]),
    default="expert",
    show_default=True,
    help="expert: the trained panel rates with the rubric (anchored). lay: a separate perceived-empathy page "
    "(how understood and cared for would you feel?) for lay raters; its scores are analysed beside the judge's, "
    "not used to audit it (docs/annotation.md).",
)
@click.option(
    "--support",
    default=None,
    help="Who a rater contacts if reading makes them feel unsafe (a named person and a crisis line in their "
    "country), shown in the page's content note. Without it the note names local emergency and crisis lines "
    "and a warning is printed.",
)
@click.option(
    "--exclude-risk",
    is_flag=True,
    help="Leave out every item whose risk label names a risk (suicide or self-harm, harm to others, danger, acute "
    "distress) or that has no label: for raters who opt out of such items (reads the data's risk labels).",
)
@click.option(
    "--risk-labels",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The risk-label file of the runs' data (TIDE: from `tide-bench data label-risk`); default: the labels "
    "that ship with the data (the sample, the risk supplement). Risk items are announced before they are shown.",
)
@out_option("Folder for assignment.json and rater-N.html.")
def build_cmd(
    runs: tuple[Path, ...],
    per_rater: int,
    raters: int,
    overlap: int,
    repeats: int,
    seed: int,
    title: str,
    rubric: str,
    instrument: str,
    support: str | None,
    exclude_risk: bool,
    risk_labels: Path | None,
    out: Path,
) -> None:
    """Draw items from run directories (stratified by scenario and turn, model hidden) and write
    one self-contained page per rater plus the assignment plan.

    Raters rate the three factors and answer the safety question (could the reply harm the
    person; with rubric v2 also which kind of harm), so the judge's safety flag can be audited.

    Every item gets --overlap raters and every pair of raters shares items where the plan is
    large enough (assignment.json reports the design; a warning says when it is not).
    RUNS are run directories, or a study's output folder (`tide-bench study --out`), meaning
    every generated run of its cells (models x conditions, and the reference if it has one).
    Send each rater their rater-N.html: it works offline and nothing leaves their machine;
    they download a ratings file at the end. Keep assignment.json: it maps items to models.

    Wellbeing: where the data has risk labels, each risk item is announced in one line before it
    is shown (the rater may skip it unread); --exclude-risk leaves risk items out altogether for
    raters who opt out; the end screen is a debrief that repeats --support and how to withdraw.

    \b
    Example:
      tide-bench annotate build runs/model-a runs/model-b --per-rater 120 --raters 5 --out annotation/
      tide-bench annotate build studies-out/demo --out annotation/
    """
    from tide_bench.annotation import AssignmentOptions, build_annotation

    a = build_annotation(
        _expand_study_folders(runs),
        out,
        AssignmentOptions(
            per_rater=per_rater,
            raters=raters,
            overlap=overlap,
            repeats=repeats,
            seed=seed,
            title=title,
            rubric=rubric,
            instrument=instrument,
            support=support,
            exclude_risk=exclude_risk,
            risk_labels=str(risk_labels) if risk_labels else None,
        ),
    )
    if not support:
        click.secho(
            "warning: no --support given: the pages name local emergency and crisis lines only; give raters a "
            "named contact (docs/annotation.md, rater wellbeing)",
            fg="yellow",
            err=True,
        )
    if exclude_risk:
        click.echo(f"left out {a['excluded_risk_items']} risk item(s) (--exclude-risk)")
    click.echo(
        f"{len(a['units'])} items, {len(a['raters'])} pages ({per_rater + repeats} items each), every item rated by "
        f"{overlap} raters"
    )
    d = a["design"]
    click.echo(
        f"rater pairs sharing items: {d['pairs_sharing_items']} of {d['rater_pairs']} (each shares "
        f"{d['min_shared_items']}"
        f"-{d['max_shared_items']} items); all raters connected: {'yes' if d['connected'] else 'no'}"
    )
    if d["warning"]:
        click.secho(f"warning: {d['warning']}", fg="yellow", err=True)
    click.echo(f"written: {out / 'assignment.json'} and {', '.join(p['file'] for p in a['pages'].values())}")


def _expand_study_folders(paths: tuple[Path, ...]) -> list[Path]:
    """Each study folder becomes its cells' runs; other paths pass through unchanged."""
    from tide_bench.study import study_run_dirs

    expanded: list[Path] = []
    for path in paths:
        runs = study_run_dirs(path)
        if runs == []:
            raise click.UsageError(f"{path} is a study folder without generated runs yet: run `tide-bench study` first")
        expanded.extend(runs if runs is not None else [path])
    return expanded


@annotate.command("collect")
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--assignment",
    type=click.Path(path_type=Path),
    default=None,
    help="assignment.json (default: found next to the files or one folder up).",
)
@out_option("Long-format ratings CSV for `tide-bench audit --ratings`.")
@click.option(
    "--raters-out",
    type=click.Path(path_type=Path),
    default=None,
    help="Rater table CSV for `tide-bench audit --raters`.",
)
def collect_cmd(files: tuple[str, ...], assignment: Path | None, out: Path, raters_out: Path | None) -> None:
    """Check returned ratings files against the assignment and merge them.

    FILES are ratings files, or folders (meaning their *.json files). A malformed or
    changed file, a wrong or unknown rater, missing consent, out-of-scale values or two
    different ratings for one item are refused, file by file; the other files are merged.
    When a rater sent a partial and a final file, the more complete one is used. Prints
    coverage (items with the target number of raters) and each rater's self-consistency on
    repeated items. Exits 1 if any file was refused (the others are still written).

    
    Example:
      tide-bench annotate collect annotation/returns/ --out human_ratings.csv --raters-out raters.csv
    """
    from tide_bench.annotation.collect import collect_returns, report, write_outputs

    collection = collect_returns(list(files), assignment_path=assignment)
    write_outputs(collection, out, raters_out)
    click.echo(report(collection))
    click.echo(f"written: {out}" + (f", {raters_out}" if raters_out else ""))
    if collection.refused:
        sys.exit(1)


@annotate.command("plan")
@click.option(
    "--raters",
    type=click.IntRange(min=2),
    default=AssignmentOptions.raters,
    show_default=True,
    help="Raters in the planned study.",
)
@click.option(
    "--items",
    "per_rater",
    type=click.IntRange(min=1),
    default=AssignmentOptions.per_rater,
    show_default=True,
    help="Items per rater.",
)
@click.option(
    "--overlap",
    type=click.IntRange(min=2),
    default=AssignmentOptions.overlap,
    show_default=True,
    help="Raters per item.",
)
@click.option("--epsilon", type=float, default=0.15, show_default=True, help="The alt-test margin the audit will use.")
@click.option(
    "--judge-sd",
    type=click.FloatRange(min=0),
    default=0.45,
    show_default=True,
    help="The simulated judge's rating noise (0.45 = a person's: 'as good as a person').",
)
@click.option(
    "--replications",
    type=click.IntRange(min=10),
    default=400,
    show_default=True,
    help="Simulated studies (more: a smaller Monte Carlo error, a longer run).",
)
@seed_option("Seed of the simulation.", DEFAULT_SEED)
def plan_cmd(
    raters: int, per_rater: int, overlap: int, epsilon: float, judge_sd: float, replications: int, seed: int
) -> None:
    """Estimate, by seeded simulation, the chance that the alt-test passes a judge as good as a person.

    Simulates the assignment `annotate build` makes (every item rated by --overlap raters,
    loads balanced) and runs the audit's test on each simulated study. Plan for >= 80 %: with
    5 raters x 40 items a judge exactly as good as a person passes only about one study in five.

    \b
    Examples:
      tide-bench annotate plan
      tide-bench annotate plan --raters 5 --items 40
      tide-bench annotate plan --raters 4 --items 200 --epsilon 0.2
    """
    from tide_bench.annotation.plan import PlanOptions, simulate

    options = PlanOptions(
        raters=raters,
        per_rater=per_rater,
        overlap=overlap,
        epsilon=epsilon,
        judge_sd=judge_sd,
        replications=replications,
        seed=seed,
    )
    with click.progressbar(length=1, label="simulating", file=click.get_text_stream("stderr")) as bar:
        r = simulate(options)
        bar.update(1)
    click.echo(
        f"{raters} raters x {per_rater} items, overlap {overlap} ({r['units']} items in all), epsilon {epsilon:g}: "
        f"a judge with rating noise {judge_sd:g} (a person: {r['human_sd']:g}) passes the alt-test in "
        f"{100 * r['pass_rate']:.1f} % of {replications} simulated studies (MC se {100 * r['mc_se']:.1f})."
    )
    if r["raters_skipped_per_study"]:
        click.echo(
            f"note: {r['raters_skipped_per_study']:.1f} rater(s) per study had fewer than 30 items and were skipped"
        )
    if not r["meets_target"]:
        click.secho(
            f"below the {100 * r['target']:.0f} % target: raise --items (5 raters at overlap 3 need about 120 each)",
            fg="yellow",
        )
