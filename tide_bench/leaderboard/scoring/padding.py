"""The padding probe: does the judge reward length itself?

The board's length slope (:func:`tide_bench.leaderboard.scoring.bias.length_bias`) is an association:
from observational scores no regression can tell "the judge rewards length" from "longer
replies are better here". A controlled perturbation can (Zheng et al. 2023, verbosity; Saito
et al. 2023): take an entry's own replies, append content-neutral padding that adds length and
nothing else, judge the padded copies with the same judge, and compare item by item. The
replies are the same, the items are the same, so any difference is the judge's response to
length (and to the padding's wording, which is why it is kept bland and fixed).

* :func:`pad_reply` appends :data:`NEUTRAL_PADDING` sentences (fixed, in order) until the reply
  has grown by at least the requested number of word tokens;
* :func:`padded_generations` gives padded copies of a run's generations (the same item ids), to
  be judged like any run;
* :func:`padding_effect` compares the two judgments: the paired difference padded minus
  original of the overall score as it counts, on the items counted in both, with a
  persona-cluster interval (expanded percentile) and a t test on the persona-robust standard
  error with P - 1 degrees of freedom. Its verdict: ``the judge rewards padding`` (interval
  above 0), ``the judge penalises padding`` (below 0) or ``no effect of padding shown``.

The probe answers for the padding used, at the length added: a judge may treat other
additions (repetition, lists, more questions) differently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from tide_bench.core.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    cluster_codes,
    cluster_mean_se,
    cluster_totals,
    clustered_means,
    t_pvalues,
)
from tide_bench.leaderboard.scoring.bias import MIN_PERSONAS, ItemTable
from tide_bench.metrics.reference import tokenize

NEUTRAL_PADDING = (
    "This reply continues with a few general remarks.",
    "The remarks below do not change what was said above.",
    "Conversations like this one can go in many directions.",
    "There is no single way to continue from here.",
    "Each part of a message can be read on its own.",
    "What follows is the end of this reply.",
)
DEFAULT_EXTRA_TOKENS = 40
VERDICTS = ("the judge rewards padding", "the judge penalises padding", "no effect of padding shown")


def pad_reply(reply: str, extra_tokens: int = DEFAULT_EXTRA_TOKENS) -> str:
    """``reply`` followed by neutral sentences adding at least ``extra_tokens`` word tokens."""
    if extra_tokens <= 0:
        return reply
    added: list[str] = []
    count = 0
    while count < extra_tokens:
        sentence = NEUTRAL_PADDING[len(added) % len(NEUTRAL_PADDING)]
        added.append(sentence)
        count += len(tokenize(sentence))
    return reply.rstrip() + "\n\n" + " ".join(added)


def padded_generations(generations: Sequence[Any], extra_tokens: int = DEFAULT_EXTRA_TOKENS) -> list[Any]:
    """Copies of ``generations`` (dataclasses with ``reply`` and ``metrics``) whose replies are
    padded; ``length_tokens`` is recomputed, the reference metrics are dropped (they describe
    the original reply)."""
    out = []
    for g in generations:
        reply = pad_reply(g.reply, extra_tokens)
        out.append(dataclasses.replace(g, reply=reply, metrics={"length_tokens": float(len(tokenize(reply)))}))
    return out


def padding_effect(
    original: ItemTable,
    padded: ItemTable,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """The paired effect of padding on the judge's overall score (padded minus original) on the
    items counted in both tables (aligned by item id, else by position), with its 95 %
    persona-cluster interval, the persona-robust t p-value and the verdict."""
    if original.item_ids is not None and padded.item_ids is not None:
        index = {item: j for j, item in enumerate(padded.item_ids)}
        rows = [(i, index[item]) for i, item in enumerate(original.item_ids) if item in index]
    elif len(original.personas) == len(padded.personas):
        rows = [(i, i) for i in range(len(original.personas))]
    else:
        raise ValueError("tables without item ids must have the same items in the same order")
    first = np.array([i for i, _ in rows], dtype=np.intp)
    second = np.array([j for _, j in rows], dtype=np.intp)
    difference = padded.counted[second] - original.counted[first]
    keep = np.isfinite(difference)
    personas = [original.personas[i] for i in first[keep]]
    codes, n_clusters = cluster_codes(personas)
    values = difference[keep]
    added = (padded.reply_tokens[second] - original.reply_tokens[first])[keep]
    (block,), _ = clustered_means(values, codes, n_clusters, resamples=resamples, seed=seed)
    mean, se, groups = cluster_mean_se(
        cluster_totals(codes, n_clusters, values), cluster_totals(codes, n_clusters, np.ones_like(values))
    )
    p = float(t_pvalues(mean, se, groups - 1.0)[0]) if values.size else None
    if block.ci_low is None or n_clusters < MIN_PERSONAS:
        verdict = f"no verdict: {n_clusters} personas (at least {MIN_PERSONAS}) or an undefined interval"
    elif block.ci_low > 0:
        verdict = VERDICTS[0]
    elif block.ci_high < 0:
        verdict = VERDICTS[1]
    else:
        verdict = VERDICTS[2]
    return {
        "difference": block.as_dict(),
        "p": p if p is None or np.isfinite(p) else None,
        "mean_tokens_added": float(added.mean()) if added.size else None,
        "n_items": int(values.size),
        "n_personas": n_clusters,
        "verdict": verdict,
        "method": "paired difference padded minus original of the overall score as it counts, items counted in "
        "both; 95% expanded percentile persona-cluster bootstrap; p: t on the persona-robust (CR1) standard error, "
        "P - 1 degrees of freedom",
    }
