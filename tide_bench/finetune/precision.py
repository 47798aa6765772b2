"""Which device trains, in which precision, and in which dtype the frozen base is loaded.

``--precision auto`` must never pick something pathologically slow: bf16 autocast on a CPU
without native bf16 instructions (AVX512-BF16 or AMX) did not finish one step of the demo
in 13 minutes where fp32 takes 44 s (review 2026-11-30, AVX2 machine). On a CPU that has
them, bf16 is faster than fp32 (see docs/benchmarks.md), so auto uses it there.

The base model is loaded in the training dtype (bf16/fp16), not fp32: autocast does not cache
casts of frozen weights, so fp32 weights under bf16 autocast cost about three times the
memory of bf16 weights. peft keeps the LoRA weights themselves in fp32.
"""

from __future__ import annotations

from dataclasses import dataclass

from tide_bench.core.errors import ConfigError
from tide_bench.core.hardware import cpu_has_native_bf16


@dataclass(frozen=True)
class DeviceFacts:
    """What the machine offers, gathered once (and passed in, so the choice is testable)."""

    device: str  # cuda | mps | cpu
    cuda_bf16: bool = False
    cpu_bf16: bool = False
    name: str | None = None  # the GPU's name ("NVIDIA H200"), which the measured rows are keyed by
    free_memory_bytes: int | None = None  # free memory of this process's GPU when training starts


@dataclass(frozen=True)
class Precision:
    name: str  # bf16 | fp16 | fp32
    reason: str

    @property
    def torch_dtype(self) -> str:
        return {"bf16": "bfloat16", "fp16": "float16"}.get(self.name, "float32")


def device_facts() -> DeviceFacts:
    import torch

    if torch.cuda.is_available():
        try:
            free: int | None = int(torch.cuda.mem_get_info()[0])
        except RuntimeError:  # pragma: no cover - a driver that does not report it
            free = None
        return DeviceFacts(
            "cuda",
            cuda_bf16=bool(torch.cuda.is_bf16_supported()),
            name=str(torch.cuda.get_device_name()),
            free_memory_bytes=free,
        )
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return DeviceFacts("mps")
    return DeviceFacts("cpu", cpu_bf16=cpu_has_native_bf16())


def choose_precision(requested: str, facts: DeviceFacts) -> Precision:
    """The precision to train in; refuses combinations that fail or crawl on this machine."""
    if facts.device == "cuda":
        if requested == "auto":
            return Precision("bf16", "GPU with bf16") if facts.cuda_bf16 else Precision("fp16", "GPU without bf16")
        if requested == "bf16" and not facts.cuda_bf16:
            raise ConfigError("this GPU does not support bf16", hint="use --precision fp16 or auto")
        return Precision(requested, "requested")
    if requested == "fp16":
        raise ConfigError(
            f"--precision fp16 needs a CUDA GPU; this run is on {facts.device}", hint="use --precision auto"
        )
    if facts.device == "cpu" and requested in ("auto", "bf16"):
        if facts.cpu_bf16:
            return Precision("bf16", "CPU with native bf16 (AVX512-BF16/AMX)")
        if requested == "bf16":
            raise ConfigError(
                "--precision bf16 on a CPU without native bf16 instructions is pathologically slow "
                "(one demo step did not finish in 13 minutes where fp32 takes under one)",
                hint="use --precision auto (fp32 on this CPU)",
            )
        return Precision("fp32", "CPU without native bf16")
    if requested == "auto":
        return Precision("fp32", f"{facts.device}: fp32")
    return Precision(requested, "requested")
