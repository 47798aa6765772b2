"""The batch size and attention implementation of ``tide-bench eval``, chosen from the device.

**Batch size.** ``--batch-size auto`` (the default) is resolved here rather than left to lm-eval,
whose hf backend sizes it with five forward passes of ``max_batch_size`` sequences at the
model's full context length (32,768 tokens for Qwen2.5), halving on out-of-memory: on a GPU it
settles on a small batch after long probing, and on a CPU (where there is no out-of-memory error
to catch) it runs those forwards for real. Generation is bound by per-step overhead on a GPU, so
larger batches win: raw ``generate`` of a 0.5B model on one H200 ran 5.84 items/s at batch 64 and
9.64 at 128 (1.65x; ``tide_bench/core/device_evidence.yaml``). On a CUDA GPU the batch is the largest
power of two up to the largest measured batch whose KV cache (both caches, every layer, prompt
plus new tokens) and prefill activations fit in the free memory beside the weights. On a CPU it
stays 1 (nothing measured larger there); the vLLM backend gets lm-eval's ``auto`` (every request
to the engine at once: vLLM batches continuously); API backends keep 1 (one request at a time
unless the user asks for more, so a paid endpoint's rate limits are never surprised).

**Attention.** lm-eval's hf backend left-pads each batch. Under SDPA a padded batch carries a
mask, which keeps PyTorch off its fused flash kernel (the H200 profile of one ``tide-bench
eval``: SDPA over half of generate time). flash-attention 2 unpads instead (variable-length
kernels). So on a CUDA GPU of compute capability 8.0 or newer, in bf16 or fp16, with the
``flash_attn`` package importable, ``attn_implementation=flash_attention_2`` is added to the
model arguments; otherwise transformers' default (SDPA) stays. A user's own
``attn_implementation=`` always wins. This choice is reasoned from the profile, not measured
against SDPA yet: benchmarks/gpu_check.sh measures both. Length bucketing needs nothing added:
lm-eval's hf backend already sorts requests by length (longest first) before cutting batches,
so each batch holds prompts of similar length.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from tide_bench.core.evidence import Evidence, shipped_evidence

HF_BACKENDS = ("hf", "hf-auto", "huggingface")
HEADROOM = 0.8  # share of the free memory the KV cache and activations may fill beside the weights
UNKNOWN_GPU_BATCH = 16  # the model's shape or the free memory unknown
CPU_BATCH = 1
API_BATCH = 1
GIB = 2**30


@dataclass(frozen=True)
class GenerationDevice:
    """The facts the choices depend on, gathered once (and passed in, so the choices are testable)."""

    kind: str  # cuda | cpu | mps
    name: str | None = None
    free_memory_bytes: int | None = None
    capability: tuple[int, int] | None = None
    flash_attn: bool = False  # the flash_attn package is importable


@dataclass(frozen=True)
class ModelShape:
    """What sizes a generation batch: read from the model's configuration."""

    params: int
    layers: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    vocab: int
    dtype_bytes: int = 2


@dataclass(frozen=True)
class Choice:
    value: Any
    reason: str


def generation_device(device: str | None) -> GenerationDevice:
    """The facts of ``--device`` (a CUDA device's name, free memory and compute capability)."""
    import torch

    if not (device or "").startswith("cuda") or not torch.cuda.is_available():
        return GenerationDevice("mps" if (device or "").startswith("mps") else "cpu")
    index = torch.device(device or "cuda").index or 0
    try:
        free = int(torch.cuda.mem_get_info(index)[0])
    except RuntimeError:  # pragma: no cover - a driver that does not report it
        free = None
    return GenerationDevice(
        "cuda",
        name=str(torch.cuda.get_device_name(index)),
        free_memory_bytes=free,
        capability=tuple(torch.cuda.get_device_capability(index)),  # type: ignore[arg-type]
        flash_attn=importlib.util.find_spec("flash_attn") is not None,
    )


def model_shape(config: Any, params: int | None = None, dtype_bytes: int = 2) -> ModelShape | None:
    """The shape of a transformers configuration (None when it lacks the usual fields)."""
    text = getattr(config, "text_config", None) or config
    try:
        heads = int(text.num_attention_heads)
        hidden = int(text.hidden_size)
        layers = int(text.num_hidden_layers)
        kv = int(getattr(text, "num_key_value_heads", None) or heads)
        head_dim = int(getattr(text, "head_dim", None) or hidden // heads)
        inter = int(getattr(text, "intermediate_size", None) or 4 * hidden)
        vocab = int(text.vocab_size)
    except (AttributeError, TypeError, ValueError, ZeroDivisionError):
        return None
    if params is None:  # embeddings + attention + MLP, the usual decoder layout
        params = vocab * hidden + layers * (2 * hidden * hidden + 2 * hidden * kv * head_dim + 3 * hidden * inter)
    return ModelShape(params, layers, kv, head_dim, hidden, inter, vocab, dtype_bytes)


def largest_measured_batch(evidence: Evidence) -> int:
    """The largest batch of the fastest measured raw-generate rate (the cap: larger is not measured)."""
    rows = [r for r in evidence.generation if r.get("path") == "raw generate"]
    best = max(rows, key=lambda r: float(r["items_per_s"]), default=None)
    return int(best["batch_size"]) if best else UNKNOWN_GPU_BATCH


def sequence_bytes(shape: ModelShape, context_tokens: int, new_tokens: int) -> float:
    """Memory one sequence holds at its longest: the KV cache of every layer, the prefill's largest
    activations (the MLP's intermediate and four hidden-size tensors per prompt token), the logits."""
    kv = 2 * shape.layers * shape.kv_heads * shape.head_dim * shape.dtype_bytes * (context_tokens + new_tokens)
    prefill = context_tokens * (shape.intermediate + 4 * shape.hidden) * shape.dtype_bytes
    return float(kv + prefill + 4 * shape.vocab)


def choose_batch_size(
    requested: str | int,
    backend: str,
    device: GenerationDevice,
    shape: ModelShape | None,
    context_tokens: int,
    new_tokens: int,
    evidence: Evidence | None = None,
) -> Choice:
    """``--batch-size`` as lm-eval gets it: the user's number or ``auto:N`` unchanged; ``auto`` resolved."""
    if requested != "auto":
        return Choice(requested, "set by --batch-size")
    if backend == "vllm":
        return Choice("auto", "vllm: every request to the engine at once (it batches continuously)")
    if backend not in HF_BACKENDS:
        return Choice(API_BATCH, f"{backend}: one request at a time (--batch-size N for more)")
    if device.kind != "cuda":
        return Choice(CPU_BATCH, f"{device.kind}: one sequence at a time (nothing larger measured on a CPU)")
    if shape is None or not device.free_memory_bytes:
        missing = "the model's shape" if shape is None else "the free GPU memory"
        return Choice(UNKNOWN_GPU_BATCH, f"{missing} is unknown: {UNKNOWN_GPU_BATCH}")
    evidence = evidence or shipped_evidence()
    cap = largest_measured_batch(evidence)
    room = HEADROOM * device.free_memory_bytes - shape.params * shape.dtype_bytes
    per_sequence = sequence_bytes(shape, context_tokens, new_tokens)
    batch = cap
    while batch > 1 and batch * per_sequence > room:
        batch //= 2
    return Choice(
        batch,
        f"{batch}: the largest power of two up to {cap} (the fastest measured batch, {evidence.source}) whose "
        f"KV cache and prefill for {context_tokens} + {new_tokens} tokens ({batch * per_sequence / GIB:.1f} GB) fit in "
        f"{HEADROOM:.0%} of the {device.free_memory_bytes / GIB:.0f} GB free beside the weights",
    )


def choose_attention(backend: str, device: GenerationDevice, dtype: str | None, given: dict[str, str]) -> Choice:
    """``attn_implementation`` to add to the model arguments (None: leave transformers' default)."""
    if "attn_implementation" in given:
        return Choice(None, f"{given['attn_implementation']}: set in --model-args")
    if backend not in HF_BACKENDS or device.kind != "cuda":
        return Choice(None, "the backend's default")
    half = (dtype or "").replace("torch.", "") in ("bfloat16", "bf16", "float16", "fp16", "half")
    if device.flash_attn and half and (device.capability or (0, 0)) >= (8, 0):
        return Choice(
            "flash_attention_2", "flash_attention_2: unpads the left-padded batches SDPA computes with a mask"
        )
    why = (
        "flash_attn is not installed"
        if not device.flash_attn
        else "the model is not in bf16/fp16"
        if not half
        else "the GPU is older than compute capability 8.0"
    )
    return Choice(None, f"sdpa (transformers' default): {why}")


CHARS_PER_TOKEN = 3.0  # conservative (English prose runs about 4): the KV estimate errs on the large side
TEMPLATE_TOKENS = 32  # a chat template's role markers and generation prompt
DTYPE_BYTES = {"float32": 4, "fp32": 4, "float": 4}


def longest_prompt_tokens(items: list[Any], system: str) -> int:
    """An upper estimate of the longest prompt in tokens: its characters over :data:`CHARS_PER_TOKEN`."""
    chars = max(
        (len(i.client_utterance) + sum(len(m.get("content", "")) for m in i.history or []) for i in items), default=0
    )
    return int((chars + len(system)) / CHARS_PER_TOKEN) + TEMPLATE_TOKENS


def read_shape(model_args: dict[str, str]) -> ModelShape | None:
    """The model's shape from its configuration (``pretrained=``, ``revision=``, ``gguf_file=``); None
    when there is no configuration to read (an API model, an offline hub id not in the cache)."""
    pretrained = model_args.get("pretrained")
    if not pretrained:
        return None
    from transformers import AutoConfig

    kwargs = {k: model_args[k] for k in ("revision", "gguf_file") if model_args.get(k)}
    try:
        config = AutoConfig.from_pretrained(pretrained, **kwargs)
    except Exception:  # unknown shape only means the conservative batch
        return None
    return model_shape(config, dtype_bytes=DTYPE_BYTES.get(model_args.get("dtype", "").replace("torch.", ""), 2))


def device_choices(
    backend: str,
    requested: str | int,
    max_batch_size: int | None,
    device: str | None,
    model_args: dict[str, str],
    context_tokens: int,
    new_tokens: int,
) -> dict[str, Choice]:
    """The batch size and the attention implementation for this run (facts gathered here)."""
    facts = generation_device(device) if backend in HF_BACKENDS else GenerationDevice("other")
    shape = read_shape(model_args) if backend in HF_BACKENDS and facts.kind == "cuda" else None
    batch = choose_batch_size(requested, backend, facts, shape, context_tokens, new_tokens)
    if isinstance(batch.value, int) and requested == "auto" and max_batch_size and batch.value > max_batch_size:
        batch = Choice(max_batch_size, f"{max_batch_size}: --max-batch-size (the device allowed {batch.value})")
    attention = choose_attention(backend, facts, model_args.get("dtype"), model_args)
    return {"batch_size": batch, "attention": attention}
