"""``tide-bench audit``."""

from __future__ import annotations

from pathlib import Path

import click

from tide_bench.core.errors import ConfigError


def _scale(text: str) -> tuple[float, float] | None:
    if text.lower() == "none":
        return None
    try:
        lo, hi = (float(x) for x in text.split("-", 1))
    except ValueError:
        raise ConfigError(f"--scale must look like 1-5, got {text!r}") from None
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
@click.option("--ratings", required=True, type=click.Path(path_type=Path), help="Long-format ratings, CSV or JSONL: item_id, rater_id, dimension, score.")
@click.option("--raters", type=click.Path(path_type=Path), default=None, help="Rater table (CSV/JSONL): rater_id plus any columns (age_group, gender, education, role...).")
@click.option("--judgments", multiple=True, type=click.Path(path_type=Path), help="A judge's judgments.jsonl; repeatable. Each judge becomes a rater.")
@click.option("--map", "maps", multiple=True, metavar="HUMAN=JUDGE", help="Rename a human dimension to the judge's factor name; repeatable.")
@click.option("--scale", default="1-5", show_default=True, help="Valid score range (MIN-MAX); 'none' to accept any number.")
@click.option("--resamples", type=int, default=1000, show_default=True, help="Bootstrap resamples over items.")
@click.option("--seed", type=int, default=20250521, show_default=True)
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Folder for agreement.json, agreement.md and agreement.png.")
def audit_cmd(ratings: Path, raters: Path | None, judgments: tuple[Path, ...], maps: tuple[str, ...], scale: str, resamples: int, seed: int, out: Path) -> None:
    """Judge-human agreement: can this judge stand in for people, on which factor, for whom?

    Per dimension: Krippendorff's alpha among humans (ordinal and interval) with bootstrap
    CIs; every rater pair (weighted kappa, Spearman with CI, exact agreement, MAE); each
    judge against the human consensus and each human, alpha with the judge in the pool, and
    its agreement relative to the human-human ceiling (leave-one-rater-out). With a rater
    table: mean ratings per group, Mann-Whitney / Kruskal-Wallis with effect sizes and Holm
    correction, and the judge's agreement with each group.

    \b
    Example:
      tide-bench audit --ratings human_ratings.csv --raters raters.csv \\
          --judgments runs/qwen0.5b/judge/judgments.jsonl --out audit/
    """
    from tide_bench.agreement import AuditOptions, run_audit

    options = AuditOptions(scale=_scale(scale), mapping=_mapping(maps), resamples=resamples, seed=seed)
    result = run_audit(ratings, out, raters=raters, judgments=list(judgments), options=options)
    for dim, d in result["dimensions"].items():
        alpha = d["alpha"]["interval"]["value"]
        click.echo(f"{dim}: {d['n_items']} items, {len(d['raters'])} humans, interval alpha {'n/a' if alpha is None else f'{alpha:.2f}'}")
        for judge, j in d["judges"].items():
            click.echo(f"  {judge}: {j['verdict']}")
    click.echo(f"\nwritten: {out / 'agreement.md'}, {out / 'agreement.json'}, {out / 'agreement.png'}")
