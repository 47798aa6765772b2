"""What the machine can execute fast, asked once in one place (training and the embedding
encoder both choose bf16 on a CPU only where it is native: emulated bf16 is many times slower
than fp32; review 2026-11-30, an AVX2 machine)."""

from __future__ import annotations

import re
from pathlib import Path

BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_has_native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """True when the CPU executes bf16 natively (x86 AVX512-BF16/AMX, or Arm's bf16 extension)."""
    try:
        import torch

        if torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported():
            return True
    except (ImportError, AttributeError, RuntimeError):  # pragma: no cover - older torch
        pass
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return False
    flags = set(
        re.findall(
            r"[\w.]+",
            " ".join(line.split(":", 1)[-1] for line in text.splitlines() if line.startswith(("flags", "Features"))),
        )
    )
    return any(flag in flags for flag in BF16_CPU_FLAGS) or "bf16" in flags
