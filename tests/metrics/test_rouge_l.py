"""ROUGE-L computed by tide-bench (memoised stemmer, bit-parallel LCS) equals rouge-score's own
result exactly, so stored values from any run can be recomputed and compared at 1e-6."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from tide_bench.data import load_dataset
from tide_bench.metrics.reference import lcs_length, rouge_l

REFERENCE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
WORDS = sorted(
    {w for i in load_dataset("sample").items for w in (i.reference_reply + " " + i.client_utterance).split()}
)
TEXT = st.lists(st.sampled_from(WORDS) | st.text(max_size=8), max_size=60).map(" ".join)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(reference=TEXT, reply=TEXT)
def test_rouge_l_equals_rouge_score(reference: str, reply: str) -> None:
    assert rouge_l(reference, reply) == REFERENCE.score(reference, reply)["rougeL"].fmeasure


def test_lcs_hand_cases() -> None:
    assert lcs_length([], ["a"]) == 0
    assert lcs_length(list("abcbdab"), list("bdcaba")) == 4  # the textbook example (CLRS)
    assert lcs_length(["a"] * 70, ["a"] * 70) == 70
    assert lcs_length(list("abc"), list("xyz")) == 0
