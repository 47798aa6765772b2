"""The TIDE reference as a "model": a run whose replies are the dataset's own reference replies.

Why a model backend: the reference row must go through exactly the same path as every other
entry (lm-eval's files, run.json, the judge, submission, the board), so that its judged
empathy is the board's upper anchor measured with the same instrument. TIDE's references were
written by a frontier model (Claude 3.5 Sonnet, per the paper); registering them as an lm-eval
backend (``tide-bench eval --model reference``) reuses the whole pipeline unchanged.

Reference metrics (cosine, ROUGE-L against the reference) are meaningless for it (1.0 by
construction): the run says so in ``run.json`` rather than printing them as a result.
"""

from __future__ import annotations

from typing import Any

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from tide_bench.generation.reference import BACKEND


@register_model(BACKEND)
class ReferenceLM(LM):
    """Answers every TIDE item with its reference reply (read from the request's doc)."""

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        return [str(request.doc["reference_reply"]) for request in requests]

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        raise NotImplementedError("the TIDE reference only answers generation tasks")

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        raise NotImplementedError("the TIDE reference only answers generation tasks")

    @property
    def tokenizer_name(self) -> str:
        return BACKEND

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        return None

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        return "\n".join(f"{m['role']}: {m['content']}" for m in chat_history)
