"""Rows 32-33 of the review: corpus distinct-n (and the length-robust rarefied distinct-n beside
it) and cosine similarity on long replies (windows, not truncation). Besides the definitions,
a seeded simulation of each: random Zipf generators writing short and long replies (row 32),
random long replies whose empathic content comes after the encoder's 256-piece window (row 33).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.calibration.conftest import Mode, record_check, record_value
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
    record_check(
        "32", "distinct-n definitions, corpus distinct-n is Li et al.'s; rarefied distinct-n is n/a below k n-grams"
    )


def test_row32_rarefaction_is_the_expected_distinct_count() -> None:
    """The closed form against drawing k n-grams without replacement, 4,000 times."""
    reply = _generator(1)
    replies = [reply(30) for _ in range(40)]
    words = [w for r in replies for w in r.split()]
    rng = np.random.default_rng(2)
    draws = [len({words[i] for i in rng.choice(len(words), 500, replace=False)}) / 500 for _ in range(4000)]
    se = np.std(draws) / np.sqrt(len(draws))
    assert abs(np.mean(draws) - rarefied_distinct(replies, 1, 500)["value"]) < 3 * se
    record_check(
        "32", "distinct-n definitions, rarefied distinct-n equals the mean distinct share of 4,000 draws of k n-grams"
    )


def test_row32_across_generators_rarefied_distinct_is_length_robust_and_corpus_distinct_is_not(mode: Mode) -> None:
    """Random generators (Zipf exponent 0.9-1.3, 2,000 or 5,000 words), each writing 200 short
    (20-30 words) and 200 long (100-140 words) replies: rarefied distinct-1/2 scores both alike
    (within 1.5 % on average, 5 % for 95 % of generators; the largest of 100 was 5.2 %), corpus
    distinct-1 of the long ones is well below the short ones' (what the page says: it ranks
    verbose models as less diverse)."""
    generators = mode.reps(12, 100)
    rng = np.random.default_rng(3200)
    gaps, ratios = [], []
    for _ in range(generators):
        exponent, size = rng.uniform(0.9, 1.3), int(rng.choice([2000, 5000]))
        vocab = np.array([f"w{i}" for i in range(size)])
        weights = 1 / np.arange(1, size + 1) ** exponent
        weights /= weights.sum()

        def reply(low: int, high: int, vocab=vocab, weights=weights) -> str:
            return " ".join(rng.choice(vocab, int(rng.integers(low, high + 1)), p=weights))

        short, long = [reply(20, 30) for _ in range(200)], [reply(100, 140) for _ in range(200)]
        for n in (1, 2):
            a, b = rarefied_distinct(short, n)["value"], rarefied_distinct(long, n)["value"]
            gaps.append(abs(b - a) / a)
        ratios.append(corpus_distinct(long, 1)["value"] / corpus_distinct(short, 1)["value"])
    record_value(
        "32",
        f"rarefied distinct-n mean |long - short| / short, {generators} generators",
        np.mean(gaps),
        generators,
        rate=False,
    )
    record_value(
        "32",
        f"rarefied distinct-n largest |long - short| / short, {generators} generators",
        max(gaps),
        generators,
        rate=False,
    )
    record_value(
        "32", f"corpus distinct-1 mean long / short, {generators} generators", np.mean(ratios), generators, rate=False
    )
    assert np.quantile(gaps, 0.95) <= 0.05 and np.mean(gaps) <= 0.015, (np.quantile(gaps, 0.95), np.mean(gaps))
    assert max(ratios) < 0.7


FILLER = [
    "Sometimes it helps to notice the small routines of the day.",
    "The coffee in the morning, the walk to the bus and the sound of traffic are all part of it.",
    "There is a list of groceries on the table and a few emails that need answers.",
    "The weather has been changing a lot this week, warm one day and cold the next.",
    "Some people like to plan their week on Sunday evening with a calendar.",
    "The library downtown has longer opening hours during the summer months.",
    "A neighbour repainted the fence last weekend in a pale shade of green.",
    "Trains run every fifteen minutes on weekdays and every half hour on Sundays.",
]
EMPATHIC = [
    "It makes sense that the noise brought you right back there; your body was trying to keep you safe.",
    "Feeling shaken and ashamed afterwards is a very human reaction to what you went through.",
    "It sounds exhausting to carry this every day, and it is understandable that you feel on edge.",
]
REFERENCE = (
    "It makes sense that the fireworks brought you right back there; your body is trying to protect you. "
    "Feeling shaken and ashamed afterwards is a very human reaction to what you went through."
)


def test_row33_cosine_embeds_a_long_reply_whole(mode: Mode) -> None:
    """Empathic content after all-MiniLM's 256-piece limit still counts (windows): the filler
    alone is far from the reference, the filler + reply much closer (0.448 vs 0.104). Then random
    long replies (18-35 neutral sentences, about 270-550 word pieces, then an empathic reply):
    the windowed cosine rises with the late reply in every draw; truncating at the encoder's
    window (what the model does by itself) sees nothing of it."""
    pytest.importorskip("sentence_transformers")
    from tide_bench.metrics.reference import ReferenceScorer

    reference = REFERENCE
    reply = "It's understandable that the fireworks took you back; your body was protecting you."
    filler = (
        "Sometimes it helps to notice the small routines of the day, the coffee in the morning, the walk to the bus, "
        "the sound of traffic, the list of groceries, the emails that need answers. "
    ) * 8
    scorer = ReferenceScorer()
    model = scorer.load_embedder()
    if model is None:
        pytest.skip("the embedding model is not installed")
    filler_only, padded = scorer.cosine([filler, filler + reply], [reference, reference])
    assert padded > filler_only + 0.15
    record_check(
        "33", "long replies embedded whole, a reply after 256 word pieces of filler still counts (0.448 vs 0.104)"
    )

    draws = mode.reps(12, 60)
    rng = np.random.default_rng(3300)
    gains, truncated = [], []
    before = scorer.windowed_texts
    for _ in range(draws):
        text = " ".join(rng.choice(FILLER, int(rng.integers(18, 36))))
        alone, with_reply = scorer.cosine([text, f"{text} {rng.choice(EMPATHIC)}"], [reference, reference])
        gains.append(with_reply - alone)
        cut = model.encode([text, f"{text} {EMPATHIC[0]}", reference], normalize_embeddings=True)
        truncated.append(float(cut[1] @ cut[2] - cut[0] @ cut[2]))
    label = f"{draws} random long replies (270-550 word pieces, then the reply)"
    record_value(
        "33", f"windowed cosine mean gain from the late reply, {label}", float(np.mean(gains)), draws, rate=False
    )
    record_value(
        "33", f"windowed cosine smallest gain from the late reply, {label}", float(min(gains)), draws, rate=False
    )
    record_value("33", f"truncated cosine largest gain from the late reply, {label}", max(truncated), draws, rate=False)
    assert scorer.windowed_texts - before >= draws  # every draw was long enough to need windows
    assert min(gains) > 0.001 and max(abs(t) for t in truncated) < 1e-4, (min(gains), max(truncated))
