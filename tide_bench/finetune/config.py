"""Fine-tuning settings: one dataclass, its checks, and the per-device batch defaults.

Every optimizer step sees the same number of sequences on every device and with any number
of processes (16 by default), so a run on a laptop, on one GPU and on eight train the same
objective with the same number of steps; only how a step is cut into micro-batches and
processes differs (16 = micro-batch x accumulation x processes; see :func:`split_step`).
On a CPU one sequence per micro-batch is both faster and far smaller in memory than four
(less padding, less allocator churn; see docs/benchmarks.md).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.tasks.prompts import PROMPT_CONDITIONS

SEQUENCES_PER_STEP = 16
MICRO_BATCH = {"cuda": 16, "cpu": 1, "mps": 1}  # the largest per device; a GPU's is cut to its memory (.defaults)
QUANTIZE_CHOICES = ("4bit",)
REPORT_CHOICES = ("auto", "none", "tensorboard", "wandb")

# Fields that decide what is trained: a resumed run must use the same values.
RESUME_FIXED = (
    "model",
    "revision",
    "data",
    "split",
    "validation_split",
    "rank",
    "alpha",
    "dropout",
    "target_modules",
    "epochs",
    "max_steps",
    "learning_rate",
    "batch_size",
    "grad_accum",
    "max_length",
    "warmup_ratio",
    "warmup_steps",
    "weight_decay",
    "max_grad_norm",
    "eval_steps",
    "seed",
    "precision",
    "quantize",
    "chat_template",
    "prompt",
    "limit_examples",
)


@dataclass
class FinetuneConfig:
    """What ``tide-bench finetune`` trains; every field is recorded in the adapter card."""

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
    batch_size: int | None = None  # None: chosen from the device (finetune/defaults.py): up to 16 on a GPU, 1 on a CPU
    grad_accum: int | None = None  # None: enough micro-batches for 16 sequences per step
    max_length: int = 1024
    warmup_ratio: float = 0.03
    warmup_steps: int | None = None
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    patience: int = 2  # evaluations without improvement before stopping
    eval_steps: int | None = None  # None: once per epoch (and always at the last step)
    seed: int = 1234
    precision: str = "auto"  # auto | bf16 | fp16 | fp32
    quantize: str | None = None  # None | "4bit" (QLoRA, CUDA only)
    gradient_checkpointing: bool = False
    chat_template: bool = True
    prompt: str = "neutral"  # the prompt condition trained on (evaluate the adapter with the same one)
    limit_examples: int | None = None
    resume: str | None = None  # "latest" or a checkpoint folder
    overwrite: bool = False
    keep_checkpoints: bool = False
    report_to: str = "auto"
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["out"] = str(self.out)
        return d

    def fixed_settings(self) -> dict[str, Any]:
        """The settings a resumed run must share with the run it continues."""
        d = self.as_dict()
        return {name: d[name] for name in RESUME_FIXED}


def check_config(config: FinetuneConfig) -> None:
    """Refuse settings that cannot produce a trustworthy adapter, before anything loads."""
    if config.split == "test" and not config.allow_test_split:
        raise ConfigError(
            "refusing to train on the test split: the leaderboard evaluates on it",
            hint="use --split train (default); --allow-test-split exists for ablations and is recorded in the card",
        )
    if config.validation_split and config.validation_split == config.split:
        raise ConfigError(
            f"the validation split is the training split ({config.split!r}): "
            "early stopping would select on training data",
            hint="train on 'train' and validate on 'validation', or turn validation off (--no-validation)",
        )
    positive = (
        "rank",
        "alpha",
        "epochs",
        "max_length",
        "patience",
        "max_steps",
        "batch_size",
        "grad_accum",
        "eval_steps",
        "limit_examples",
        "warmup_steps",
    )
    for name in positive:
        value = getattr(config, name)
        if value is not None and (not isinstance(value, int) or value < (0 if name == "warmup_steps" else 1)):
            raise ConfigError(f"{name} must be a positive whole number, got {value!r}", field=name)
    if not 0 <= config.dropout < 1:
        raise ConfigError(f"dropout must be in [0, 1), got {config.dropout!r}", field="dropout")
    if config.learning_rate <= 0 or config.max_grad_norm < 0 or not 0 <= config.warmup_ratio < 1:
        raise ConfigError("learning_rate must be > 0, max_grad_norm >= 0 and warmup_ratio in [0, 1)")
    if config.precision not in ("auto", "bf16", "fp16", "fp32"):
        raise ConfigError(f"unknown precision {config.precision!r}", hint="auto, bf16, fp16 or fp32", field="precision")
    if config.quantize is not None and config.quantize not in QUANTIZE_CHOICES:
        raise ConfigError(f"unknown quantization {config.quantize!r}", hint="--quantize 4bit (QLoRA)", field="quantize")
    if config.report_to not in REPORT_CHOICES:
        raise ConfigError(
            f"unknown --report-to {config.report_to!r}", hint=", ".join(REPORT_CHOICES), field="report_to"
        )
    if config.resume and config.overwrite:
        raise ConfigError("--resume continues the run in --out; --overwrite would delete it: choose one")
    if config.prompt not in PROMPT_CONDITIONS:
        raise ConfigError(
            f"unknown prompt condition {config.prompt!r}", hint=", ".join(PROMPT_CONDITIONS), field="prompt"
        )


@dataclass(frozen=True)
class StepPlan:
    """How many optimizer steps, and when to evaluate and checkpoint (computed as Trainer computes them)."""

    batch_size: int
    grad_accum: int
    processes: int
    steps_per_epoch: int
    total_steps: int
    eval_steps: int
    warmup_steps: int
    note: str | None = None  # when the step is not the 16 sequences asked for


def split_step(
    config: FinetuneConfig, device: str, processes: int, micro_batch: int | None = None
) -> tuple[int, int, str | None]:
    """Micro-batch and accumulation so that micro-batch x accumulation x processes = 16.

    What the user set is kept; what is left to choose is chosen for the device, at most
    ``micro_batch`` (what :func:`tide_bench.finetune.defaults.choose_training_defaults` found fits;
    without it the device's largest) and smaller when there are many processes (8 GPUs take 2 x 1
    each). When 16 cannot be cut evenly (3 processes), the nearest step is used and said (the card
    records it)."""
    target = SEQUENCES_PER_STEP
    default = config.batch_size or micro_batch or MICRO_BATCH.get(device, 1)
    if config.grad_accum is not None:  # the user's accumulation; the micro-batch fills the step up to 16
        accum = config.grad_accum
        batch = config.batch_size or max(1, min(default, target // (accum * processes)))
    else:
        batches = [config.batch_size] if config.batch_size else list(range(default, 0, -1))
        exact = next((b for b in batches if target % (b * processes) == 0), None)
        batch = exact or (config.batch_size or max(1, min(default, target // processes)))
        accum = max(1, round(target / (batch * processes)))
    per_step = batch * accum * processes
    note = None
    if per_step != target and not (config.batch_size and config.grad_accum):
        note = (
            f"{per_step} sequences per optimizer step ({batch} x {accum} x {processes} processes), not {target}: "
            f"{target} cannot be cut evenly that way; set --batch-size/--grad-accum to choose"
        )
    return batch, accum, note


def plan_steps(
    config: FinetuneConfig, n_examples: int, device: str, processes: int, micro_batch: int | None = None
) -> StepPlan:
    """Micro-batch and accumulation (:func:`split_step`), and the schedule (computed as Trainer computes it)."""
    batch, accum, note = split_step(config, device, processes, micro_batch)
    micro_batches = math.ceil(math.ceil(n_examples / batch) / processes)  # per process, as accelerate shards them
    per_epoch = max(1, math.ceil(micro_batches / accum))
    total = config.max_steps or per_epoch * config.epochs
    eval_steps = min(config.eval_steps or per_epoch, total)
    warmup = config.warmup_steps if config.warmup_steps is not None else int(config.warmup_ratio * total)
    return StepPlan(batch, accum, processes, per_epoch, total, eval_steps, warmup, note)
