"""Reference metrics on hand-checkable pairs, and the bootstrap summary."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tide_bench.core.stats import mean_ci
from tide_bench.metrics.reference import ReferenceScorer, distinct_n, summarize_metrics, tokenize


@pytest.fixture(scope="module")
def scorer() -> ReferenceScorer:
    return ReferenceScorer()


def test_tokenize_and_distinct_by_hand() -> None:
    assert tokenize("It's OK, ok.") == ["it", "'", "s", "ok", ",", "ok", "."]
    tokens = ["a", "a", "a", "b"]
    assert distinct_n(tokens, 1) == pytest.approx(2 / 4)
    assert distinct_n(tokens, 2) == pytest.approx(2 / 3)  # (a a), (a a), (a b)
    assert math.isnan(distinct_n(["a"], 2))


def test_identical_reply_scores_one(scorer: ReferenceScorer) -> None:
    text = "That sounds frightening, and your reaction makes sense."
    (row,) = scorer.score([text], [text])
    assert row["rouge_l"] == pytest.approx(1.0)
    assert row["cosine_sim"] == pytest.approx(1.0, abs=1e-4)
    assert row["length_tokens"] == 10


def test_rouge_l_by_hand(scorer: ReferenceScorer) -> None:
    # reference "the cat sat on the mat" (6), reply "the cat lay on a mat" (6); LCS = the cat on mat = 4
    (row,) = scorer.score(["the cat lay on a mat"], ["the cat sat on the mat"])
    assert row["rouge_l"] == pytest.approx(4 / 6)


def test_cosine_orders_related_above_unrelated(scorer: ReferenceScorer) -> None:
    ref = "It makes sense that the fireworks frighten you after what you went through."
    rows = scorer.score(
        [
            "Fireworks can be really scary after trauma; your fear is understandable.",
            "The quarterly tax return is due in April.",
        ],
        [ref, ref],
    )
    assert rows[0]["cosine_sim"] > rows[1]["cosine_sim"] + 0.3


def test_unloadable_embedding_model_gives_nan_and_a_note() -> None:
    s = ReferenceScorer("/nonexistent/embedding-model")
    (row,) = s.score(["a b"], ["a b"])
    assert math.isnan(row["cosine_sim"])
    assert "failed to load" in s.notes["cosine_sim"]
    assert row["rouge_l"] == pytest.approx(1.0)


def test_skipped_metrics_are_declared() -> None:
    notes = ReferenceScorer().describe()["notes"]
    assert notes["bertscore"].startswith("skipped") and notes["meteor"].startswith("skipped")


def test_mean_ci_properties() -> None:
    values = np.random.default_rng(0).normal(3.0, 1.0, size=400)
    ci = mean_ci(values)
    assert ci.n == 400 and ci.ci_low < ci.mean < ci.ci_high
    assert ci.ci_high - ci.ci_low == pytest.approx(2 * 1.96 / 20, rel=0.2)  # ~ normal-theory width
    assert mean_ci(values) == ci  # seeded: same interval every time
    assert mean_ci([]).mean is None and mean_ci([]).n == 0
    assert mean_ci([2.0]).ci_low is None and mean_ci([2.0]).mean == 2.0
    assert mean_ci([1.0, float("nan"), 3.0]).n == 2


def test_summary_groups_by_turn_and_scenario() -> None:
    rows = [
        {
            "cosine_sim": 0.5,
            "rouge_l": 0.1,
            "within_reply_distinct_1": 1,
            "within_reply_distinct_2": 1,
            "length_tokens": 10,
            "turn": 1,
            "scenario": "a",
            "item_id": "p1/c1/turn1",
            "reply": "a b",
        },
        {
            "cosine_sim": 0.7,
            "rouge_l": 0.3,
            "within_reply_distinct_1": 1,
            "within_reply_distinct_2": 1,
            "length_tokens": 20,
            "turn": 2,
            "scenario": "a",
            "item_id": "p2/c1/turn2",
            "reply": "a b",
        },
    ]
    s = summarize_metrics(rows)
    assert s["overall"]["cosine_sim"]["mean"] == pytest.approx(0.6) and s["overall"]["cosine_sim"]["n_clusters"] == 2
    assert s["by_turn"]["2"]["rouge_l"]["mean"] == pytest.approx(0.3)
    assert s["by_scenario"]["a"]["n_items"] == 2
    assert s["overall"]["distinct_1"]["value"] == pytest.approx(2 / 4) and s["overall"]["distinct_1"]["n_ngrams"] == 4


def test_summary_intervals_resample_personas() -> None:
    rng = np.random.default_rng(0)
    persona = np.repeat(np.arange(30), 10)
    cos = 0.5 + rng.normal(0, 0.1, 30)[persona] + rng.normal(0, 0.05, 300)
    rows = [{"cosine_sim": c, "persona_id": f"p{p}", "turn": 1} for c, p in zip(cos, persona, strict=True)]
    block = summarize_metrics(rows, group_keys=())["overall"]["cosine_sim"]
    expected = mean_ci(cos, clusters=persona)
    assert (block["ci_low"], block["ci_high"]) == pytest.approx((expected.ci_low, expected.ci_high))
    assert block["design_effect"] > 3 and block["n_clusters"] == 30  # an item bootstrap would be ~2x too narrow here


def test_corpus_distinct_is_li_et_al() -> None:
    """A model that sends the same reply to every item is not diverse, whatever each reply looks like."""
    from tide_bench.metrics.reference import corpus_distinct

    same = ["You are not alone, and what you feel makes sense."] * 50
    varied = [
        f"Reply number {k} says something {['kind', 'warm', 'calm', 'new'][k % 4]} about item {k}." for k in range(50)
    ]
    assert corpus_distinct(same, 1)["value"] < 0.05 < corpus_distinct(varied, 1)["value"]
    assert np.nanmean([distinct_n(tokenize(t), 1) for t in same]) > 0.9  # the per-reply value would call it diverse
    assert corpus_distinct(["a b", "b a"], 2) == {
        "value": 1.0,
        "n_ngrams": 2,
        "n_replies": 2,
        "definition": "corpus-level distinct-2 (Li et al. 2016)",
    }
    assert corpus_distinct([], 1)["value"] is None


def test_bf16_encoding_matches_fp32(monkeypatch: pytest.MonkeyPatch) -> None:
    from tide_bench.data import load_dataset

    refs = [i.reference_reply for i in load_dataset("sample").items[:12]]
    replies = refs[1:] + refs[:1]
    monkeypatch.setenv("TIDE_BENCH_EMBEDDING_PRECISION", "fp32")
    fp32 = ReferenceScorer()
    assert fp32.precision == "fp32"
    monkeypatch.setenv("TIDE_BENCH_EMBEDDING_PRECISION", "bf16")
    bf16 = ReferenceScorer()
    assert bf16.precision == "bf16"
    a, b = fp32.cosine(replies, refs), bf16.cosine(replies, refs)
    assert np.abs(a - b).max() < 3e-3
    assert abs(a.mean() - b.mean()) < 1e-3


def test_embeddings_are_fp32_by_default_even_on_a_cpu_with_native_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    """bf16 embeddings move with their batch's padding (up to ~1e-3), so a study split across
    workers would write other numbers than one run: the default must be fp32 on every CPU."""
    from tide_bench.core.errors import ConfigError
    from tide_bench.metrics import reference

    monkeypatch.setattr(reference, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setattr(reference, "_cuda", lambda: False)
    monkeypatch.delenv("TIDE_BENCH_EMBEDDING_PRECISION", raising=False)
    assert ReferenceScorer().precision == "fp32"
    monkeypatch.setenv("TIDE_BENCH_EMBEDDING_PRECISION", "auto")  # the opt-in
    assert ReferenceScorer().precision == "bf16"
    monkeypatch.setenv("TIDE_BENCH_EMBEDDING_PRECISION", "fp16")
    with pytest.raises(ConfigError, match="TIDE_BENCH_EMBEDDING_PRECISION"):
        ReferenceScorer()


def test_a_default_embedding_does_not_depend_on_the_texts_batched_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIDE_BENCH_EMBEDDING_PRECISION", raising=False)
    scorer = ReferenceScorer()
    model = scorer.load_embedder()
    text = "Sounds tiring."
    alone = scorer._encode(model, [text])[0]
    padded = scorer._encode(model, ["That sounds exhausting, and it makes sense that you feel worn down by it.", text])
    assert np.abs(alone - padded[1]).max() < 1e-5


def test_reference_embeddings_are_stored_and_reused(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tide_bench.metrics import embedding_store

    monkeypatch.setenv("TIDE_BENCH_CACHE", str(tmp_path))
    embedding_store._store.cache_clear()
    scorer = ReferenceScorer()
    refs = ["It makes sense that you feel this way.", "That sounds exhausting."]
    first = scorer.cosine(["I hear you.", "Sounds tiring."], refs)
    assert (tmp_path / "embeddings.sqlite").is_file()
    embedding_store._store.cache_clear()  # a new process: only the file remains
    store = embedding_store.EmbeddingStore.for_model(f"{scorer.embedding_model}|{scorer.precision}")
    assert set(store.get_many(refs)) == set(refs)
    again = ReferenceScorer().cosine(["I hear you.", "Sounds tiring."], refs)
    assert np.allclose(first, again, atol=1e-6)
    embedding_store._store.cache_clear()


def test_long_replies_are_embedded_whole(scorer: ReferenceScorer) -> None:
    """all-MiniLM-L6-v2 reads 256 word pieces: empathic content after ~200 words of filler used to
    be invisible (cosine equal to the filler alone). Windows make it count."""
    ref = "It makes sense that the fireworks frighten you after what you went through; your fear is understandable."
    filler = " ".join(f"The committee reviewed budget line {k} for the regional transport office." for k in range(30))
    reply = "Fireworks can be terrifying after trauma, and your fear makes complete sense."
    before = scorer.windowed_texts
    rows = scorer.score([filler, filler + " " + reply, reply], [ref, ref, ref])
    assert scorer.windowed_texts - before == 2 and scorer.describe()["windowed_texts"] == scorer.windowed_texts
    assert rows[1]["cosine_sim"] > rows[0]["cosine_sim"] + 0.02


def test_short_texts_take_the_single_pass(scorer: ReferenceScorer) -> None:
    model = scorer.load_embedder()
    texts = ["I hear how hard this is.", "That sounds exhausting and frightening. " * 8]
    before = scorer.windowed_texts
    windowed = scorer._encode(model, texts)
    plain = scorer._encode_batch(model, texts)
    assert scorer.windowed_texts == before and np.allclose(windowed, plain, atol=1e-6)


def test_precision_argument_overrides_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDE_BENCH_EMBEDDING_PRECISION", "bf16")
    assert ReferenceScorer(precision="fp32").precision == "fp32" and ReferenceScorer().precision == "bf16"


def test_loading_the_encoder_prints_no_weight_loading_bar() -> None:
    """`submit` and `leaderboard validate` load the encoder for spot checks: no tqdm bar in their output."""
    import subprocess
    import sys

    code = (
        "from tide_bench.metrics.reference import DEFAULT_EMBEDDING, _load_embedder; _load_embedder(DEFAULT_EMBEDDING);"
        "from transformers.utils import logging; assert logging.is_progress_bar_enabled()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Loading weights" not in done.stderr + done.stdout


def test_the_embedding_cache_can_be_kept_in_memory_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """U13 (new-user round 3): embeddings persisted in the cache folder with no word of it and no way
    to turn it off; TIDE_BENCH_EMBEDDING_CACHE=0 keeps them in memory (docs/privacy.md)."""
    import numpy as np

    from tide_bench.metrics import embedding_store

    monkeypatch.setenv("TIDE_BENCH_CACHE", str(tmp_path / "cache"))
    for value, persists in (("0", False), ("off", False), ("1", True)):
        monkeypatch.setenv("TIDE_BENCH_EMBEDDING_CACHE", value)
        embedding_store._store.cache_clear()
        store = embedding_store.EmbeddingStore.for_model(f"model-{value}")
        store.put_many({"a reference reply": np.ones(3, dtype=np.float32)})
        assert store.get_many(["a reference reply"])  # held in memory either way
        assert (tmp_path / "cache" / "embeddings.sqlite").exists() is persists
    embedding_store._store.cache_clear()
