"""The training loop: peft LoRA, accelerate for devices/precision/multi-GPU, early stopping.

``accelerate`` runs the same loop on CPU, one GPU, or several (``accelerate launch -m
tide_bench.finetune ...``: data parallel, gradients synchronised by accelerate; no
home-made distribution). Only the train split is used; the test split is refused unless
``allow_test_split`` (and then recorded in the card).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError, DataError, TideBenchError
from tide_bench.core.jsonio import write_json
from tide_bench.core.provenance import package_versions, utc_now
from tide_bench.data.sources import load_dataset
from tide_bench.finetune.config import DEFAULT_TARGETS, FinetuneConfig
from tide_bench.finetune.examples import collate, encode, system_prompt
from tide_bench.tasks.prompts import prompt_sha256

CARD = "adapter_card.json"


def _precision(requested: str) -> str:
    import torch

    if requested != "auto":
        return requested
    if torch.cuda.is_available():
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp32"


def _targets(model: Any, config: FinetuneConfig) -> list[str]:
    import torch

    linear = sorted({name.split(".")[-1] for name, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)} - {"lm_head"})
    targets = config.target_modules or DEFAULT_TARGETS.get(model.config.model_type)
    if not targets:
        raise ConfigError(f"no default LoRA target modules for architecture {model.config.model_type!r}", hint=f"pass --target-modules from: {', '.join(linear)}")
    unknown = [t for t in targets if t not in linear]
    if unknown:
        raise ConfigError(f"unknown target module(s) {', '.join(unknown)} for {model.config.model_type}", hint=f"linear modules of this model: {', '.join(linear)}")
    return list(targets)


def _encode_split(items: list, tokenizer: Any, config: FinetuneConfig) -> tuple[list[dict[str, list[int]]], int]:
    encoded, skipped = [], 0
    for item in items:
        ex = encode(item, tokenizer, config.max_length, config.chat_template)
        if ex is None:
            skipped += 1
        else:
            encoded.append(ex)
    return encoded, skipped


def _loss_plot(history: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    steps = [h["step"] for h in history if h.get("train_loss") is not None]
    ax.plot(steps, [h["train_loss"] for h in history if h.get("train_loss") is not None], label="train (per step)", alpha=0.7)
    val = [h for h in history if h.get("val_loss") is not None]
    if val:
        ax.plot([h["step"] for h in val], [h["val_loss"] for h in val], "o-", label="validation (per epoch)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss (reply tokens)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def finetune(config: FinetuneConfig, progress: bool = True) -> dict[str, Any]:
    """Train a LoRA adapter and write it with its card and loss curve to ``config.out``."""
    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from peft import LoraConfig, get_peft_model
    from tqdm.auto import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer, get_linear_schedule_with_warmup

    if config.split == "test" and not config.allow_test_split:
        raise ConfigError("refusing to train on the test split: the leaderboard evaluates on it", hint="use --split train (default); --allow-test-split exists for ablations and is recorded in the card")
    dataset = load_dataset(config.data)
    train_items = dataset.items_for(config.split)
    val_items = dataset.items_for(config.validation_split) if config.validation_split else []
    if config.split != "test":
        leaked = {i.persona_id for i in train_items} & {i.persona_id for i in dataset.items_for("test")}
        if leaked:  # impossible with persona-hash splits; checked because a leak would void every result
            raise DataError(f"test personas in the training data: {sorted(leaked)[:5]}")
    if config.limit_examples:
        train_items = train_items[: config.limit_examples]
        val_items = val_items[: config.limit_examples]
    if not train_items:
        raise DataError(f"the {config.split!r} split of {dataset.source.label} is empty: nothing to train on")

    precision = _precision(config.precision)
    accelerator = Accelerator(mixed_precision={"bf16": "bf16", "fp16": "fp16"}.get(precision, "no"), gradient_accumulation_steps=config.grad_accum)
    set_seed(config.seed)
    try:
        tokenizer = AutoTokenizer.from_pretrained(config.model, revision=config.revision)
        model = AutoModelForCausalLM.from_pretrained(config.model, revision=config.revision, dtype=torch.float32)
    except OSError as exc:
        raise ConfigError(f"cannot load model {config.model!r}: {exc}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    targets = _targets(model, config)
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    model = get_peft_model(model, LoraConfig(r=config.rank, lora_alpha=config.alpha, lora_dropout=config.dropout, target_modules=targets, task_type="CAUSAL_LM"))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())

    train_ex, skipped_train = _encode_split(train_items, tokenizer, config)
    val_ex, skipped_val = _encode_split(val_items, tokenizer, config)
    if not train_ex:
        raise DataError(f"every training example is longer than --max-length {config.max_length}")
    rng = random.Random(config.seed)
    steps_per_epoch = math.ceil(len(train_ex) / config.batch_size / config.grad_accum)
    total_steps = config.max_steps or steps_per_epoch * config.epochs
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.learning_rate, weight_decay=config.weight_decay)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * total_steps), total_steps)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)

    def batches(examples: list[dict[str, list[int]]], shuffle: bool) -> Iterator[dict[str, Any]]:
        order = list(range(len(examples)))
        if shuffle:
            rng.shuffle(order)
        chunks = [order[i : i + config.batch_size] for i in range(0, len(order), config.batch_size)]
        if accelerator.num_processes > 1:  # every process must take the same number of steps
            chunks = chunks[: max(accelerator.num_processes, len(chunks) - len(chunks) % accelerator.num_processes)]
        for chunk in chunks[accelerator.process_index :: accelerator.num_processes]:  # data parallel
            yield {k: v.to(accelerator.device) for k, v in collate([examples[j] for j in chunk], tokenizer.pad_token_id).items()}

    def validation_loss() -> float | None:
        if not val_ex:
            return None
        model.eval()
        losses, weights = [], []
        with torch.no_grad():
            for batch in batches(val_ex, shuffle=False):
                out = model(**batch)
                n = int((batch["labels"] != -100).sum())
                losses.append(accelerator.gather(out.loss.detach() * n).sum().item())
                weights.append(accelerator.gather(torch.tensor(n, device=accelerator.device)).sum().item())
        model.train()
        return sum(losses) / max(1, sum(weights))

    history: list[dict[str, Any]] = []
    best, bad_epochs, step, tokens, t0 = math.inf, 0, 0, 0, time.perf_counter()
    bar = tqdm(total=total_steps, desc="fine-tuning", unit="step", disable=not progress or not accelerator.is_local_main_process, dynamic_ncols=True)
    initial_val = validation_loss()
    history.append({"step": 0, "epoch": 0, "val_loss": initial_val})
    stopped = "max steps" if config.max_steps else "epochs"
    model.train()
    epoch = 0
    while step < total_steps:
        epoch += 1
        for batch in batches(train_ex, shuffle=True):
            with accelerator.accumulate(model):
                out = model(**batch)
                accelerator.backward(out.loss)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            tokens += int(batch["attention_mask"].sum())
            if accelerator.sync_gradients:
                step += 1
                loss = accelerator.gather(out.loss.detach()).mean().item()
                history.append({"step": step, "epoch": epoch, "train_loss": loss, "lr": scheduler.get_last_lr()[0]})
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.3f}", epoch=epoch)
                if step >= total_steps:
                    break
        val = validation_loss()
        history.append({"step": step, "epoch": epoch, "val_loss": val})
        if val is not None:
            if val < best - 1e-4:
                best, bad_epochs = val, 0
            else:
                bad_epochs += 1
                if bad_epochs >= config.patience:
                    stopped = f"early stopping: validation loss did not improve for {config.patience} epoch(s)"
                    break
        if not config.max_steps and epoch >= config.epochs:
            break
    bar.close()
    seconds = time.perf_counter() - t0
    out = Path(config.out)
    if accelerator.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        accelerator.unwrap_model(model).save_pretrained(out)
        tokenizer.save_pretrained(out)
        _loss_plot(history, out / "loss_curve.png")
    card = {
        "kind": "tide-bench-adapter",
        "created_at": utc_now(),
        "base_model": config.model,
        "base_model_revision": config.revision or getattr(getattr(model, "config", None), "_commit_hash", None),
        "data": dataset.provenance(config.split) | {"validation_split": config.validation_split, "n_validation_items": len(val_items)},
        "trained_on_test_split": config.split == "test",
        "prompt": {"prompt_sha256": prompt_sha256(system_prompt()), "chat_template": config.chat_template},
        "hyperparameters": config.as_dict() | {"target_modules": targets, "precision": precision, "processes": accelerator.num_processes},
        "parameters": {"trainable": trainable, "total": total},
        "examples": {"train": len(train_ex), "validation": len(val_ex), "skipped_too_long": skipped_train + skipped_val},
        "training": {"steps": step, "epochs": epoch, "stopped": stopped, "seconds": round(seconds, 2), "tokens": tokens,
                     "tokens_per_second": round(tokens / seconds, 1) if seconds else None, "initial_val_loss": initial_val,
                     "best_val_loss": None if best is math.inf else best},
        "loss_history": history,
        "packages": package_versions(),
    }
    if accelerator.is_main_process:
        write_json(out / "adapter_card.json", card)
    return card


def finetune_or_explain(config: FinetuneConfig) -> dict[str, Any]:
    """:func:`finetune`, turning out-of-memory into advice."""
    import torch

    try:
        return finetune(config)
    except torch.cuda.OutOfMemoryError:
        raise TideBenchError(
            f"the model does not fit in GPU memory with batch size {config.batch_size} and max length {config.max_length}",
            hint="lower --batch-size (raise --grad-accum to keep the effective batch), add --gradient-checkpointing, use --precision bf16, or lower --max-length",
        ) from None
    except RuntimeError as exc:
        if "out of memory" in str(exc).lower() or "can't allocate memory" in str(exc).lower():
            raise TideBenchError(f"out of memory: {exc}", hint="lower --batch-size, add --gradient-checkpointing, or lower --max-length") from None
        raise
