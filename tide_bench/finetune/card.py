"""``adapter_card.json`` and ``loss_curve.svg``: what produced the adapter, and which weights it holds.

The card says which step's weights were saved (the best validation loss, restored by
Trainer, or the last step when there is no validation), the exact chat template and its
settings, the result of the masking check, and how many examples were left out as too long.
`tide-bench eval` copies the card into run.json when it evaluates the adapter.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tide_bench.charts.figure import Line, Rule, line_chart
from tide_bench.charts.style import MARKERS
from tide_bench.core.jsonio import atomic_write_text
from tide_bench.core.provenance import package_versions, utc_now
from tide_bench.finetune.chat import template_sha256, template_text, uses_chat_template
from tide_bench.finetune.config import FinetuneConfig, StepPlan
from tide_bench.finetune.defaults import TrainingDefaults
from tide_bench.finetune.examples import EncodedSplit, system_prompt
from tide_bench.finetune.precision import DeviceFacts, Precision
from tide_bench.tasks.prompts import CHAT_TEMPLATE_KWARGS, PROMPT_FORMAT_VERSION, prompt_sha256

PLACEMENT_NOTES = {
    "system": "kept (the template's system role)",
    "first_user_turn": "folded into the start of the first user turn: the template has no system role "
    "(tide-bench eval folds it the same way)",
    "dropped": "dropped: the template renders no system prompt, not even in the first user turn",
    "mixed": "mixed: examples differ in where the system prompt went",
}
CARD_PACKAGES = ("tide-bench", "torch", "transformers", "peft", "accelerate", "bitsandbytes", "lm_eval")


@dataclass(frozen=True)
class TrainingOutcome:
    """What the Trainer run produced, in the terms the card uses."""

    steps: int
    planned_steps: int
    epochs: float
    stopped: str
    train_seconds: float
    tokens: int
    initial_val_loss: float | None
    best_val_loss: float | None
    best_step: int | None
    last_val_loss: float | None
    saved: str
    resumed_from: str | None

    @property
    def beats_base(self) -> bool | None:
        """Whether the saved adapter's validation loss is below the untrained model's (None without validation)."""
        if self.best_val_loss is None or self.initial_val_loss is None:
            return None
        return self.best_val_loss < self.initial_val_loss

    @property
    def tokens_per_second(self) -> float | None:
        return round(self.tokens / self.train_seconds, 1) if self.train_seconds > 0 else None


def outcome_from_state(
    state: Any, train_seconds: float, tokens: int, validate: bool, resumed_from: str | None
) -> TrainingOutcome:
    evals = [(r["step"], r["eval_loss"]) for r in state.log_history if "eval_loss" in r]
    initial = next((loss for step, loss in evals if step == 0), None)
    best_step = getattr(state, "best_global_step", None) or (
        _step_of(state.best_model_checkpoint) if validate else None
    )
    stopped_early = state.global_step < state.max_steps
    return TrainingOutcome(
        steps=state.global_step,
        planned_steps=state.max_steps,
        epochs=round(float(state.epoch or 0), 3),
        stopped="early stopping: validation loss stopped improving" if stopped_early else "planned steps done",
        train_seconds=round(train_seconds, 2),
        tokens=int(tokens),
        initial_val_loss=initial,
        best_val_loss=state.best_metric if validate else None,
        best_step=best_step,
        last_val_loss=evals[-1][1] if evals else None,
        saved=f"best validation loss (step {best_step}), restored"
        if validate and best_step is not None
        else "last step",
        resumed_from=resumed_from,
    )


def _step_of(checkpoint: str | None) -> int | None:
    if not checkpoint:
        return None
    tail = Path(checkpoint).name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def loss_history(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Trainer's log as the card's rows: training loss and the LR of each step, validation loss per evaluation."""
    rows = []
    for r in log_history:
        if "loss" in r:
            rows.append(
                {
                    "step": r["step"],
                    "epoch": r.get("epoch"),
                    "train_loss": r["loss"],
                    "lr": r.get("learning_rate"),
                    "grad_norm": r.get("grad_norm"),
                }
            )
        elif "eval_loss" in r:
            rows.append({"step": r["step"], "epoch": r.get("epoch"), "val_loss": r["eval_loss"]})
    return rows


def system_prompt_placement(*splits: EncodedSplit) -> str:
    """One placement for the adapter (``mixed`` if examples differ, which no real template does)."""
    found = {p for split in splits for p in split.placements}
    return found.pop() if len(found) == 1 else ("system" if not found else "mixed")


def build_card(
    *,
    config: FinetuneConfig,
    tokenizer: Any,
    provenance: dict[str, Any],
    n_validation_items: int,
    train: EncodedSplit,
    validation: EncodedSplit,
    precision: Precision,
    facts: DeviceFacts,
    plan: StepPlan,
    targets: list[str],
    parameters: dict[str, int],
    reply_logits_only: bool,
    outcome: TrainingOutcome,
    log_history: list[dict[str, Any]],
    gpus: dict[str, Any] | None = None,
    defaults: TrainingDefaults | None = None,
) -> dict[str, Any]:
    chat = uses_chat_template(tokenizer, config.chat_template)
    placement = system_prompt_placement(train, validation)
    return {
        "kind": "tide-bench-adapter",
        "created_at": utc_now(),
        "base_model": config.model,
        "base_model_revision": config.revision,
        "data": provenance | {"validation_split": config.validation_split, "n_validation_items": n_validation_items},
        "trained_on_test_split": config.split == "test",
        "prompt": {
            "condition": config.prompt,
            "prompt_sha256": prompt_sha256(system_prompt(config.prompt), placement=placement),
            "system_prompt_placement": placement,
            "format_version": PROMPT_FORMAT_VERSION,
            "chat_template": chat,
            "chat_template_kwargs": CHAT_TEMPLATE_KWARGS if chat else None,
        },
        "template": {
            "sha256": template_sha256(tokenizer) if chat else None,
            "text": template_text(tokenizer) if chat else None,
            "system_prompt": PLACEMENT_NOTES[placement] if chat else "plain transcript",
            "end_of_turn": sorted(train.end_of_turn | validation.end_of_turn),
            "bos_rule": "special tokens added unless the prompt starts with BOS (lm-eval's rule)",
        },
        "masking": {
            "check": "passed",
            "what": "every example's evaluation prompt is the exact start of its conversation; the labelled part is "
            "the reply and the end-of-turn marker, nothing before it",
            "examples_checked": train.n_items + validation.n_items,
            "min_labelled_tokens": train.min_labelled,
            "boundary_retokenized": train.boundary_retokenized + validation.boundary_retokenized,
            "logits_on_reply_only": reply_logits_only,
        },
        "truncation": {
            "max_length": config.max_length,
            "policy": "examples longer than max_length are left out, never cut",
            "train": train.report(),
            "validation": validation.report(),
        },
        "hyperparameters": config.as_dict()
        | {
            "target_modules": targets,
            "precision": precision.name,
            "precision_reason": precision.reason,
            "batch_size": plan.batch_size,
            "grad_accum": plan.grad_accum,
            "processes": plan.processes,
            "sequences_per_step": plan.batch_size * plan.grad_accum * plan.processes,
            "warmup_steps": plan.warmup_steps,
            "eval_steps": plan.eval_steps,
            "steps_per_epoch": plan.steps_per_epoch,
        },
        "device": asdict(facts) | {k: v for k, v in (gpus or {}).items() if k != "note"},
        "device_defaults": defaults.card() if defaults else None,
        "notes": [n for n in (plan.note, (gpus or {}).get("note")) if n],
        "quantization": {
            "method": "bitsandbytes NF4, double quantization",
            "bits": 4,
            "compute_dtype": precision.torch_dtype,
            "evaluation": "peft= loads the adapter onto the unquantized base (the usual practice; the base it "
            "trained against was NF4)",
        }
        if config.quantize
        else None,
        "parameters": parameters,
        "examples": {"train": len(train.examples), "validation": len(validation.examples)},
        "training": asdict(outcome)
        | {
            "tokens_per_second": outcome.tokens_per_second,
            "beats_base": outcome.beats_base,
            "tokens_and_seconds": "training steps of this session only (no evaluation or "
            "saving; a resumed run counts from its checkpoint)",
        },
        "best": {"step": outcome.best_step, "val_loss": outcome.best_val_loss},
        "loss_history": loss_history(log_history),
        "packages": package_versions(CARD_PACKAGES),
    }


LOSS_CURVE = "loss_curve.svg"


def loss_figure(history: list[dict[str, Any]], best_step: int | None) -> str:
    """The loss curve as SVG: training loss at every logged step (a line), validation loss at each
    evaluation (marked points), a dotted line at the saved step."""
    train = [h for h in history if "train_loss" in h]
    val = [h for h in history if "val_loss" in h]
    lines = [
        Line(
            "train (per step)",
            MARKERS["zero-shot"][0],
            None,
            [h["step"] for h in train],
            [h["train_loss"] for h in train],
        )
    ]
    if val:
        colour, shape, _ = MARKERS["fine-tuned"]
        lines.append(Line("validation", colour, shape, [h["step"] for h in val], [h["val_loss"] for h in val]))
    rules = [Rule(best_step, f"saved (step {best_step})", MARKERS["anchor"][0], "2 3")] if best_step is not None else []
    title = "Training and validation loss of the adapter (reply tokens)"
    return line_chart(lines, rules, ("optimizer step", "loss (reply tokens)"), title)


def write_loss_curve(history: list[dict[str, Any]], path: Path, best_step: int | None) -> None:
    atomic_write_text(path, loss_figure(history, best_step))
