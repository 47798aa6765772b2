"""The base model (in the training dtype, or 4-bit for QLoRA) and its LoRA adapter.

Target modules default to the attention projections of the architecture; ``all-linear``
(peft's shorthand: every linear layer but the output head, as QLoRA recipes use) is accepted
too. Names are checked against the model's linear layers, including GPT-2's ``Conv1D``.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.finetune.config import FinetuneConfig
from tide_bench.finetune.precision import Precision

ALL_LINEAR = "all-linear"
ATTENTION = ["q_proj", "k_proj", "v_proj", "o_proj"]
# Attention projections by architecture (``config.model_type``) whose names differ from ATTENTION.
DEFAULT_TARGETS: dict[str, list[str]] = {
    "phi3": ["qkv_proj", "o_proj"],
    "phi": ["q_proj", "k_proj", "v_proj", "dense"],
    "gpt2": ["c_attn", "c_proj"],
    "gpt_neox": ["query_key_value", "dense"],
    "falcon": ["query_key_value", "dense"],
}
REENTRANT_FREE = {"use_reentrant": False}  # needed by DDP with LoRA; the default before transformers 5


def linear_module_names(model: Any) -> list[str]:
    """Leaf names of the layers LoRA can wrap (Linear, 4-bit Linear, GPT-2's Conv1D), without the output head."""
    import torch
    from transformers.pytorch_utils import Conv1D

    names = {
        name.split(".")[-1] for name, module in model.named_modules() if isinstance(module, torch.nn.Linear | Conv1D)
    }
    return sorted(names - {"lm_head"})


def resolve_targets(model: Any, requested: list[str] | None) -> list[str] | str:
    """The LoRA target modules for this model: checked names, ``all-linear``, or the architecture's attention."""
    linear = linear_module_names(model)
    if requested == [ALL_LINEAR]:
        return ALL_LINEAR
    model_type = getattr(model.config, "model_type", "?")
    targets = requested or DEFAULT_TARGETS.get(model_type) or (ATTENTION if set(ATTENTION) <= set(linear) else None)
    if not targets:
        raise ConfigError(
            f"no default LoRA target modules for architecture {model_type!r}",
            hint=f"pass --target-modules {ALL_LINEAR}, or names from: {', '.join(linear)}",
        )
    unknown = [t for t in targets if t not in linear]
    if unknown:
        raise ConfigError(
            f"unknown target module(s) {', '.join(unknown)} for {model_type}",
            hint=f"linear modules of this model: {', '.join(linear)}; or {ALL_LINEAR}",
        )
    return list(targets)


CPU_BITSANDBYTES = (0, 50)  # the first bitsandbytes whose CPU backend trained QLoRA here (0.50.2, checked)


def check_quantization(quantize: str | None, device: str) -> None:
    """QLoRA needs bitsandbytes, and a CUDA GPU or a bitsandbytes with a CPU backend: say so
    before a model is downloaded or loaded. (On a CPU it is slow, but it shrinks a 3B base to a
    quarter and runs the very code a GPU run does.)"""
    if quantize is None:
        return
    if device not in ("cuda", "cpu"):
        raise ConfigError(
            f"--quantize {quantize} (QLoRA with bitsandbytes) needs a CUDA GPU; this run is on {device}",
            hint="drop --quantize on this machine; a 0.5B-1.5B model trains in bf16/fp32 without it",
        )
    if importlib.util.find_spec("bitsandbytes") is None:
        raise ConfigError(
            "--quantize 4bit needs bitsandbytes, which is not installed",
            hint="pip install 'tide-bench[qlora]'  (or: pip install bitsandbytes)",
        )
    if device == "cpu" and _bitsandbytes_version() < CPU_BITSANDBYTES:
        raise ConfigError(
            f"--quantize {quantize} on a CPU needs bitsandbytes >= {'.'.join(map(str, CPU_BITSANDBYTES))} (its CPU "
            "backend); this run is on cpu",
            hint="pip install -U bitsandbytes, or drop --quantize (a 0.5B-1.5B model trains in fp32 without it)",
        )


def _bitsandbytes_version() -> tuple[int, ...]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        parts = version("bitsandbytes").split(".")[:2]
        return tuple(int("".join(c for c in p if c.isdigit()) or 0) for p in parts)
    except PackageNotFoundError:
        return (0,)


def quantization_settings(precision: Precision, device: str, local_process_index: int) -> dict[str, Any]:
    """``from_pretrained`` arguments for QLoRA: NF4 with double quantization, computing in the training
    dtype (fp32 on a CPU without native bf16, where bf16 crawls), each process's base on its own device."""
    import torch
    from transformers import BitsAndBytesConfig

    return {
        "quantization_config": BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=getattr(torch, precision.torch_dtype),
        ),
        "device_map": {"": local_process_index if device == "cuda" else "cpu"},
    }


def count_parameters(model: str, revision: str | None = None) -> int | None:
    """The model's parameter count from its configuration alone (built on the meta device: no weights
    read, no memory used), for choosing the micro-batch before loading; None when it cannot be built."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(model, revision=revision)
        with torch.device("meta"):
            skeleton = AutoModelForCausalLM.from_config(config)
    except Exception:  # any failure only means "size unknown": the default for an unknown size is used
        return None
    return int(sum(p.numel() for p in skeleton.parameters()))


def load_base_model(
    config: FinetuneConfig,
    precision: Precision,
    local_process_index: int = 0,
    device: str = "cuda",
    base_dtype: str | None = None,
) -> Any:
    """The frozen base in ``base_dtype`` (:mod:`.defaults`; by default the training dtype), or NF4 4-bit
    with compute in the training dtype."""
    import torch
    from transformers import AutoModelForCausalLM

    dtype = getattr(torch, base_dtype if base_dtype and base_dtype != "nf4" else precision.torch_dtype)
    kwargs: dict[str, Any] = {"revision": config.revision, "dtype": dtype}
    if config.quantize == "4bit":
        kwargs |= quantization_settings(precision, device, local_process_index)
    try:
        model = AutoModelForCausalLM.from_pretrained(config.model, **kwargs)
    except OSError as exc:
        raise ConfigError(f"cannot load model {config.model!r}: {exc}") from None
    if config.quantize:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(
            model,
            use_gradient_checkpointing=config.gradient_checkpointing,
            gradient_checkpointing_kwargs=REENTRANT_FREE,
        )
    elif config.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=REENTRANT_FREE)
        model.enable_input_require_grads()
    model.config.use_cache = False  # no KV cache while training (and required by checkpointing)
    return model


def attach_lora(model: Any, config: FinetuneConfig, targets: list[str] | str) -> Any:
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(
        r=config.rank,
        lora_alpha=config.alpha,
        lora_dropout=config.dropout,
        target_modules=targets,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)  # LoRA weights stay fp32 (autocast_adapter_dtype) whatever the base dtype


def resolved_target_names(model: Any) -> list[str]:
    """The module names peft actually wrapped (``all-linear`` resolved), for the card."""
    config = model.peft_config["default"]
    return sorted(config.target_modules) if not isinstance(config.target_modules, str) else [config.target_modules]
