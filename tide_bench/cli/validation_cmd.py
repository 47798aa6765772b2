"""``tide-bench validation``: audit a judge against public expert ratings (docs/validation.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tide_bench.cli.options import judge_options, judge_overrides, out_option, spend_options
from tide_bench.cli.spellings import SpellingGroup
from tide_bench.core.stats import DEFAULT_RESAMPLES


@click.group("validation", cls=SpellingGroup)
def validation() -> None:
    """Audit a judge against public expert ratings: no recruiting needed.

    A validation pack is a public set of expert ratings of replies to people in distress
    (MentalAlign-70k, AnnoMI, CounselBench-Eval), declared as a data file: upstream repository,
    pinned revision, sha256 of every file, licence, and which TIDE factor each rated attribute
    stands in for. These are out-of-domain checks (not PTSD conversations): every report says so.
    The EPITOME pack (the authors' labelled Reddit replies) audits the EPITOME judge
    (--rubric epitome) on its own three mechanisms, beside the local EPITOME scorer
    (--judge-ratings MODEL_DIR) and the published classifiers: accuracy, macro-F1 and QWK.

    \b
    Examples (the workflow, in order):
      tide-bench validation list
      tide-bench validation fetch annomi --accept-licence          (offline: --from PATH)
      tide-bench validation report mentalalign --judge-ratings published --csv m.csv
      tide-bench validation run annomi --judge local --model M --base-url URL --out runs/annomi-M
      tide-bench validation report annomi --judge-ratings runs/annomi-M --json annomi.json
      tide-bench validation board --report annomi.json --report m.json --out judges-board/
    """


@validation.command("list")
def list_cmd() -> None:
    """List the packs: design, licence, what may leave your cache, and whether it is fetched.

    \b
    Example:
      tide-bench validation list
    """
    from tide_bench.validation import available_packs, load_pack
    from tide_bench.validation.store import PACK_RECORD, pack_root

    for name in available_packs():
        pack = load_pack(name)
        fetched = "fetched" if (pack_root(pack) / PACK_RECORD).is_file() else "not fetched"
        click.echo(f"{name:13} {pack.title}")
        click.echo(f"{'':13} {pack.design}")
        click.echo(
            f"{'':13} licence: {pack.licence_id}; redistribution: {pack.redistribution}; "
            f"{pack.repo}@{pack.revision[:12]}; {fetched}"
        )
        for d in pack.dimensions:
            click.echo(f"{'':15} {d.mapping_line()}")


class _Bytes:
    """A download bar per file (click), closed when the next file starts."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.label: str | None = None
        self.done = 0

    def __call__(self, label: str, done: int, total: int | None) -> None:
        if label != self.label:
            self.close()
            self.label, self.done = label, 0
            self.bar = click.progressbar(length=total or 0, label=label[-40:], file=click.get_text_stream("stderr"))
            self.bar.__enter__()
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _show_licence(path: Path) -> None:
    """Print a plain-text licence; name a binary one (EPITOME's are .docx) instead of dumping it."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\0" in text:
        click.echo(f"licence: {path} (not plain text: open it to read the terms)", err=True)
    else:
        click.echo(text, err=True)


@validation.command("fetch")
@click.argument("pack")
@click.option("--accept-licence", is_flag=True, help="Accept the pack's licence (printed first); required.")
@click.option(
    "--from",
    "source",
    type=click.Path(path_type=Path),
    default=None,
    help="A local copy of the upstream files (git clone, archive or folder) instead of the network.",
)
@click.option(
    "--base-url",
    default=None,
    metavar="URL",
    help="Download from this host instead of the pack's (a mirror; $TIDE_BENCH_VALIDATION_BASE_URL).",
)
@click.option("--allow-unpinned", is_flag=True, help="Accept files the manifest has no hash for (recorded as such).")
@click.option("--force", is_flag=True, help="Fetch again even if a checked copy is cached.")
def fetch_cmd(
    pack: str, accept_licence: bool, source: Path | None, base_url: str | None, allow_unpinned: bool, force: bool
) -> None:
    """Download PACK at its pinned revision into your cache, checking every file's hash.

    Prints the licence first; nothing is downloaded without --accept-licence. A wrong hash, a
    truncated file or an interrupted download leaves nothing half-written (the pack appears in
    the cache only when complete). Files of a pack that may not be redistributed never leave
    the cache: run folders hold ids and scores only.

    \b
    Examples:
      tide-bench validation fetch mentalalign --accept-licence
      tide-bench validation fetch annomi --accept-licence --from ~/src/AnnoMI
      tide-bench validation fetch annomi --accept-licence --from AnnoMI-main.zip
      tide-bench validation fetch counselbench --accept-licence --allow-unpinned --from CounselBench-Eval/
    """
    from tide_bench.validation import fetch_pack

    bar = _Bytes()
    try:
        fetched = fetch_pack(
            pack,
            accept_licence=accept_licence,
            source=source,
            base_url=base_url,
            allow_unpinned=allow_unpinned,
            force=force,
            progress=bar,
            notice=lambda text: click.echo(text, err=True),
        )
    finally:
        bar.close()
    licence = fetched.path("licence")
    if licence is not None and licence.suffix.lower() not in (".md",):
        _show_licence(licence)
    missing = fetched.record.get("missing") or []
    click.echo(f"fetched {pack} into {fetched.root} ({len(fetched.record['files'])} files checked)")
    for path in missing:
        click.secho(f"note: optional file not fetched: {path} (see docs/validation.md)", fg="yellow", err=True)


@validation.command("run")
@click.argument("pack")
@judge_options("Judge configuration.")
@click.option(
    "--rubric",
    default=None,
    metavar="v1|v2|v3|v4|epitome",
    help="Rubric version (default: the pack's own, e.g. epitome for the EPITOME pack; else the configuration's, "
    "v4). Validate the configuration the board uses: its stamp is keyed by the configuration version, which "
    "hashes the rubric. A pack whose threshold was read off some rubrics' anchors refuses the others "
    "(judge_rubrics in its manifest).",
)
@click.option("--family", default=None, help="The judge model's family (self-family replies are left out).")
@out_option("The run folder (ids and scores only).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Judge only the first N items.")
@spend_options()
def run_cmd(
    pack: str,
    judge_name: str,
    cross_origin: bool,
    model: str | None,
    base_url: str | None,
    rubric: str | None,
    family: str | None,
    out: Path,
    limit: int | None,
    max_cost: float | None,
    concurrency: int | None,
) -> None:
    """Have a judge rate PACK's replies (one message + one reply each, no persona).

    The judge sees the pack's texts: a hosted judge sends them to its provider (docs/privacy.md);
    --judge local keeps them on your machine. The full judgments, which quote the texts, stay in
    the cache; --out receives ids, scores, flags and usage only, ready for `validation report`.
    Cached judgments are reused, so an interrupted run resumes.

    \b
    Examples:
      tide-bench validation run annomi --judge claude-sonnet --out runs/annomi-claude --max-cost 5
      tide-bench validation run annomi --judge local --model SmolLM2-135M-Instruct \\
          --base-url http://127.0.0.1:8765/v1 --family smollm --out runs/annomi-smollm2
    """
    from tide_bench.cli.judge_cmd import _ProgressBar
    from tide_bench.judging import JudgeOptions, check_budget, load_judge
    from tide_bench.validation import load_pack, run_pack

    config = load_judge(
        judge_name,
        model=model,
        base_url=base_url,
        rubric=rubric or load_pack(pack).rubric,
        overrides={"concurrency": concurrency, "family": family} | judge_overrides(cross_origin),
    )
    check_budget(config, max_cost)
    bar = _ProgressBar()
    try:
        result = run_pack(
            pack,
            config,
            out,
            JudgeOptions(max_cost=max_cost, on_progress=bar.update, on_event=lambda t: click.echo(t, err=True)),
            limit=limit,
        )
    finally:
        bar.close()
    unscored = result["summary"].get("unscored_reasons") or {}
    click.echo(f"judged {result['n_items']} items of {pack} ({result['calls_made']} calls); unscored: {unscored or 0}")
    for warning in result["warnings"]:
        click.secho(f"warning: {warning}", fg="yellow", err=True)
    click.echo(f"written: {out} (report it: tide-bench validation report {pack} --judge-ratings {out})")


def _ci(block: dict[str, Any] | None) -> str:
    if not block or block.get("value") is None:
        return "n/a"
    if block.get("ci_low") is None:
        return f"{block['value']:.3f}"
    return f"{block['value']:.3f} [{block['ci_low']:.2f}, {block['ci_high']:.2f}]"


def _categorical_table(name: str, rep: dict[str, Any]) -> str:
    """Judges, local models and published classifiers side by side: accuracy, macro-F1, QWK."""
    head = f"{'':44} {'dimension':20} {'n':>5} {'unsc.':>5} {'accuracy':>20} {'macro-F1':>20} {'QWK':>20}"
    lines = [f"{name}: per dimension, 95 % intervals resampling {rep['bootstrap']['unit']}", head]
    for judge, block in rep["judges"].items():
        label = f"{judge} ({block['model']})" if block.get("kind") == "judge" and block.get("model") else judge
        for dim, s in block["dimensions"].items():
            lines.append(
                f"{label[:44]:44} {dim[:20]:20} {s['n']:>5} {block['n_unscored']:>5} {_ci(s.get('accuracy')):>20} "
                f"{_ci(s.get('macro_f1')):>20} {_ci(s.get('qwk')):>20}"
            )
            rationales = s.get("rationales")
            if rationales and rationales.get("n"):
                lines.append(
                    f"{'':44} {'':20} {rationales['n']:>5} {'':>5} rationale T-F1 {_ci(rationales['token_f1'])}, "
                    f"IOU-F1 {_ci(rationales['iou_f1'])}"
                )
    for figure in rep.get("published_figures") or []:
        values = figure["values"]
        for dim in rep["dimensions"]:
            cells = [values.get(stat, {}).get(dim) for stat in ("accuracy", "macro_f1", "qwk")]
            text = ["n/a" if v is None else f"{v:.3f} (published)" for v in cells]
            lines.append(
                f"{figure['name'][:44]:44} {dim[:20]:20} {'':>5} {'':>5} {text[0]:>20} {text[1]:>20} {text[2]:>20}"
            )
    for figure in rep.get("published_figures") or []:
        lines.append(f"  {figure['name']}: {figure['status']}")
    return "\n".join(lines)


def _table(report: dict[str, Any]) -> str:
    """The rating packs' table on the console: n, the means, and bias and QWK with their 95 % intervals
    (the same numbers as --json; an interval that cannot be computed shows as n/a)."""
    from tide_bench.core.stats import format_estimate

    packs = report["packs"] if "packs" in report else {report["pack"]: report}
    categorical = {name for name, rep in packs.items() if "accuracy" in (rep.get("statistics") or [])}

    def f(block: Any, signed: bool = False) -> str:
        shown = format_estimate(block, key="value", signed=signed, no_ci=" [n/a]") if block else None
        return shown or "n/a"

    def mean(block: Any) -> str:
        value = block.get("value") if isinstance(block, dict) else None
        return "n/a" if value is None else f"{value:.2f}"

    lines = [
        f"{'pack':12} {'judge':28} {'dimension':18} {'n':>6} {'human':>6} {'judge':>6} "
        f"{'bias [95% CI]':>22} {'QWK [95% CI]':>20}"
    ]
    for name, rep in packs.items():
        if name in categorical:
            continue
        for judge, block in rep["judges"].items():
            for dim, s in block["dimensions"].items():
                lines.append(
                    f"{name:12} {str(judge)[:28]:28} {dim[:18]:18} {s['n']:>6} {mean(s.get('human_mean')):>6} "
                    f"{mean(s.get('judge_mean')):>6} {f(s.get('bias'), signed=True):>22} {f(s.get('qwk')):>20}"
                )
    tables = [_categorical_table(name, packs[name]) for name in sorted(categorical)]
    if len(packs) > len(categorical):  # some pack is not categorical: the rating table
        tables.insert(0, "\n".join(lines))
    return "\n\n".join(tables)


@validation.command("report")
@click.argument("packs", nargs=-1, required=True)
@click.option(
    "--judge-ratings",
    "sources",
    multiple=True,
    default=("published",),
    show_default=True,
    metavar="published|RUN_DIR|MODEL_DIR",
    help="'published': the judge ratings a pack ships; a `validation run` folder; or, for the epitome "
    "pack, a local EPITOME scorer folder (its cross-validated levels). Repeatable.",
)
@click.option(
    "--mode",
    type=click.Choice(["tide", "authors"]),
    default="tide",
    show_default=True,
    help="'authors': the dataset authors' own handling (MentalAlign), to reproduce their published table.",
)
@click.option("--csv", "csv_path", type=click.Path(path_type=Path), default=None, help="Write the per-row CSV here.")
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Write the full report here.")
@click.option(
    "--resamples",
    type=click.IntRange(min=100),
    default=DEFAULT_RESAMPLES,
    show_default=True,
    help="Bootstrap resamples.",
)
def report_cmd(
    packs: tuple[str, ...],
    sources: tuple[str, ...],
    mode: str,
    csv_path: Path | None,
    json_path: Path | None,
    resamples: int,
) -> None:
    """Agreement of each judge with each pack's experts, per upstream dimension.

    n, human mean, judge mean, signed bias, MSE, RMSE, quadratic-weighted kappa and Spearman,
    each with a 95 % bootstrap interval over the pack's cluster; for multi-rater packs the
    alternative annotator test (epsilon stated; the authors' combined-annotator mode and
    Wilcoxon fallback where raters rate fewer than 30 items) and the human baseline (each
    expert as the judge, and a randomised control); over several packs, FDR across packs and
    "passes in X of Y packs". A judge is never scored on replies of its own model family.

    The CSV has exactly the columns pack,judge,dimension,n,human_mean,judge_mean,bias,mse,rmse,
    qwk,spearman; --json holds everything, with intervals and provenance.

    \b
    Examples:
      tide-bench validation report mentalalign --mode authors --csv mentalalign-authors.csv
      tide-bench validation report annomi --judge-ratings runs/annomi-smollm2 --json annomi.json
      tide-bench validation report epitome --judge-ratings runs/epitome-claude \\
          --judge-ratings models/epitome --json epitome.json
      tide-bench validation report mentalalign annomi --judge-ratings published \\
          --judge-ratings runs/annomi-smollm2 --json all.json
    """
    from tide_bench.validation import report_packs, write_report

    with click.progressbar(
        length=len(packs), label="reading the packs and ratings", file=click.get_text_stream("stderr")
    ) as bar:
        report = report_packs(list(packs), list(sources), mode=mode, resamples=resamples, step=bar.update)
    write_report(report, json_path=json_path, csv_path=csv_path)
    click.echo(_table(report))
    for judge, summary in report["across_packs"].items():
        click.echo(f"alt-test, {judge}: {summary['summary']}")
    for name, rep in report["packs"].items():
        for dim, b in (rep.get("human_baseline") or {}).items():
            click.echo(
                f"human baseline, {name}/{dim}: {b['n_passed']} of {b['n']} experts pass as the judge; "
                f"{b['n_randomised_passed']} of {b['n']} randomised controls pass"
            )
        click.echo(f"{name}: {rep['out_of_domain']}")
    for path in (json_path, csv_path):
        if path:
            click.echo(f"written: {path}")


@validation.command("board")
@click.option(
    "--report",
    "reports",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path),
    help="A `validation report --json` file; repeatable.",
)
@out_option("The board folder (replaced atomically).")
def board_cmd(reports: tuple[Path, ...], out: Path) -> None:
    """Build the static judges board: one row per judge configuration.

    Agreement per pack on the attributes that stand in for TIDE's factors, the alt-test
    ("passes in X of Y packs"), bias, $ per 1,000 items, the length-bias slope; shipped judge
    configurations no report covers say "not run". judges.json holds the stamps that
    `tide-bench leaderboard build --judges-board DIR` shows beside every entry.

    \b
    Example:
      tide-bench validation board --report annomi.json --report mentalalign.json --out judges-board/
    """
    from tide_bench.validation.board import build_board

    data = build_board(list(reports), out)
    click.echo(f"built {out / 'index.html'}: {len(data['rows'])} judge rows over {len(data['packs'])} pack(s)")
