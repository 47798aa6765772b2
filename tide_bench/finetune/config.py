"""Fine-tuning settings, with sensible LoRA defaults per architecture."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Attention projections by architecture (``config.model_type``): the usual LoRA targets.
DEFAULT_TARGETS: dict[str, list[str]] = {
    "llama": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "mistral": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "qwen2": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "qwen3": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "gemma": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "gemma2": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "phi3": ["qkv_proj", "o_proj"],
    "phi": ["q_proj", "k_proj", "v_proj", "dense"],
    "gpt2": ["c_attn", "c_proj"],
    "gpt_neox": ["query_key_value", "dense"],
    "falcon": ["query_key_value", "dense"],
}


@dataclass
class FinetuneConfig:
    model: str
    out: Path
    data: str | None = None
    revision: str | None = None
    split: str = "train"
    validation_split: str | None = "validation"
    allow_test_split: bool = False
    rank: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: list[str] | None = None
    epochs: int = 3
    max_steps: int | None = None
    learning_rate: float = 2e-4
    batch_size: int = 4
    grad_accum: int = 4
    max_length: int = 1024
    warmup_ratio: float = 0.03
    weight_decay: float = 0.0
    patience: int = 2
    seed: int = 1234
    precision: str = "auto"  # auto | bf16 | fp16 | fp32
    gradient_checkpointing: bool = False
    chat_template: bool = True
    limit_examples: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["out"] = str(self.out)
        return d
