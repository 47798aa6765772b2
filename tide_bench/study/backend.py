"""Which lm-eval backend generates a study's replies: ``eval.backend: auto`` (the default).

Generation is most of a grid's GPU time (the first H200 run: 9.7 of 13.6 GPU-hours through the hf
backend), and vLLM's continuous batching with paged attention is built for exactly this: many
short prompts, greedy, one model at a time. So ``auto`` is lm-eval's ``vllm`` backend where the
``vllm`` package is importable and the study generates on a GPU, and its ``hf`` backend
otherwise (a CPU, or no vLLM: ``pip install 'tide-bench[vllm]'``). A named backend is used as
named. Both load a fine-tuned cell's LoRA adapter, each its own way (hf: ``peft=``, vLLM:
``lora_local_path=`` with ``max_lora_rank`` read from the adapter), and run.json records the
adapter's path and hash the same way for both.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

AUTO = "auto"
ADAPTER_ARG = {"hf": "peft", "vllm": "lora_local_path"}  # how each backend is given a LoRA adapter
VLLM_INSTALL = "pip install 'tide-bench[vllm]'"


def vllm_importable() -> bool:
    return importlib.util.find_spec("vllm") is not None


def resolve_backend(
    requested: str | None, device: str | None, importable: Callable[[], bool] = vllm_importable
) -> tuple[str, str]:
    """The backend a study's eval stages use, and why (``requested``: the study's ``eval.backend``)."""
    if requested and requested != AUTO:
        return requested, "eval.backend"
    if str(device or "").startswith("cpu"):
        return "hf", "auto: the study generates on the CPU"
    if importable():
        return "vllm", "auto: vllm is installed"
    return "hf", f"auto: vllm is not installed here; {VLLM_INSTALL} to use it"


def cell_model_args(backend: str, args: dict[str, str], adapter: str | None) -> dict[str, str]:
    """A cell's model arguments for ``backend``: the study's, plus the adapter as that backend loads it."""
    if adapter is None:
        return dict(args)
    if backend not in ADAPTER_ARG:
        from tide_bench.core.errors import ConfigError

        raise ConfigError(
            f"the fine-tuned condition needs a backend that loads LoRA adapters (hf or vllm), not {backend!r}"
        )
    return dict(args) | {ADAPTER_ARG[backend]: adapter}
