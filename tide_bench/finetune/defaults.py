"""Fine-tuning defaults from the device: the micro-batch, and the base and LoRA dtypes.

A pure function of the device's facts (kind, name, free memory, bf16 support), the model's size
in parameters, the longest training sequence, and the measured rows of
``tide_bench/core/device_evidence.yaml``; the adapter card records what it chose and why. What
the user sets (``--batch-size``, ``--grad-accum``, ``--precision``) always wins.

**Micro-batch.** Every optimizer step sees 16 sequences (:mod:`.config`); how they are cut is a
speed and memory question. On one H200 a LoRA step of a 0.5B model is bound by kernel launches,
not arithmetic (a 3B model, six times the work, took 1.35x the time of the 0.5B at 4 x 4, about
its 1.5x the layers), so fewer, larger micro-batches win: 16 x 1 ran 11,993 tokens/s against 4,021
at 4 x 4 (2.98x), with 7.8 GB peak against 2.75 GB. On a GPU the largest micro-batch of 16, 8, 4,
2, 1 whose estimated peak fits the free memory is taken. The estimate is fitted to the evidence:
the weights (bytes per parameter of the base dtype) plus activations per sequence token, which
grow with the model's size as a power fitted through the measured sizes (0.5B: 2.1 MiB a token,
3B: 5.3 MiB), times the longest sequence, with the measured ratios for an fp32 base (1.5x) and
gradient checkpointing (0.23x). On a CPU one sequence per micro-batch stays (docs/benchmarks.md:
less padding, a third of the memory, faster on an idle machine).

**Dtypes.** The frozen base is loaded in the training dtype (bf16 on a GPU that has it) and peft
keeps the LoRA weights in fp32 (``autocast_adapter_dtype``), computing under bf16 autocast. The
H200 run also measured the older setup, an fp32 base under bf16 autocast, 1.15x faster at 4 x 4
(4,615 against 4,021 tokens/s). Measured here on CPU (benchmarks/bench_lora_dtypes.py, which counts
the operators one micro-batch dispatches, the cost that bounds a launch-bound GPU step): the fp32
base dispatches *more* operators, not fewer (9,209 against 8,827 per micro-batch of a 24-layer
Qwen2: autocast casts every frozen fp32 weight on every call, as it caches casts only of weights
that need gradients), while peft's own cost in the bf16 setup, ``_cast_input_dtype`` casting each
bf16 activation to fp32 before the dropout and LoRA-A (then autocast back, and the same in the
backward pass), is about 8 casts per LoRA module and micro-batch (762 of the 963). So the dtype
does not explain the 1.15x; the two rows are not comparable (the bf16
one ran first in the process with validation every 10 steps, the fp32 one last, without), and the
fp32 base costs 2x the weights and 1.5x the activations. The choice is therefore data: another
base dtype replaces bf16 only where a *comparable* row (same device, size within 10 %, same
micro-batch, validation off, both measured) is more than 10 % faster; benchmarks/gpu_check.sh
measures exactly those pairs at 16 x 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tide_bench.core.evidence import Evidence, shipped_evidence
from tide_bench.finetune.precision import DeviceFacts, Precision, choose_precision

CANDIDATES = (16, 8, 4, 2, 1)
CPU_MICRO_BATCH = 1
UNKNOWN_GPU_MICRO_BATCH = 4  # free memory or model size unknown: the micro-batch trained everywhere before
HEADROOM = 0.85  # share of the free memory a plan may fill (the allocator fragments; other processes move)
FASTER = 1.10  # a comparable row must beat bf16 by this much to change the base dtype
DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0, "nf4": 1.0}  # nf4: 4-bit layers + fp32 rest (reasoned)
GIB = 2**30


@dataclass(frozen=True)
class TrainingDefaults:
    """What the device chose: the micro-batch, the dtypes, the memory estimate, and why."""

    micro_batch: int
    precision: Precision
    base_dtype: str
    lora_dtype: str
    estimated_peak_gb: float | None
    reason: str
    dtype_reason: str
    evidence: str

    def card(self) -> dict[str, Any]:
        return {
            "micro_batch": self.micro_batch,
            "base_dtype": self.base_dtype,
            "lora_dtype": self.lora_dtype,
            "compute": f"{self.precision.name} autocast" if self.precision.name != "fp32" else "fp32",
            "estimated_peak_gb": self.estimated_peak_gb,
            "micro_batch_reason": self.reason,
            "dtype_reason": self.dtype_reason,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class MemoryModel:
    """Peak GPU memory of a LoRA step, fitted to the evidence (GiB)."""

    sizes: tuple[tuple[float, float], ...]  # (parameters, GiB of activations per sequence token), bf16 base
    fp32_factor: float
    checkpointing_factor: float
    overhead_gb: float
    reserved_ratio: float

    def per_token_gb(self, params: float) -> float:
        """Activations per token at ``params``: a power law through the two nearest measured sizes
        (in proportion to the size when only one was measured: larger than the power law above it)."""
        if len(self.sizes) == 1:
            p0, a0 = self.sizes[0]
            return a0 * params / p0
        lo, hi = (self.sizes[0], self.sizes[1]) if params <= self.sizes[1][0] else self.sizes[-2:]
        for a, b in zip(self.sizes, self.sizes[1:], strict=False):
            if a[0] <= params <= b[0]:
                lo, hi = a, b
        exponent = math.log(hi[1] / lo[1]) / math.log(hi[0] / lo[0])
        return float(lo[1] * math.pow(params / lo[0], exponent))

    def peak_gb(self, params: float, seq_tokens: int, micro_batch: int, base: str, checkpointing: bool) -> float:
        """Estimated peak *reserved* memory: weights + overhead + activations of the longest micro-batch."""
        per_token = self.per_token_gb(params) * (self.fp32_factor if base == "float32" else 1.0)
        per_token *= self.checkpointing_factor if checkpointing else 1.0
        allocated = params * DTYPE_BYTES.get(base, 2.0) / GIB + self.overhead_gb + micro_batch * seq_tokens * per_token
        return allocated * self.reserved_ratio


def _activation_per_token(row: dict[str, Any]) -> float:
    weights = float(row["params"]) * DTYPE_BYTES.get(str(row["base_dtype"]), 2.0) / GIB
    return max(float(row["peak_allocated_gb"]) - weights, 0.0) / (int(row["micro_batch"]) * int(row["max_seq_tokens"]))


def _plain(row: dict[str, Any], base: str = "bfloat16") -> bool:
    return row["base_dtype"] == base and not row.get("gradient_checkpointing") and not row.get("quantize")


def _ratio(rows: list[dict[str, Any]], changed: dict[str, Any], default: float) -> float:
    """Activation ratio of rows differing from a plain bf16 row of the same size and micro-batch only by ``changed``."""
    ratios = []
    for row in rows:
        if not all(row.get(k) == v for k, v in changed.items()):
            continue
        base = next(
            (r for r in rows if _plain(r) and r["params"] == row["params"] and r["micro_batch"] == row["micro_batch"]),
            None,
        )
        if base is not None and _activation_per_token(base) > 0:
            ratios.append(_activation_per_token(row) / _activation_per_token(base))
    return max(ratios) if ratios else default


def memory_model(evidence: Evidence) -> MemoryModel:
    """Fit :class:`MemoryModel` to the training rows (the largest per-token figure of each size)."""
    rows = [r for r in evidence.training if r.get("peak_allocated_gb")]
    by_size: dict[float, float] = {}
    for row in (r for r in rows if _plain(r)):
        p = float(row["params"])
        by_size[p] = max(by_size.get(p, 0.0), _activation_per_token(row))
    if not by_size:
        raise ValueError(f"{evidence.source}: no bf16 training row with peak memory to fit")
    reserved = [float(r["peak_reserved_gb"]) / float(r["peak_allocated_gb"]) for r in rows if r.get("peak_reserved_gb")]
    return MemoryModel(
        sizes=tuple(sorted(by_size.items())),
        fp32_factor=_ratio(rows, {"base_dtype": "float32", "gradient_checkpointing": False}, 2.0),
        checkpointing_factor=_ratio(rows, {"base_dtype": "bfloat16", "gradient_checkpointing": True}, 1.0),
        overhead_gb=0.25,
        reserved_ratio=max(reserved, default=1.2),
    )


def _same_model(row: dict[str, Any], facts: DeviceFacts, params: float, micro_batch: int) -> bool:
    return (
        row.get("device") == facts.name
        and abs(float(row["params"]) - params) <= 0.1 * params
        and int(row["micro_batch"]) == micro_batch
        and not row.get("validation")
        and not row.get("gradient_checkpointing")
        and not row.get("quantize")
    )


def faster_base_dtype(
    evidence: Evidence, facts: DeviceFacts, params: float, micro_batch: int
) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """Another base dtype that a comparable row shows > 10 % faster than bf16 on this device, with both rows."""
    rows = [r for r in evidence.training if _same_model(r, facts, params, micro_batch)]
    bf16 = max((r for r in rows if r["base_dtype"] == "bfloat16"), key=lambda r: r["tokens_per_s"], default=None)
    others = [r for r in rows if r["base_dtype"] != "bfloat16"]
    if bf16 is None or not others:
        return None
    best = max(others, key=lambda r: r["tokens_per_s"])
    if float(best["tokens_per_s"]) > FASTER * float(bf16["tokens_per_s"]):
        return str(best["base_dtype"]), best, bf16
    return None


def _measured_at(evidence: Evidence, facts: DeviceFacts, micro_batch: int) -> str:
    rows = [r for r in evidence.training if r.get("device") == facts.name and int(r["micro_batch"]) == micro_batch]
    if not rows:
        return f"nothing measured on {facts.name or 'this GPU'} at micro-batch {micro_batch}"
    shown = ", ".join(
        f"{float(r['params']) / 1e9:.1f}B {r['base_dtype']} base"
        f"{' + checkpointing' if r.get('gradient_checkpointing') else ''} {r['tokens_per_s']:,} tokens/s"
        f"{' (validation on)' if r.get('validation') else ''}"
        for r in rows
    )
    return f"measured on {facts.name} at {micro_batch} x {16 // micro_batch}: {shown}"


def choose_dtypes(
    facts: DeviceFacts, precision: Precision, params: float | None, micro_batch: int, quantize: str | None,
    evidence: Evidence, requested: str,
) -> tuple[str, str]:  # fmt: skip
    """The base dtype and the reason (the LoRA weights are fp32 in every case: peft's ``autocast_adapter_dtype``)."""
    if quantize:
        return "nf4", f"QLoRA: NF4 4-bit base computing in {precision.torch_dtype}; LoRA weights fp32"
    if facts.device != "cuda" or requested != "auto":
        return precision.torch_dtype, f"base in the training dtype ({precision.reason}); LoRA weights fp32"
    faster = faster_base_dtype(evidence, facts, params, micro_batch) if params else None
    if faster:
        dtype, row, bf16 = faster
        return dtype, (
            f"{dtype} base under {precision.name} autocast: {row['tokens_per_s']:,} tokens/s against bf16's "
            f"{bf16['tokens_per_s']:,} on {facts.name} at {micro_batch} x {16 // micro_batch} ({evidence.source})"
        )
    return precision.torch_dtype, (
        f"{precision.torch_dtype} base, LoRA weights fp32 under {precision.name} autocast: half the weight memory of "
        f"an fp32 base and no comparable measurement shows another base faster "
        f"({_measured_at(evidence, facts, micro_batch)}; {evidence.source})"
    )


def choose_micro_batch(
    facts: DeviceFacts, params: float | None, seq_tokens: int, base: str, checkpointing: bool, model: MemoryModel
) -> tuple[int, float | None, str]:
    """The largest micro-batch of :data:`CANDIDATES` whose estimated peak fits the free GPU memory."""
    if facts.device != "cuda":
        return CPU_MICRO_BATCH, None, (
            f"{facts.device}: one sequence per micro-batch (less padding and a third of the memory of four; "
            "docs/benchmarks.md)"
        )  # fmt: skip
    if not params or not facts.free_memory_bytes:
        what = "the model's size" if not params else "the free GPU memory"
        return UNKNOWN_GPU_MICRO_BATCH, None, f"{what} is unknown: {UNKNOWN_GPU_MICRO_BATCH}, the earlier default"
    budget = HEADROOM * facts.free_memory_bytes / GIB
    for batch in CANDIDATES:
        peak = model.peak_gb(params, seq_tokens, batch, base, checkpointing)
        if peak <= budget or batch == 1:
            free = f"{HEADROOM:.0%} of the {facts.free_memory_bytes / GIB:.0f} GB free"
            why = (
                f"fits in {free} (fewer, larger micro-batches are faster: 16 x 1 ran 2.98x 4 x 4 on an H200)"
                if peak <= budget
                else f"is over {free} even at 1: lower --max-length, add --gradient-checkpointing or --quantize 4bit"
            )
            return (
                batch,
                round(peak, 1),
                (
                    f"{batch} x {16 // batch}: estimated peak {peak:.1f} GB for {params / 1e9:.2f}B parameters and "
                    f"sequences up to {seq_tokens} tokens {why}"
                ),
            )
    raise AssertionError("unreachable")  # pragma: no cover


def choose_training_defaults(
    facts: DeviceFacts,
    *,
    params: float | None,
    seq_tokens: int,
    requested_precision: str = "auto",
    batch_size: int | None = None,
    quantize: str | None = None,
    gradient_checkpointing: bool = False,
    evidence: Evidence | None = None,
) -> TrainingDefaults:
    """The micro-batch and dtypes for this device and model; ``batch_size`` (the user's) always wins."""
    evidence = evidence or shipped_evidence()
    precision = choose_precision(requested_precision, facts)
    model = memory_model(evidence)
    base = "nf4" if quantize else precision.torch_dtype
    if batch_size:
        micro, peak, reason = batch_size, None, f"{batch_size}: set by --batch-size"
    else:
        micro, peak, reason = choose_micro_batch(facts, params, seq_tokens, base, gradient_checkpointing, model)
    base, dtype_reason = choose_dtypes(facts, precision, params, micro, quantize, evidence, requested_precision)
    if base == "float32" and facts.device == "cuda" and params and facts.free_memory_bytes and not batch_size:
        fp32_peak = model.peak_gb(params, seq_tokens, micro, base, gradient_checkpointing)
        if fp32_peak > HEADROOM * facts.free_memory_bytes / GIB:  # the faster base must fit too
            base, dtype_reason = precision.torch_dtype, dtype_reason + "; it does not fit here, so the training dtype"
        else:
            peak = round(fp32_peak, 1)
    return TrainingDefaults(micro, precision, base, "float32", peak, reason, dtype_reason, evidence.source)
