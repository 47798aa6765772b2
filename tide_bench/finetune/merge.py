"""Merge a LoRA adapter into its base model: one ordinary model folder (for vLLM, or sharing).

The base and revision come from the adapter card. The base is loaded unquantized, also for a
QLoRA adapter (merging into 4-bit weights would round the adapter away), in ``dtype``
("auto": the base's own dtype). The merged folder carries ``merge_card.json`` with the
adapter card inside, the adapter's resolved path and its sha256, so an evaluation of it records
the adapter exactly as ``peft=`` does (run.json ``model.adapter``, ``loaded_via: merged``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.core.jsonio import read_json, write_json
from tide_bench.core.provenance import utc_now
from tide_bench.generation.manifest import ADAPTER_CARD, MERGE_CARD, adapter_sha256

DTYPES = ("auto", "float32", "bfloat16", "float16")


def merge_adapter(
    adapter: str | Path, out: str | Path, *, base: str | None = None, dtype: str = "auto", overwrite: bool = False
) -> Path:
    """Write base + adapter as merged weights to ``out``; returns ``out``."""
    adapter, out = Path(adapter), Path(out)
    if dtype not in DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r}", hint=", ".join(DTYPES))
    if not (adapter / "adapter_config.json").is_file():
        raise ConfigError("not a LoRA adapter folder (no adapter_config.json)", path=adapter)
    card_path = adapter / ADAPTER_CARD
    card: dict[str, Any] = read_json(card_path, ConfigError) if card_path.is_file() else {}
    base = base or card.get("base_model")
    if not base:
        raise ConfigError(
            f"no base model: {ADAPTER_CARD} is missing or names none", path=adapter, hint="pass --base MODEL"
        )
    if out.resolve() == adapter.resolve():
        raise ConfigError("--out must differ from the adapter folder", path=out)
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise ConfigError(f"{out} is not empty", path=out, hint="choose a new --out or pass --overwrite")
        if not (out / MERGE_CARD).is_file():
            raise ConfigError(f"refusing to overwrite {out}: it holds no {MERGE_CARD} (not a merged model)", path=out)

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    revision = card.get("base_model_revision") if base == card.get("base_model") else None
    try:
        model = AutoModelForCausalLM.from_pretrained(
            base, revision=revision, dtype="auto" if dtype == "auto" else getattr(torch, dtype)
        )
        merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load {base!r} with the adapter {adapter}: {exc}") from None
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    merged.save_pretrained(out)
    AutoTokenizer.from_pretrained(adapter).save_pretrained(out)
    write_json(
        out / MERGE_CARD,
        {
            "kind": "tide-bench-merged-adapter",
            "created_at": utc_now(),
            "base_model": base,
            "base_model_revision": revision,
            "adapter": str(adapter.resolve()),  # resolved: the card is read from another folder later
            "adapter_sha256": adapter_sha256(adapter),
            "dtype": str(merged.dtype),
            "adapter_card": card or None,
        },
    )
    return out
