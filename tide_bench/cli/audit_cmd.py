"""``tide-bench audit``."""

from __future__ import annotations

import math
from pathlib import Path

import click

from tide_bench.cli.options import out_option, seed_option
from tide_bench.core.errors import ConfigError
from tide_bench.core.stats import DEFAULT_RESAMPLES, DEFAULT_SEED


def _scale(text: str) -> tuple[float, float] | None:
    if text.lower() == "none":
        return None
    try:
        lo, hi = (float(x) for x in text.split("-", 1))
    except ValueError:
        raise ConfigError(f"--scale must look like 1-5, got {text!r}") from None
    if not lo < hi or not all(map(math.isfinite, (lo, hi))):
        raise ConfigError(f"--scale needs MIN < MAX, got {text!r}")
    return lo, hi


def _mapping(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        human, sep, judge = pair.partition("=")
        if not sep or not human or not judge:
            raise ConfigError(f"--map must be HUMAN_NAME=JUDGE_NAME, got {pair!r}")
        out[human.strip()] = judge.strip()
    return out


@click.command("audit")
@click.option(
    "--ratings",
    required=True,
    type=click.Path(path_type=Path),
    help="Long-format ratings, CSV or JSONL: item_id, rater_id, dimension, score.",
)
@click.option(
    "--raters",
    type=click.Path(path_type=Path),
    default=None,
    help="Rater table (CSV/JSONL): rater_id plus any columns (age_group, gender, education, role...).",
)
@click.option(
    "--judgments",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A judge's judgments.jsonl; repeatable. Each judge becomes a rater.",
)
@click.option(
    "--map",
    "maps",
    multiple=True,
    metavar="HUMAN=JUDGE",
    help="Rename a human dimension to the judge's factor name; repeatable.",
)
@click.option(
    "--scale", default="1-5", show_default=True, help="Valid score range (MIN-MAX); 'none' to accept any number."
)
@click.option(
    "--resamples",
    type=click.IntRange(10, 100_000),
    default=DEFAULT_RESAMPLES,
    show_default=True,
    help="Bootstrap resamples (over the personas of the rated items; raters too for the two-way intervals).",
)
@seed_option("Seed of the bootstrap (same seed, same CIs).", DEFAULT_SEED)
@click.option(
    "--epsilon",
    type=click.FloatRange(0, 1),
    default=0.15,
    show_default=True,
    help="Alt-test margin: what the judge's cost and speed are worth. "
    "0.2 expert raters, 0.15 skilled, 0.1 crowd workers.",
)
@click.option(
    "--mixed-model",
    is_flag=True,
    help="Also fit a linear mixed model per rater group (needs statsmodels: pip install 'tide-bench[mixed]').",
)
@out_option("Folder for agreement.json, agreement.md and agreement.svg.")
def audit_cmd(
    ratings: Path,
    raters: Path | None,
    judgments: tuple[Path, ...],
    maps: tuple[str, ...],
    scale: str,
    resamples: int,
    seed: int,
    epsilon: float,
    mixed_model: bool,
    out: Path,
) -> None:
    """Judge-human agreement: can this judge stand in for people, on which factor, for whom?

    The verdict is the alternative annotator test (Calderon et al. 2025): each human is left
    out in turn, and the judge must represent the remaining raters about as well as that
    human does (margin --epsilon) for at least half of the raters. Per dimension also:
    Krippendorff's alpha among humans (ordinal and interval) with bootstrap CIs, as context;
    every rater pair sharing items (weighted kappa, Spearman with CI, exact agreement, MAE);
    mean judge-human vs human-human kappa (Kumar et al. 2025); the leave-one-rater-out ratio
    with an interval that resamples items and raters; alpha with the judge in the pool and
    its paired change. With a rater table: per-group means (CIs over raters) and rater-level
    permutation tests (the rater is the unit), Holm-corrected, and the judge's agreement
    with the individual raters of each group.

    \b
    Example:
      tide-bench audit --ratings human_ratings.csv --raters raters.csv \\
          --judgments runs/qwen0.5b/judge/judgments.jsonl --out audit/
    """
    from tide_bench.agreement import AuditOptions, run_audit

    options = AuditOptions(
        scale=_scale(scale),
        mapping=_mapping(maps),
        resamples=resamples,
        seed=seed,
        epsilon=epsilon,
        mixed_model=mixed_model,
    )
    result = run_audit(ratings, out, raters=raters, judgments=list(judgments), options=options)
    for dim, d in result["dimensions"].items():
        alpha = d["alpha"]["interval"]["value"]
        click.echo(
            f"{dim}: {d['n_items']} items, {len(d['raters'])} humans, "
            f"interval alpha {'n/a' if alpha is None else f'{alpha:.2f}'}"
        )
        for judge, j in d["judges"].items():
            click.echo(f"  {judge}: {j['verdict']}")
    click.echo(f"\nwritten: {out / 'agreement.md'}, {out / 'agreement.json'}, {out / 'agreement.svg'}")
