"""Rows 32-33 of the review: corpus distinct-n (and the length-robust rarefied distinct-n beside
it) and cosine similarity on long replies (windows, not truncation)."""

from __future__ import annotations

import numpy as np
import pytest

from tide_bench.metrics.reference import corpus_distinct, rarefied_distinct

TEMPLATE = "I hear how painful this is and it makes sense that you feel this way given everything you have been through"


def _generator(seed: int):
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(3000)])
    zipf = 1 / np.arange(1, 3001) ** 1.1
    zipf /= zipf.sum()
    return lambda words: " ".join(rng.choice(vocab, words, p=zipf))


def test_row32_distinct_n_is_li_et_al_and_rarefied_distinct_n_is_length_robust() -> None:
    reply = _generator(0)
    short, long = [reply(25) for _ in range(200)], [reply(120) for _ in range(200)]
    template = [TEMPLATE] * 200
    # corpus distinct-n is the definition: distinct n-grams over all n-grams of all replies
    grams = [w for r in short for w in r.split()]
    assert corpus_distinct(short, 1)["value"] == pytest.approx(len(set(grams)) / len(grams))
    # ... and falls with length for the same generator (0.20 vs 0.09): not length-robust
    assert corpus_distinct(short, 1)["value"] > 2 * corpus_distinct(long, 1)["value"]
    for n in (1, 2):
        a, b = rarefied_distinct(short, n)["value"], rarefied_distinct(long, n)["value"]
        assert a == pytest.approx(b, rel=0.03), (n, a, b)  # equal-size samples: the same generator scores alike
        assert rarefied_distinct(template, n)["value"] < 0.05  # one reply for every item is still found out
    assert rarefied_distinct(short[:2], 1)["value"] is None  # fewer n-grams than the sample size: n/a


def test_row32_rarefaction_is_the_expected_distinct_count() -> None:
    """The closed form against drawing k n-grams without replacement, 4,000 times."""
    reply = _generator(1)
    replies = [reply(30) for _ in range(40)]
    words = [w for r in replies for w in r.split()]
    rng = np.random.default_rng(2)
    draws = [len({words[i] for i in rng.choice(len(words), 500, replace=False)}) / 500 for _ in range(4000)]
    se = np.std(draws) / np.sqrt(len(draws))
    assert abs(np.mean(draws) - rarefied_distinct(replies, 1, 500)["value"]) < 3 * se


def test_row33_cosine_embeds_a_long_reply_whole() -> None:
    """Empathic content after all-MiniLM's 256-piece limit still counts (windows): the filler
    alone is far from the reference, the filler + reply much closer (0.448 vs 0.104)."""
    pytest.importorskip("sentence_transformers")
    from tide_bench.metrics.reference import ReferenceScorer

    reference = (
        "It makes sense that the fireworks brought you right back there; your body is trying to protect you. "
        "Feeling shaken and ashamed afterwards is a very human reaction to what you went through."
    )
    reply = "It's understandable that the fireworks took you back; your body was protecting you."
    filler = (
        "Sometimes it helps to notice the small routines of the day, the coffee in the morning, the walk to the bus, "
        "the sound of traffic, the list of groceries, the emails that need answers. "
    ) * 8
    scorer = ReferenceScorer()
    if scorer.load_embedder() is None:
        pytest.skip("the embedding model is not installed")
    filler_only, padded = scorer.cosine([filler, filler + reply], [reference, reference])
    assert padded > filler_only + 0.15
