"""LoRA fine-tuning on TIDE's train split: the paper's fine-tuned condition.

Imports :mod:`tide_bench.core`, :mod:`tide_bench.data`, :mod:`tide_bench.tasks` (the same
prompts as evaluation) and :mod:`tide_bench.generation` (the adapter card's name). The loop is
``transformers.Trainer``; this package builds the examples (exactly lm-eval's prompts, reply-
only labels, checked per template), chooses device settings, and writes the adapter card.
Public API::

    from tide_bench.finetune import FinetuneConfig, finetune, merge_adapter
    card = finetune(FinetuneConfig(model="Qwen/Qwen2.5-0.5B-Instruct", data="/path/TIDE", out="adapters/x"))
    merge_adapter("adapters/x", "merged/x")      # full weights, e.g. for vLLM

Several GPUs: ``accelerate launch -m tide_bench.finetune --model ... --data ... --out ...``.
"""

from typing import TYPE_CHECKING, Any

from tide_bench.finetune.config import FinetuneConfig

if TYPE_CHECKING:
    from tide_bench.finetune.merge import merge_adapter
    from tide_bench.finetune.train import finetune

__all__ = ["FinetuneConfig", "finetune", "merge_adapter"]


def __getattr__(name: str) -> Any:
    """``finetune`` and ``merge_adapter`` load torch and transformers: imported on first use, so
    reading a study file's ``lora:`` settings (``FinetuneConfig``) costs no torch import."""
    if name == "finetune":
        from tide_bench.finetune.train import finetune

        return finetune
    if name == "merge_adapter":
        from tide_bench.finetune.merge import merge_adapter

        return merge_adapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
