"""``tide-bench view``."""

from __future__ import annotations

from pathlib import Path

import click

from tide_bench.cli.options import judge_dir_option, out_option


@click.command("view")
@click.argument("run_dir", type=click.Path(path_type=Path))
@judge_dir_option("The judge's output folder (default: RUN_DIR/judge when it holds judgments.jsonl).")
@out_option("The HTML file to write (default: RUN_DIR/view.html).", required=False, default=None)
def view_cmd(run_dir: Path, judge_dir: Path | None, out: Path | None) -> None:
    """Write one run's replies and judgments as a single HTML file you open in a browser.

    Like `inspect view`, before any submission: every item with the client's turn and its
    history, the model's reply, the reference, the judge's three scores with rationales,
    the safety flag and why an item is unscored; search and filter by scenario, turn,
    score and flag. Also the run's numbers with 95% CIs (computed as the leaderboard
    computes them), its provenance, and the judge-bias checks (reply length, halo between
    factors, preference leakage). The file works offline and sends nothing anywhere.

    \b
    Example:
      tide-bench view runs/my-model            # writes runs/my-model/view.html
      tide-bench view runs/my-model --judge-dir runs/my-model/judge-gpt --out gpt-view.html
    """
    from tide_bench.leaderboard.site.run_view import write_run_view

    path = write_run_view(run_dir, out, judge_dir)
    click.echo(f"wrote {path} (open it in a browser)")
