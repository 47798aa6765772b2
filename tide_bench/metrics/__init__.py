"""Reference metrics: how close a reply is to TIDE's frontier reference reply.

Imports only :mod:`tide_bench.core`. The paper reports cosine similarity of sentence
embeddings, ROUGE-L, BERTScore and METEOR against the reference; tide-bench computes the
ones that run offline and says plainly which were skipped and why.
"""

from tide_bench.metrics.reference import METRIC_NAMES, ReferenceScorer, summarize_metrics

__all__ = ["METRIC_NAMES", "ReferenceScorer", "summarize_metrics"]
