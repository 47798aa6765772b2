"""The training loop is ``transformers.Trainer``: what tide-bench sets, and the little it adds.

Trainer gives what a PEFT user expects and a home-made loop got wrong: the best adapter
restored under early stopping, evaluation every N steps, gradient clipping, a learning-rate
schedule that is right under ``accelerate launch`` (one scheduler step per optimizer step on
every process), a distributed sampler with even batches, loss normalised by the labelled
tokens of the whole accumulated batch, checkpoints and resume, tensorboard/wandb reporting.

tide-bench adds: length-grouped batches; logits computed only from the first reply token on
(:func:`keep_reply_logits`: the prompt's logits carry no loss, and on a 152k vocabulary they
are the largest activation); a quiet progress bar; ``history.jsonl`` written as training goes;
training time measured without evaluation and checkpointing.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import time
from pathlib import Path
from typing import Any

from transformers import Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from tide_bench.finetune.config import FinetuneConfig, StepPlan
from tide_bench.finetune.examples import IGNORE, collate
from tide_bench.finetune.precision import Precision

HISTORY = "history.jsonl"


def keep_reply_logits(batch: dict[str, Any]) -> dict[str, Any]:
    """Ask for logits only from just before the first labelled token on (same loss, less compute and memory).

    Logits at position t predict token t+1, so keeping the last ``W - first + 1`` positions and
    the labels under them leaves every labelled prediction in place.
    """
    labels = batch["labels"]
    labelled = labels.ne(IGNORE)
    rows = labelled.any(dim=1)
    if not bool(rows.any()):
        return batch
    first = int(labelled.int().argmax(dim=1)[rows].min())
    keep = labels.shape[1] - first + 1
    if keep >= labels.shape[1]:
        return batch
    return {**batch, "labels": labels[:, -keep:], "logits_to_keep": keep}


def accepts_logits_to_keep(model: Any) -> bool:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "logits_to_keep" in inspect.signature(base.forward).parameters


class ReplyOnlyTrainer(Trainer):
    """Trainer that computes logits only over the reply span when the model allows it."""

    def __init__(self, *args: Any, reply_logits_only: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reply_logits_only = reply_logits_only

    def compute_loss(
        self, model: Any, inputs: dict[str, Any], return_outputs: bool = False, num_items_in_batch: Any = None
    ) -> Any:
        if self.reply_logits_only:
            inputs = keep_reply_logits(inputs)
        return super().compute_loss(model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)


class ProgressBar(TrainerCallback):
    """One tqdm bar on the local main process, with the latest loss; no dict printed per step."""

    def __init__(self) -> None:
        self.bar: Any = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        from tqdm.auto import tqdm

        if state.is_local_process_zero:
            self.bar = tqdm(
                total=state.max_steps, initial=state.global_step, desc="fine-tuning", unit="step", dynamic_ncols=True
            )

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if self.bar is not None and logs:
            shown = {k: f"{logs[k]:.3f}" for k in ("loss", "eval_loss") if isinstance(logs.get(k), float)}
            if shown:
                self.bar.set_postfix(shown)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class HistoryFile(TrainerCallback):
    """Append every log record to ``history.jsonl`` as it happens, so an interrupted run leaves its curve."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:  # on resume: the checkpoint's history, then the new records
            self.path.write_text("".join(json.dumps(r) + "\n" for r in state.log_history), encoding="utf-8")

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if state.is_world_process_zero and logs:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({**logs, "step": state.global_step}) + "\n")


class TrainTimer(TrainerCallback):
    """Seconds spent in optimizer steps (forward, backward, update): evaluation and saving excluded."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.steps = 0
        self.tokens_at_start = 0
        self._t0: float | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.tokens_at_start = state.num_input_tokens_seen

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._t0 = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._t0 is not None:
            self.seconds += time.perf_counter() - self._t0
            self.steps += 1
            self._t0 = None


class EvaluateAtEnd(TrainerCallback):
    """Evaluate and checkpoint at the last step too (transformers before 5 did not), so no step goes unjudged."""

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step >= state.max_steps and args.eval_strategy != "no":
            control.should_evaluate = True
            control.should_save = True


def report_targets(requested: str) -> list[str]:
    """``auto``: tensorboard when installed, wandb when installed and configured (it would prompt otherwise)."""
    import os

    from transformers.integrations import is_tensorboard_available, is_wandb_available

    if requested == "none":
        return []
    if requested != "auto":
        return [requested]
    found = ["tensorboard"] if is_tensorboard_available() else []
    if is_wandb_available() and (os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_MODE")):
        found.append("wandb")
    return found


def training_arguments(
    config: FinetuneConfig,
    plan: StepPlan,
    precision: Precision,
    device: str,
    validate: bool,
    resuming: bool = False,
) -> TrainingArguments:
    """Trainer settings for this run (fields unknown to the installed transformers are adapted or dropped).

    A resumed run does not evaluate its checkpoint's step again (``eval_on_start`` would add a
    duplicate history row and count as "no improvement" for early stopping), and restores the
    early-stopping counter from the checkpoint. DDP is told that every parameter gets a gradient
    (a ``PeftModel`` would otherwise get ``find_unused_parameters=True``: an extra traversal per
    step and a warning on every run). One process never spreads over several GPUs
    (:func:`one_gpu_per_process`)."""
    values: dict[str, Any] = {
        "output_dir": str(config.out),
        "per_device_train_batch_size": plan.batch_size,
        "gradient_accumulation_steps": plan.grad_accum,
        "per_device_eval_batch_size": 1,  # validation loss = mean over examples of their per-token loss
        "learning_rate": config.learning_rate,
        "weight_decay": config.weight_decay,
        "lr_scheduler_type": "linear",
        "warmup_steps": plan.warmup_steps,
        "max_steps": plan.total_steps,
        "max_grad_norm": config.max_grad_norm,
        "eval_strategy": "steps" if validate else "no",
        "eval_steps": plan.eval_steps,
        "eval_on_start": validate and not resuming,
        "restore_callback_states_from_checkpoint": True,
        "ddp_find_unused_parameters": False,
        "save_strategy": "steps",
        "save_steps": plan.eval_steps,
        "save_total_limit": 2,  # with load_best: the best and the latest
        "load_best_model_at_end": validate,
        "metric_for_best_model": "eval_loss",
        "greater_is_better": False,
        "logging_strategy": "steps",
        "logging_steps": 1,
        "bf16": precision.name == "bf16",
        "fp16": precision.name == "fp16",
        "use_cpu": device == "cpu",
        "seed": config.seed,
        "data_seed": config.seed,
        "report_to": report_targets(config.report_to),
        "remove_unused_columns": False,
        "label_names": ["labels"],
        "disable_tqdm": True,
        "include_num_input_tokens_seen": "non_padding",
        "dataloader_num_workers": 0,
        "train_sampling_strategy": "group_by_length",
        "save_safetensors": True,
    }
    known = {f.name for f in dataclasses.fields(TrainingArguments)}
    if "train_sampling_strategy" not in known:  # transformers 4.x
        values["group_by_length"] = values.pop("train_sampling_strategy") == "group_by_length"
    args = TrainingArguments(**{k: v for k, v in values.items() if k in known})
    one_gpu_per_process(args)
    return args


def one_gpu_per_process(args: TrainingArguments) -> int:
    """Never ``nn.DataParallel`` (issue 29, H2).

    Trainer in one process on a machine with several visible GPUs sets ``n_gpu`` to all of
    them, wraps the model in ``nn.DataParallel`` and multiplies the micro-batch by their count:
    the run trains another condition (8x the batch, a fraction of the planned epochs' steps)
    than the card records. Here each process uses one GPU (``cuda:0`` of what it sees), as
    Trainer itself does for model-parallel models; several GPUs mean several processes
    (``accelerate launch``, or one study worker per GPU). Returns how many GPUs Trainer saw."""
    seen = int(args.n_gpu)
    if seen > 1:
        args._n_gpu = 1
    return seen


def build_trainer(
    model: Any,
    tokenizer: Any,
    args: TrainingArguments,
    train: list[dict],
    validation: list[dict],
    patience: int,
    out: Path,
    progress: bool,
    extra_callbacks: list[Any],
) -> tuple[ReplyOnlyTrainer, TrainTimer]:
    from transformers import EarlyStoppingCallback

    timer = TrainTimer()
    callbacks: list[Any] = [EvaluateAtEnd(), HistoryFile(out / HISTORY), timer]
    if validation:
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=patience))
    if progress:
        callbacks.append(ProgressBar())
    pad_id = tokenizer.pad_token_id
    trainer = ReplyOnlyTrainer(
        model=model,
        args=args,
        train_dataset=train,
        eval_dataset=validation or None,
        data_collator=lambda batch: collate(batch, pad_id),
        processing_class=tokenizer,
        callbacks=[*callbacks, *extra_callbacks],
        reply_logits_only=accepts_logits_to_keep(model),
    )
    for noisy in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(noisy)
    return trainer, timer
