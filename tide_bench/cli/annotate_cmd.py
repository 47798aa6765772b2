"""``tide-bench annotate build|collect``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tide_bench.cli.spellings import SpellingGroup


@click.group("annotate", cls=SpellingGroup)
def annotate() -> None:
    """Collect human ratings with offline, blinded annotation pages."""


@annotate.command("build")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--per-rater", type=int, default=40, show_default=True, help="Items per rater (before repeats).")
@click.option("--raters", type=int, default=5, show_default=True, help="Number of raters (pages).")
@click.option("--overlap", type=int, default=3, show_default=True, help="Raters per item (alpha needs overlap).")
@click.option("--repeats", type=int, default=2, show_default=True, help="Items shown twice to each rater (self-consistency).")
@click.option("--seed", type=int, default=20250521, show_default=True)
@click.option("--title", default="Rating supportive replies", show_default=True)
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Folder for assignment.json and rater-N.html.")
def build_cmd(runs: tuple[Path, ...], per_rater: int, raters: int, overlap: int, repeats: int, seed: int, title: str, out: Path) -> None:
    """Draw items from run directories (stratified by scenario and turn, model hidden) and write
    one self-contained page per rater plus the assignment plan.

    Send each rater their rater-N.html: it works offline and nothing leaves their machine;
    they download a ratings file at the end. Keep assignment.json: it maps items to models.

    \b
    Example:
      tide-bench annotate build runs/model-a runs/model-b --per-rater 40 --raters 5 --out annotation/
    """
    from tide_bench.annotation import AssignmentOptions, build_annotation

    a = build_annotation(list(runs), out, AssignmentOptions(per_rater=per_rater, raters=raters, overlap=overlap, repeats=repeats, seed=seed, title=title))
    click.echo(f"{len(a['units'])} items, {len(a['raters'])} pages ({per_rater + repeats} items each), every item rated by {overlap} raters")
    click.echo(f"written: {out / 'assignment.json'} and {', '.join(p['file'] for p in a['pages'].values())}")


@annotate.command("collect")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--assignment", type=click.Path(path_type=Path), default=None, help="assignment.json (default: found next to the files or one folder up).")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Long-format ratings CSV for `tide-bench audit --ratings`.")
@click.option("--raters-out", type=click.Path(path_type=Path), default=None, help="Rater table CSV for `tide-bench audit --raters`.")
def collect_cmd(files: tuple[Path, ...], assignment: Path | None, out: Path, raters_out: Path | None) -> None:
    """Check returned ratings files against the assignment and merge them.

    Reports wrong raters, missing items, changed (checksum) or duplicate files and
    out-of-scale values; prints coverage (items with the target number of raters) and each
    rater's self-consistency on repeated items. Exits 1 if any file was refused.
    """
    from tide_bench.annotation.collect import collect_returns, report, write_outputs

    collection = collect_returns(list(files), assignment_path=assignment)
    write_outputs(collection, out, raters_out)
    click.echo(report(collection))
    if collection.refused:
        sys.exit(1)
