"""``tide-bench submit`` and ``tide-bench leaderboard validate|build|pin``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tide_bench.cli.spellings import SpellingGroup

BOARD_HELP = "Leaderboard configuration (default: the shipped leaderboard/leaderboard.yaml)."


def _report(checks) -> bool:  # type: ignore[no-untyped-def]
    ok = True
    for check in checks:
        if check.ok:
            click.echo(f"OK       {check.id}")
        else:
            ok = False
            click.echo(f"REFUSED  {check.id}")
            for err in check.errors:
                click.echo(f"  - {err}")
    return ok


@click.command("submit")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--meta", required=True, type=click.Path(path_type=Path), help="submission.yaml (schema: leaderboard/schema/submission.schema.json).")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="The submissions folder, e.g. leaderboard/submissions/.")
@click.option("--judge-dir", type=click.Path(path_type=Path), default=None, help="Judge directory (default: RUN_DIR/judge).")
@click.option("--board", type=click.Path(path_type=Path), default=None, help=BOARD_HELP)
@click.option("--overwrite", is_flag=True, help="Replace an existing submission with the same id.")
def submit_cmd(run_dir: Path, meta: Path, out: Path, judge_dir: Path | None, board: Path | None, overwrite: bool) -> None:
    """Package a judged run as a leaderboard submission folder and validate it.

    Copies run.json, lm-eval's samples and results, and the judge's files into OUT/<id>/
    with your submission.yaml. Open a pull request with that one folder.

    \b
    Example:
      tide-bench submit runs/my-model --meta submission.yaml --out leaderboard/submissions/
    """
    from tide_bench.leaderboard import create_submission, load_board, validate_folder

    folder = create_submission(run_dir, meta, out, judge_dir=judge_dir, overwrite=overwrite)
    check = validate_folder(folder, load_board(board))
    click.echo(f"submission written: {folder}")
    if not _report([check]):
        click.echo("fix the problems above, then run `tide-bench leaderboard validate` again", err=True)
        sys.exit(1)


@click.group("leaderboard", cls=SpellingGroup)
def leaderboard() -> None:
    """Validate submissions and build the static leaderboard site."""


@leaderboard.command("validate")
@click.argument("submissions", type=click.Path(path_type=Path))
@click.option("--board", type=click.Path(path_type=Path), default=None, help=BOARD_HELP)
@click.option("--no-spot-checks", is_flag=True, help="Skip recomputing stored reference metrics from the reply text.")
def validate_cmd(submissions: Path, board: Path | None, no_spot_checks: bool) -> None:
    """Check one submission folder, or every folder in a submissions directory.

    Schema, completeness (one reply and one judgment or unscored record per item), dataset
    and judge configuration, ids and paths, size, and recomputation spot checks. Exits 1 if
    any submission is refused, printing what to fix.
    """
    from tide_bench.leaderboard import load_board, validate_many

    if not _report(validate_many(submissions, load_board(board), spot_checks=not no_spot_checks)):
        sys.exit(1)


@leaderboard.command("build")
@click.option("--submissions", required=True, type=click.Path(path_type=Path), help="Folder of submission folders.")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Site folder to (re)create: index.html, models/, leaderboard.json/.csv/.md.")
@click.option("--board", type=click.Path(path_type=Path), default=None, help=BOARD_HELP)
@click.option("--audit", type=click.Path(path_type=Path), default=None, help="agreement.json from `tide-bench audit`, stamped on the page.")
@click.option("--strict", is_flag=True, help="Fail if any submission is refused (default: list it as refused and build the rest).")
@click.option("--spot-checks", is_flag=True, help="Also recompute reference metrics from text (slower; CI does it in `validate`).")
def build_cmd(submissions: Path, out: Path, board: Path | None, audit: Path | None, strict: bool, spot_checks: bool) -> None:
    """Build the static site from the submissions (every number recomputed).

    \b
    Example:
      tide-bench leaderboard build --submissions leaderboard/submissions --out site/
    """
    from tide_bench.leaderboard import build_site, load_board

    result = build_site(submissions, out, load_board(board), audit=audit, strict=strict, spot_checks=spot_checks)
    click.echo(f"built {result.out / 'index.html'}: {len(result.accepted)} entries, {len(result.refused)} refused")
    for sid, errors in result.refused.items():
        click.echo(f"  refused {sid}: {'; '.join(errors)}")


@leaderboard.command("pin")
@click.option("--data", required=True, help="The TIDE snapshot the board uses (folder, 'hub', or 'sample').")
@click.option("--judge", "judge_name", default="claude-sonnet", show_default=True, help="The judge configuration every entry must use.")
@click.option("--board", required=True, type=click.Path(path_type=Path), help="The board YAML to update.")
def pin_cmd(data: str, judge_name: str, board: Path) -> None:
    """Pin a board to a dataset split (hash, size, item ids) and a judge configuration version."""
    import yaml

    from tide_bench.data import load_dataset
    from tide_bench.judging import load_judge
    from tide_bench.leaderboard import load_board
    from tide_bench.leaderboard.validate import item_ids_hash

    config = load_board(board)
    dataset = load_dataset(data)
    items = dataset.items_for(config.split)
    raw = yaml.safe_load(board.read_text(encoding="utf-8"))
    raw.update(split_sha256=dataset.content_hash(config.split), n_items=len(items), item_ids_sha256=item_ids_hash([i.item_id for i in items]),
               judge_version=load_judge(judge_name).version)
    board.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    click.echo(f"pinned {board}: split {config.split} ({len(items)} items), judge {judge_name} {raw['judge_version']}")
