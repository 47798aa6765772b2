"""What one cell of a study needs from a machine: the study file's ``resources:`` block.

The same block serves every executor: the local one reads ``gpus_per_cell`` (how many of the
visible GPUs one worker gets); Slurm reads all of it (one job array task per cell, through
submitit); Ray reads the GPU and CPU counts. A model entry may override any of it (a 3B model
asks for more time than a 0.5B one)::

    resources: {gpus_per_cell: 1, cpus_per_cell: 8, mem_gb: 64, time_min: 240, partition: gpu,
                account: my-lab, max_parallel: 8, setup: ["module load cuda/12.4"]}
    models:
      - {id: qwen2.5-3b, model: Qwen/Qwen2.5-3B-Instruct, resources: {time_min: 600}}

The allowed keys and their types are the fields of :class:`Resources` (one definition, used
by the study file's check).
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from tide_bench.core.errors import ConfigError


@dataclass(frozen=True)
class Resources:
    """Per-cell resources (``None``: the cluster's default)."""

    gpus_per_cell: int = 1  # 0: CPU only
    cpus_per_cell: int = 8
    mem_gb: int | None = None
    time_min: int = 720  # Slurm's time limit for one cell (a longer cell is requeued and resumes)
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    max_parallel: int | None = None  # cells at once (Slurm array parallelism, Ray tasks)
    setup: list[str] = field(default_factory=list)  # shell lines before each Slurm job (module load, venv)
    slurm: dict[str, Any] = field(default_factory=dict)  # further sbatch options, passed through
    ray_address: str | None = None  # "auto", ray://host:10001, or None: RAY_ADDRESS, else a local Ray

    def merged(self, overrides: Mapping[str, Any]) -> Resources:
        return dataclasses.replace(self, **dict(overrides)) if overrides else self


SBATCH_OPTION = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_MIN = {"gpus_per_cell": 0, "cpus_per_cell": 1, "mem_gb": 1, "time_min": 1, "max_parallel": 1}


def _accepts(hint: Any, value: Any) -> bool:
    """Whether ``value`` (from YAML) fits the field's type hint (bool is not an int here)."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    for option in typing.get_args(hint) if union else (hint,):
        origin = typing.get_origin(option) or option
        if option is type(None) and value is None:
            return True
        if origin is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if origin is str and isinstance(value, str):
            return True
        if origin is list and isinstance(value, list) and all(isinstance(v, str) for v in value):
            return True
        if origin is dict and isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return True
    return False


def _describe(hint: Any) -> str:
    words = {int: "a whole number", str: "a string", list: "a list of strings", dict: "a mapping", type(None): "null"}
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    return " or ".join(
        words.get(typing.get_origin(o) or o, str(o)) for o in (typing.get_args(hint) if union else (hint,))
    )


def check_resources(raw: Any, where: str, fail: Callable[[str, str], ConfigError]) -> dict[str, Any]:
    """A ``resources:`` mapping checked against :class:`Resources`' fields (unknown keys, types, minimums)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise fail("resources is a mapping (gpus_per_cell, cpus_per_cell, mem_gb, time_min, partition, ...)", where)
    hints = get_type_hints(Resources)
    for key, value in raw.items():
        spot = f"{where}.{key}"
        if key not in hints:
            raise fail(f"unknown key {key!r} (known: {', '.join(sorted(hints))})", spot)
        if not _accepts(hints[key], value):
            raise fail(f"{key} must be {_describe(hints[key])}, got {value!r}", spot)
        if key in _MIN and value is not None and value < _MIN[key]:
            raise fail(f"{key} must be at least {_MIN[key]}, got {value!r}", spot)
        if key != "setup" and (bad := _line_break(value)) is not None:
            raise fail(f"{key} must be one line: {bad!r} would start a line of its own in the job script", spot)
    for name in raw.get("slurm") or {}:
        if not SBATCH_OPTION.fullmatch(name):
            raise fail(f"{name!r} is not an sbatch option name (letters, digits, '-', '_')", f"{where}.slurm")
    return dict(raw)


def _line_break(value: Any) -> str | None:
    """The first text inside ``value`` holding a line break or another control character: written
    into the sbatch script as ``#SBATCH --key=value``, it would become a command of its own (only
    ``setup`` holds commands, where a reader of the study file looks for them)."""
    texts = [value] if isinstance(value, str) else []
    if isinstance(value, dict):
        texts += [str(k) for k in value] + [v for v in value.values() if isinstance(v, str)]
    return next((t for t in texts if any(ord(c) < 32 or ord(c) == 127 for c in t)), None)


def visible_gpus() -> list[str]:
    """The GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` when set, else every CUDA device."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    try:
        import torch
    except ImportError:
        return []
    return [str(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
