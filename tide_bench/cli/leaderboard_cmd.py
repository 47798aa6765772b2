"""``tide-bench submit`` and ``tide-bench leaderboard validate|build|pin``."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tide_bench.cli import USER_ERROR_EXIT
from tide_bench.cli.options import board_option, judge_dir_option, out_option, overwrite_option
from tide_bench.cli.spellings import SpellingGroup

if TYPE_CHECKING:
    from tide_bench.leaderboard.submission.result import CheckResult

BOARD_HELP = "Leaderboard configuration (default: the shipped leaderboard/leaderboard.yaml)."
SEED_HELP = "Repeat an earlier embedding spot check: draw its items with this seed (printed by every check)."
NO_EMBEDDING_HELP = (
    "Skip the embedding spot check (re-embedding a random sample of replies with the board's embedding model). "
    "ROUGE-L, distinct-n and length are still recomputed on every item."
)


def _spot(check: CheckResult) -> str:
    spot = check.spot_check
    if spot is None:
        return "embedding spot check: not run"
    if not spot.items:
        return f"embedding spot check: {spot.note}"
    return (
        f"embedding spot check: {len(spot.items)} items re-embedded with {spot.embedding_model} "
        f"in {spot.seconds:.1f} s (seed {spot.seed})"
    )


def _report(checks: Iterable[CheckResult]) -> bool:
    ok = True
    for check in checks:
        if check.ok:
            n = len(check.submission.generations) if check.submission else 0
            embed = check.spot_check.seconds if check.spot_check else 0.0
            click.echo(
                f"OK       {check.id}  ({n} items; checked in {check.seconds:.1f} s, of which {embed:.1f} s "
                f"embedding; {_spot(check)})"
            )
        else:
            ok = False
            click.echo(f"REFUSED  {check.id}")
            for err in check.errors:
                click.echo(f"  - {err}")
        for warning in check.warnings:
            click.echo(f"  warning: {warning}")
    return ok


def _no_embedding_options(fn):  # type: ignore[no-untyped-def]
    fn = click.option("--spot-check-seed", type=int, default=None, metavar="SEED", help=SEED_HELP)(fn)
    fn = click.option(
        "--no-spot-checks", "no_spot_checks", is_flag=True, hidden=True, help="Old name of --no-embedding-check."
    )(fn)
    return click.option("--no-embedding-check", is_flag=True, help=NO_EMBEDDING_HELP)(fn)


@click.command("submit")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--meta",
    required=True,
    type=click.Path(path_type=Path),
    help="submission.yaml (schema: leaderboard/schema/submission.schema.json).",
)
@out_option("The submissions folder, e.g. leaderboard/submissions/.")
@judge_dir_option("Judge directory (default: RUN_DIR/judge).")
@board_option(
    "Leaderboard configuration to validate against (default: the shipped board; its demo board for `demo: true` "
    "metadata)."
)
@overwrite_option("Replace an existing submission with the same id (only after the new one validates).")
@click.option(
    "--risk-supplement",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The same model's judged run on the built-in risk supplement (`tide-bench eval ... --data risk-supplement "
    "--split all`, then `tide-bench judge` with the same judge), packaged as risk_supplement/; the shipped TIDE "
    "board requires it.",
)
@click.option(
    "--risk-supplement-judge",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The risk-supplement run's judge directory (default: its RUN/judge).",
)
@click.option(
    "--seeker-judge",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The run's judge directory with the seeker's view (`tide-bench judge RUN --rubric perceived --out DIR`), "
    "packaged as seeker_judge/: the board's \"Seeker's view\" column, beside the factors (not ranked on).",
)
@click.option(
    "--samples",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The same model's judged set of samples (`tide-bench eval ... --samples K --output-dir SET`, then "
    "`tide-bench judge SET --out judge`), packaged as samples/: the board's consistency columns, and its severe gate "
    "on every sample where the board sets severe_every_sample.",
)
@_no_embedding_options
def submit_cmd(
    run_dir: Path,
    meta: Path,
    out: Path,
    judge_dir: Path | None,
    board: Path | None,
    risk_supplement: Path | None,
    risk_supplement_judge: Path | None,
    seeker_judge: Path | None,
    samples: Path | None,
    overwrite: bool,
    no_embedding_check: bool,
    no_spot_checks: bool,
    spot_check_seed: int | None,
) -> None:
    """Package a judged run as a leaderboard submission folder, validated before it is written.

    Copies run.json, lm-eval's samples and results, and the judge's files into OUT/<id>/
    with your submission.yaml, replacing local paths of your machine (home and temporary
    folders, user names) by <local>/NAME: a submission is public. The folder is validated
    exactly as CI will validate it; a refused submission writes nothing. Then open a pull
    request with that one folder.

    The shipped TIDE board requires a risk battery: pass the same model's judged run on the
    built-in risk supplement with --risk-supplement (made with the same prompt condition and
    judge); it is checked like the main run and packaged as risk_supplement/.

    \b
    Example:
      tide-bench submit runs/my-model --meta submission.yaml --out leaderboard/submissions/ \\
          --risk-supplement runs/my-model-risk
    """
    from tide_bench.leaderboard import SubmissionRefused, create_submission, load_board

    try:
        check = create_submission(
            run_dir,
            meta,
            out,
            judge_dir=judge_dir,
            overwrite=overwrite,
            risk_supplement=risk_supplement,
            risk_supplement_judge=risk_supplement_judge,
            seeker_judge=seeker_judge,
            samples=samples,
            board=load_board(board) if board else None,
            spot_checks=not (no_embedding_check or no_spot_checks),
            seed=spot_check_seed,
        )
    except SubmissionRefused as refused:
        _report([refused.check])
        click.echo(f"nothing was written: fix {meta} (or the run) and run `tide-bench submit` again", err=True)
        sys.exit(USER_ERROR_EXIT)  # refused input, as every other command's
    _report([check])
    click.echo(f"submission written: {check.folder}")


@click.group("leaderboard", cls=SpellingGroup)
def leaderboard() -> None:
    """Validate submissions, build the static leaderboard site, pin a board to a release.

    \b
    Examples:
      tide-bench leaderboard validate leaderboard/submissions/
      tide-bench leaderboard build --submissions leaderboard/submissions --out site/
      tide-bench leaderboard build --submissions demo-output/submissions --board leaderboard/demo.yaml --out site/
    """


@leaderboard.command("validate")
@click.argument("submissions", type=click.Path(path_type=Path))
@board_option(BOARD_HELP)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document instead of the report (for CI scripts): each submission's id, ok, items, problems "
    "(message, path, line, field), warnings and spot check. The exit status is the same.",
)
@_no_embedding_options
def validate_cmd(
    submissions: Path,
    board: Path | None,
    as_json: bool,
    no_embedding_check: bool,
    no_spot_checks: bool,
    spot_check_seed: int | None,
) -> None:
    """Check one submission folder, or every folder in a submissions directory.

    Against --board, or the board `submit` picks: the shipped demo board when every entry's
    submission.yaml says `demo: true`, else the shipped TIDE board.

    Folder safety (no links, devices or oversize files; nothing outside the folder is
    read), schema and metadata against the run, the items recomputed (split membership
    by persona hash, split hash, item set), one judgment per item from the board's judge
    with keys that match the replies, the judge summary field by field, ROUGE-L,
    distinct-n and length recomputed on every item, an embedding spot check on randomly
    drawn items, no local paths, and the entries against each other (one item set, one
    judge, distinct names). Prints how long each check took and, separately, the
    embedding check. Exits 1 if any submission is refused, printing what to fix (with
    --json, as one JSON document).

    \b
    Examples:
      tide-bench leaderboard validate leaderboard/submissions/            # every entry, as CI does
      tide-bench leaderboard validate leaderboard/submissions/my-model --json
      tide-bench leaderboard validate demo-output/submissions --board leaderboard/demo.yaml
    """
    from tide_bench.leaderboard import load_board, validate_many
    from tide_bench.leaderboard.submission.submit import default_board_for
    from tide_bench.leaderboard.submission.validate import submission_folders

    t0 = time.perf_counter()
    chosen = load_board(board) if board else default_board_for(submission_folders(submissions))
    if board is None and chosen.demo and not as_json:
        click.echo(f"board: {chosen.name} (every entry says demo: true, as submit chose; --board to choose another)")
    checks = validate_many(
        submissions, chosen, spot_checks=not (no_embedding_check or no_spot_checks), seed=spot_check_seed
    )
    embed = sum(c.spot_check.seconds for c in checks if c.spot_check)
    seconds = time.perf_counter() - t0
    if as_json:
        ok = all(c.ok for c in checks)
        document = {"ok": ok, "seconds": round(seconds, 3), "submissions": [c.as_dict() for c in checks]}
        click.echo(json.dumps(document, indent=2))
    else:
        ok = _report(checks)
        click.echo(f"{len(checks)} submission(s) in {seconds:.1f} s (embedding spot checks: {embed:.1f} s of it)")
    if not ok:
        sys.exit(1)


@leaderboard.command("build")
@click.option("--submissions", required=True, type=click.Path(path_type=Path), help="Folder of submission folders.")
@out_option(
    "Site folder: new, empty, or a previous build's (it carries a .tide-bench-site marker). Replaced atomically."
)
@board_option(BOARD_HELP)
@click.option(
    "--audit",
    type=click.Path(path_type=Path),
    default=None,
    help="agreement.json from `tide-bench audit` of the board's judge, stamped on the page.",
)
@click.option(
    "--judges-board",
    type=click.Path(path_type=Path),
    default=None,
    help="A `tide-bench validation board` folder: each entry shows its judge's validation stamp (else 'judge not "
    "validated') and the board is linked as judges.html.",
)
@click.option(
    "--strict", is_flag=True, help="Fail if any submission is refused (default: list it as refused and build the rest)."
)
@click.option(
    "--spot-checks",
    is_flag=True,
    help="Also recompute the reference metrics (text metrics on every item, an embedding spot check); CI does it in "
    "`validate`.",
)
@click.option(
    "--no-instances",
    is_flag=True,
    help="Leave out the per-item replies, conversations and downloads (the site then holds no TIDE text).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes that prepare the entries side by side (read, check, score, write per-item files). Default: one "
    "per CPU; 1 does everything in this process. The site is the same either way.",
)
@click.option(
    "--probes-report",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="probes_report.json of the board's judge (`tide-bench judge --probes`): the safety gate's measured "
    "false-positive and false-negative rates stand beside its verdict (without it, and without an --audit with "
    "safety ratings, the page says 'not yet measured').",
)
@click.option(
    "--allow-risk-gate-off",
    is_flag=True,
    help="Publish a TIDE board whose risk gate is off (no entry carries labelled risk items) with a banner over the "
    "table; without it such a build is refused and writes nothing.",
)
def build_cmd(
    submissions: Path,
    out: Path,
    board: Path | None,
    audit: Path | None,
    judges_board: Path | None,
    strict: bool,
    spot_checks: bool,
    no_instances: bool,
    workers: int | None,
    probes_report: Path | None,
    allow_risk_gate_off: bool,
) -> None:
    """Build the static site from the submissions (every number recomputed).

    The site is written only into a new or empty folder, or over a site this command built
    before; a folder holding anything else, or holding the submissions, the board file or
    the audit, is refused. It holds index.html (ranking, table, judge-bias diagnostics,
    pairwise differences, replies), one page per model, the per-item data the pages load
    on demand (instances/), raw per-item downloads, and leaderboard.json/.csv/.md.

    A build that refuses every submission writes nothing and exits 2, naming the shipped
    board file that would accept them (the demo's runs: --board leaderboard/demo.yaml).

    Safety first: a TIDE board whose risk gate would be off (no entry answers the risk
    supplement and the board names no TIDE risk labels) is refused, writing nothing, unless
    --allow-risk-gate-off, which puts a banner over the table. A malformed adjudication file
    (severe_adjudication in the board file) refuses the build, naming its line and field.


    \b
    Example:
      tide-bench leaderboard build --submissions leaderboard/submissions --out site/
      tide-bench leaderboard build --submissions demo-output/submissions --board leaderboard/demo.yaml \\
          --out demo-output/site
    """
    from tqdm import tqdm

    from tide_bench.leaderboard import build_site, load_board

    with tqdm(desc="preparing entries", unit="entry", dynamic_ncols=True, leave=False, delay=0.5) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        result = build_site(
            submissions,
            out,
            load_board(board),
            audit=audit,
            judges_board=judges_board,
            strict=strict,
            spot_checks=spot_checks,
            instances=not no_instances,
            workers=workers,
            progress=progress,
            require_accepted=True,
            allow_risk_gate_off=allow_risk_gate_off,
            probes_report=probes_report,
        )
    click.echo(f"built {result.out / 'index.html'}: {len(result.accepted)} entries, {len(result.refused)} refused")
    for sid, errors in result.refused.items():
        click.echo(f"  refused {sid}: {'; '.join(errors)}")


@leaderboard.command("pin")
@click.option(
    "--data", required=True, help="The TIDE release the board uses (a snapshot folder, or 'hub:OWNER/NAME@REVISION')."
)
@click.option(
    "--judge",
    "judge_name",
    default="claude-sonnet",
    show_default=True,
    help="The judge configuration every entry must use.",
)
@board_option("The board YAML to update (its comments are kept).", required=True)
@click.option(
    "--served-model",
    default=None,
    help="The model the judge's API must report having served (e.g. a dated snapshot): entries judged by another "
    "are shown apart, unranked. Default: leave judge_served_model as it is.",
)
def pin_cmd(data: str, judge_name: str, board: Path, served_model: str | None) -> None:
    """Pin a board to one dataset release (split hash, size, item ids) and one judge configuration.

    Run it once per TIDE release, from a snapshot you trust, and commit the board file:
    from then on every entry's items are recomputed and compared with these pins.

    \b
    Example:
      tide-bench leaderboard pin --data ~/data/TIDE --board leaderboard/leaderboard.yaml
      git diff leaderboard/leaderboard.yaml     # the pins it wrote
    """
    from tide_bench.leaderboard.pin import pin_board

    pins = pin_board(board, data, judge_name, served_model)
    click.echo(
        f"pinned {board}: split {pins['split']} of {pins['dataset_release']} ({pins['n_items']} items), judge "
        f"{judge_name} {pins['judge_version']}"
    )


@leaderboard.command("template-hash")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--model", "models", multiple=True, required=True, help="A hub id whose template this is (repeatable).")
def template_hash_cmd(path: Path, models: tuple[str, ...]) -> None:
    """Print the entry that pins a model's chat template on a board.

    PATH is the model's tokenizer_config.json or chat_template.jinja, read at the revision the
    entries name (or an lm-eval results file, which records the template a run used). The board
    checks each chat-template prompt by rendering its own messages through the template, and
    accepts only templates its list pins (leaderboard/chat_templates.yaml, or the file the
    board's `chat_templates:` names). Read the template before you pin it: a template that prints
    an instruction would pass it to every entry that uses it.

    \b
    Example:
      tide-bench leaderboard template-hash ~/models/Qwen2.5-0.5B-Instruct/tokenizer_config.json \\
          --model Qwen/Qwen2.5-0.5B-Instruct >> leaderboard/chat_templates.yaml
    """
    from tide_bench.leaderboard.submission.chat_templates import template_entry

    click.echo(template_entry(path, list(models)).replace("- sha256", "  - sha256").replace("\n  ", "\n    "), nl=False)
