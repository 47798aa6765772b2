"""``tide-bench robustness``: persona-swap minimal pairs and the paired difference of an entry's replies."""

from __future__ import annotations

import json
from pathlib import Path

import click

from tide_bench.cli.options import data_option, path_option, split_option

PER_PERSONA_HELP = "First-turn items per persona and attribute (each becomes one pair: two items)."
SEED_HELP = "Chooses each persona's items (by a hash of seed, persona and attribute): the same seed, the same set."


@click.group("robustness")
def robustness() -> None:
    """Robustness to a stated identity: the same client message under two personas that differ
    in one attribute (age group, gender, religious or cultural frame), answered by a model and
    judged as usual; the paired difference per attribute with a persona-clustered simultaneous CI.

    \b
    Examples:
      tide-bench robustness pairs --data sample --split all --out pairs.jsonl   # look at the set
      tide-bench eval --tasks tide_empathy_persona_swap --data sample --split all \\
          --model-args pretrained=demo --output-dir runs/swap                  # both sides, via lm-eval
      tide-bench judge runs/swap --out runs/swap/judge                         # the normal judge
      tide-bench robustness report runs/swap/judge --data sample --split all   # shifts, CIs, verdict
      tide-bench judge --swap-check --out swap-check/                          # is the judge itself biased?

    The attributes and sentences are data: tide_bench/data/persona_swaps.yaml (docs/robustness.md).
    """


@robustness.command("pairs")
@data_option
@split_option
@click.option("--per-persona", type=int, default=1, show_default=True, help=PER_PERSONA_HELP)
@click.option("--seed", type=int, default=49, show_default=True, help=SEED_HELP)
@path_option("--out", "Write every swap item as one JSON line here (default: a summary on stdout only).")
def pairs_cmd(data: str | None, split: str, per_persona: int, seed: int, out: Path | None) -> None:
    """Build the persona-swap minimal pairs of a dataset split and say what could not be swapped.

    Each pair is one of the persona's first client messages, rendered twice with one sentence
    before it ("I'm a woman." / "I'm a man."); items are chosen deterministically. A persona
    whose metadata lack the attribute (or give a value on neither side) is listed as not
    estimable for it, with the reason. The same set is what the tide_empathy_persona_swap task
    answers (its --metadata takes swap_per_persona and swap_seed).

    \b
    Example:
      tide-bench robustness pairs --data sample --split all --out pairs.jsonl
    """
    from tide_bench.core.jsonio import write_jsonl
    from tide_bench.data.persona_swap import build_swap_set
    from tide_bench.data.sources import load_dataset

    swaps = build_swap_set(load_dataset(data).items_for(split), per_persona=per_persona, seed=seed)
    if out is not None:
        write_jsonl(out, [item.to_doc() for item in swaps.items])
    click.echo(json.dumps(swaps.provenance, indent=2))
    for skipped in swaps.not_estimable:
        click.echo(f"not estimable: persona {skipped['persona']}, {skipped['attribute']}: {skipped['reason']}")


@robustness.command("report")
@click.argument("judge_dir", type=click.Path(path_type=Path))
@click.option(
    "--data",
    default=None,
    metavar="SOURCE",
    help="The data the run answered: every pair of its set is then accounted for.",
)
@split_option
@click.option("--per-persona", type=int, default=1, show_default=True, help=PER_PERSONA_HELP)
@click.option("--seed", type=int, default=49, show_default=True, help=SEED_HELP)
@path_option("--rubric", "The judge's rubric file, when the judgments are not of the default rubric (v4).")
@path_option("--out", "Folder for robustness.json and robustness.md (default: JUDGE_DIR).")
def report_cmd(
    judge_dir: Path, data: str | None, split: str, per_persona: int, seed: int, rubric: Path | None, out: Path | None
) -> None:
    """The paired difference of a judged tide_empathy_persona_swap run, per attribute.

    Per attribute (age group, gender, religious and cultural frame) and measure (safety-adjusted
    score, safety-flag rate): the mean of side a minus side b over the pairs, with a simultaneous
    95% interval (persona-clustered; wild cluster bootstrap max-T over every attribute and both
    measures), and one verdict: "no shift shown" or "shift of X [CI]". An attribute with pairs
    from fewer than 10 personas is reported without an interval. Pairs with a side missing or
    unscored, and (with --data) personas the set could not swap, are listed as not estimable.

    \b
    Example:
      tide-bench robustness report runs/swap/judge --data sample --split all
    """
    from tide_bench.data.persona_swap import build_swap_set
    from tide_bench.data.sources import load_dataset
    from tide_bench.judging.persona_swap import format_robustness, robustness_of_dir
    from tide_bench.judging.rubric import load_rubric

    swaps = build_swap_set(load_dataset(data).items_for(split), per_persona=per_persona, seed=seed) if data else None
    report = robustness_of_dir(judge_dir, rubric=load_rubric(rubric) if rubric else None, swaps=swaps, out=out)
    click.echo(format_robustness(report))
