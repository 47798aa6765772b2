"""LoRA fine-tuning on TIDE's train split: the paper's fine-tuned condition.

Imports :mod:`tide_bench.core`, :mod:`tide_bench.data` and :mod:`tide_bench.tasks` (the same
prompts as evaluation). Public API::

    from tide_bench.finetune import FinetuneConfig, finetune
    card = finetune(FinetuneConfig(model="Qwen/Qwen2.5-0.5B-Instruct", data="/path/TIDE", out="adapters/x"))

Several GPUs: ``accelerate launch -m tide_bench.finetune --model ... --data ... --out ...``.
"""

from tide_bench.finetune.config import FinetuneConfig
from tide_bench.finetune.train import finetune

__all__ = ["FinetuneConfig", "finetune"]
