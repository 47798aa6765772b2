"""``finetune()``: LoRA on TIDE's train split, as a sequence of named steps.

Cheap checks first (settings, device, precision, data, output folder, every example's mask),
so a run that cannot be trusted is refused before a model loads; then the base model and its
adapter; then :mod:`transformers.Trainer` (:mod:`tide_bench.finetune.trainer`); then the
adapter with its card. Several processes: ``accelerate launch -m tide_bench.finetune ...``;
every process runs the same steps, only the main process writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.core.jsonio import write_json
from tide_bench.data.schema import TideItem
from tide_bench.data.sources import LoadedDataset, load_dataset
from tide_bench.data.splits import SPLIT_VERSION
from tide_bench.finetune.card import LOSS_CURVE, TrainingOutcome, build_card, outcome_from_state, write_loss_curve
from tide_bench.finetune.config import FinetuneConfig, StepPlan, check_config, plan_steps
from tide_bench.finetune.defaults import TrainingDefaults, choose_training_defaults
from tide_bench.finetune.examples import EncodedSplit, encode_split
from tide_bench.finetune.lora import (
    attach_lora,
    check_quantization,
    count_parameters,
    load_base_model,
    resolve_targets,
    resolved_target_names,
)
from tide_bench.finetune.outputs import (
    check_output_folder,
    checkpoint_to_resume,
    remove_checkpoints,
    start_output_folder,
)
from tide_bench.finetune.precision import DeviceFacts, Precision, choose_precision, device_facts
from tide_bench.finetune.trainer import build_trainer, training_arguments
from tide_bench.generation.manifest import ADAPTER_CARD

TRAINING_ARGS_PICKLE = "training_args.bin"


@dataclass
class TrainingData:
    dataset: LoadedDataset
    train_items: list[TideItem]
    validation_items: list[TideItem]


def load_training_data(config: FinetuneConfig) -> TrainingData:
    """The train (and validation) items; a test persona in the training data voids every result."""
    dataset = load_dataset(config.data)
    train_items = dataset.items_for(config.split)
    validation_items = dataset.items_for(config.validation_split) if config.validation_split else []
    if config.split != "test":
        # persona-hash splits (TIDE) keep personas apart; a release's own splits (EmpatheticDialogues)
        # share speakers between splits by design, and there the unit that must not leak is the conversation
        unit, what = (
            (lambda i: i.persona_id, "personas")
            if dataset.split_version == SPLIT_VERSION
            else (lambda i: i.conversation_id, "conversations")
        )
        leaked = {unit(i) for i in train_items} & {unit(i) for i in dataset.items_for("test")}
        if leaked:  # impossible with the splits tide-bench reads; checked because a leak would void every result
            raise DataError(f"test {what} in the training data: {sorted(leaked)[:5]}")
    if config.limit_examples:
        train_items = train_items[: config.limit_examples]
        validation_items = validation_items[: config.limit_examples]
    if not train_items:
        raise DataError(f"the {config.split!r} split of {dataset.source.label} is empty: nothing to train on")
    return TrainingData(dataset, train_items, validation_items)


def load_tokenizer(config: FinetuneConfig) -> Any:
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(config.model, revision=config.revision)
    except (OSError, ValueError) as exc:
        raise TideBenchError(f"cannot load the tokenizer of {config.model!r}: {exc}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def encode_examples(config: FinetuneConfig, tokenizer: Any, data: TrainingData) -> tuple[EncodedSplit, EncodedSplit]:
    """Encode both splits (each example's mask checked); refuse when nothing fits ``max_length``."""
    train = encode_split(data.train_items, tokenizer, config.max_length, config.chat_template, config.prompt)
    validation = encode_split(data.validation_items, tokenizer, config.max_length, config.chat_template, config.prompt)
    if not train.examples:
        raise DataError(
            f"every training example is longer than --max-length {config.max_length}",
            hint="raise --max-length (examples are left out, never cut)",
        )
    return train, validation


def build_model(
    config: FinetuneConfig,
    precision: Precision,
    local_process_index: int,
    device: str = "cuda",
    base_dtype: str | None = None,
) -> tuple[Any, list[str], dict[str, int]]:
    """The base in ``base_dtype`` (the training dtype by default) with LoRA attached; the resolved
    targets and parameter counts."""
    from transformers import set_seed

    set_seed(config.seed)  # the LoRA initialisation is random
    model = load_base_model(config, precision, local_process_index, device, base_dtype)
    model = attach_lora(model, config, resolve_targets(model, config.target_modules))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return model, resolved_target_names(model), {"trainable": trainable, "total": total}


def run_training(
    config: FinetuneConfig,
    model: Any,
    tokenizer: Any,
    train: EncodedSplit,
    validation: EncodedSplit,
    plan: StepPlan,
    precision: Precision,
    facts: DeviceFacts,
    resume_from: Path | None,
    progress: bool,
    callbacks: Sequence[Any],
) -> tuple[Any, TrainingOutcome]:
    validate = bool(validation.examples)
    args = training_arguments(config, plan, precision, facts.device, validate, resuming=resume_from is not None)
    trainer, timer = build_trainer(
        model,
        tokenizer,
        args,
        train.examples,
        validation.examples,
        config.patience,
        Path(config.out),
        progress,
        list(callbacks),
    )
    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    tokens = trainer.state.num_input_tokens_seen - timer.tokens_at_start
    outcome = outcome_from_state(
        trainer.state, timer.seconds, tokens, validate, str(resume_from) if resume_from else None
    )
    return trainer, outcome


def save_adapter(trainer: Any, tokenizer: Any, card: dict[str, Any], config: FinetuneConfig) -> None:
    """Main process: the (best) adapter, tokenizer, card and loss curve; checkpoints removed unless kept."""
    out = Path(config.out)
    trainer.save_model(str(out))
    if not trainer.is_world_process_zero():
        return
    tokenizer.save_pretrained(out)
    (out / TRAINING_ARGS_PICKLE).unlink(missing_ok=True)  # a pickle; the card holds every setting in JSON
    write_json(out / ADAPTER_CARD, card)
    write_loss_curve(card["loss_history"], out / LOSS_CURVE, card["best"]["step"])
    if not config.keep_checkpoints:
        remove_checkpoints(out)


def finetune(config: FinetuneConfig, progress: bool = True, callbacks: Sequence[Any] = ()) -> dict[str, Any]:
    """Train a LoRA adapter and write it with its card and loss curve to ``config.out``; returns the card.

    ``callbacks``: extra ``transformers.TrainerCallback`` objects (logging, custom stopping).
    """
    from accelerate import PartialState

    check_config(config)
    facts = device_facts()
    choose_precision(config.precision, facts)  # an impossible precision is refused before anything loads
    check_quantization(config.quantize, facts.device)
    state = PartialState(cpu=facts.device == "cpu")  # several CPU processes: gloo
    data = load_training_data(config)
    check_output_folder(config)
    resume_from = checkpoint_to_resume(config)
    tokenizer = load_tokenizer(config)
    train, validation = encode_examples(config, tokenizer, data)
    defaults = device_defaults(config, facts, train)
    if state.num_processes > 1:  # every process trains what the main process chose (free memory differs a little)
        from accelerate.utils import broadcast_object_list

        defaults = broadcast_object_list([defaults], from_process=0)[0]
    precision = defaults.precision
    state.wait_for_everyone()
    if state.is_main_process:
        start_output_folder(config)
    state.wait_for_everyone()
    model, targets, parameters = build_model(
        config, precision, state.local_process_index, facts.device, defaults.base_dtype
    )
    plan = plan_steps(config, len(train.examples), facts.device, state.num_processes, defaults.micro_batch)
    trainer, outcome = run_training(
        config, model, tokenizer, train, validation, plan, precision, facts, resume_from, progress, callbacks
    )
    card = build_card(
        config=config,
        tokenizer=tokenizer,
        provenance=data.dataset.provenance(config.split),
        n_validation_items=len(data.validation_items),
        train=train,
        validation=validation,
        precision=precision,
        facts=facts,
        plan=plan,
        targets=targets,
        parameters=parameters,
        reply_logits_only=trainer.reply_logits_only,
        outcome=outcome,
        log_history=trainer.state.log_history,
        gpus=gpu_use(facts, state.num_processes),
        defaults=defaults,
    )
    save_adapter(trainer, tokenizer, card, config)
    return card


def device_defaults(config: FinetuneConfig, facts: DeviceFacts, train: EncodedSplit) -> TrainingDefaults:
    """The micro-batch and dtypes this device and model get (:mod:`.defaults`): the model's size read
    from its configuration, the longest training sequence bounding every padded micro-batch."""
    longest = max((len(e["input_ids"]) for e in train.examples), default=config.max_length)
    return choose_training_defaults(
        facts,
        params=count_parameters(config.model, config.revision) if facts.device == "cuda" else None,
        seq_tokens=longest,
        requested_precision=config.precision,
        batch_size=config.batch_size,
        quantize=config.quantize,
        gradient_checkpointing=config.gradient_checkpointing,
    )


def gpu_use(facts: DeviceFacts, processes: int) -> dict[str, Any]:
    """How many GPUs this machine shows the process and how many it trains on (one per process:
    :func:`tide_bench.finetune.trainer.one_gpu_per_process`), with a note when GPUs sit idle."""
    if facts.device != "cuda":
        return {"visible_gpus": 0, "gpus_per_process": 0, "note": None}
    import torch

    visible = int(torch.cuda.device_count())
    note = None
    if processes == 1 and visible > 1:
        note = (
            f"{visible} GPUs are visible and one process trains on cuda:0 only (never nn.DataParallel, which would "
            "change the batch): use `accelerate launch -m tide_bench.finetune ...` for all of them, or "
            "CUDA_VISIBLE_DEVICES to choose the card"
        )
    return {"visible_gpus": visible, "gpus_per_process": 1, "note": note}


def is_main_process() -> bool:
    """Whether this process reports (one "adapter written" line per run, not one per process)."""
    from accelerate import PartialState

    return bool(PartialState().is_main_process)


def finetune_or_explain(config: FinetuneConfig) -> dict[str, Any]:
    """:func:`finetune`, turning out-of-memory into advice."""
    import torch

    try:
        return finetune(config)
    except torch.cuda.OutOfMemoryError:
        raise TideBenchError(
            f"the model does not fit in GPU memory with batch size {config.batch_size or 'default'} and max length "
            f"{config.max_length}",
            hint="lower --batch-size (accumulation rises to keep 16 sequences per step), add --gradient-checkpointing, "
            "use --quantize 4bit, or lower --max-length",
        ) from None
    except RuntimeError as exc:
        if "out of memory" in str(exc).lower() or "can't allocate memory" in str(exc).lower():
            raise TideBenchError(
                f"out of memory: {exc}", hint="lower --batch-size, add --gradient-checkpointing, or lower --max-length"
            ) from None
        raise
