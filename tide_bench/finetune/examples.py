"""Training examples with exactly the evaluation prompts, and loss on the reply only.

Each TIDE item becomes the messages `tide-bench eval` sends (the task YAML's system prompt,
the earlier turns, the client's message) followed by the reference reply as the assistant
turn, rendered and checked by :mod:`tide_bench.finetune.chat`. The prompt's tokens are
exactly what lm-eval feeds the model (same string, same BOS rule) and are masked (label
-100); the reply and its end-of-turn marker carry the loss.

An example longer than ``max_length`` is left out and counted, never cut: cutting would
drop the reply's end-of-turn token and teach replies that never stop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tide_bench.data.schema import TideItem
from tide_bench.finetune.chat import render_example
from tide_bench.tasks.prompts import build_messages
from tide_bench.tasks.registry import system_prompt as task_system_prompt

IGNORE = -100


def system_prompt(condition: str = "neutral") -> str:
    """The evaluation system prompt of a prompt condition, read from the task YAML (one source of truth)."""
    return task_system_prompt(condition)


def tokenize_prompt(tokenizer: Any, text: str) -> list[int]:
    """Token ids as lm-eval's ``tok_batch_encode`` makes them: special tokens unless the text starts with BOS."""
    bos = tokenizer.bos_token
    add_special = not (bos and text.startswith(bos))
    return list(tokenizer(text, add_special_tokens=add_special)["input_ids"])


@dataclass
class EncodedSplit:
    """The examples of one split, and what encoding them found."""

    examples: list[dict[str, list[int]]] = field(default_factory=list)
    n_items: int = 0
    too_long: list[str] = field(default_factory=list)  # item ids left out
    system_dropped: int = 0
    placements: dict[str, int] = field(default_factory=dict)  # where the system prompt went, per example
    boundary_retokenized: int = 0  # prompt + reply tokenized apart (a merge across the boundary)
    end_of_turn: set[str] = field(default_factory=set)
    min_labelled: int | None = None

    @property
    def too_long_share(self) -> float:
        return len(self.too_long) / self.n_items if self.n_items else 0.0

    def report(self) -> dict[str, Any]:
        return {
            "items": self.n_items,
            "examples": len(self.examples),
            "too_long": len(self.too_long),
            "too_long_share": round(self.too_long_share, 4),
            "too_long_items": self.too_long[:20],
        }


def encode(
    item: TideItem,
    tokenizer: Any,
    max_length: int,
    chat_template: bool,
    split: EncodedSplit | None = None,
    prompt: str = "neutral",
) -> dict[str, list[int]] | None:
    """input_ids / labels for one item, or None when it is longer than ``max_length``."""
    messages = build_messages(item.to_doc(), system_prompt(prompt))
    rendered = render_example(tokenizer, messages, item.reference_reply, chat_template, item.item_id)
    prompt_ids = tokenize_prompt(tokenizer, rendered.prompt)
    full_ids = tokenize_prompt(tokenizer, rendered.prompt + rendered.completion)
    retokenized = full_ids[: len(prompt_ids)] != prompt_ids
    if retokenized:  # a token merged across the boundary: keep the evaluation prompt's own tokens
        full_ids = prompt_ids + list(tokenizer(rendered.completion, add_special_tokens=False)["input_ids"])
    labels = [IGNORE] * len(prompt_ids) + full_ids[len(prompt_ids) :]
    if split is not None:
        split.system_dropped += rendered.system_dropped
        split.placements[rendered.placement] = split.placements.get(rendered.placement, 0) + 1
        split.boundary_retokenized += retokenized
        split.end_of_turn.add(rendered.end_of_turn)
    if len(full_ids) > max_length:
        return None
    return {"input_ids": full_ids, "labels": labels}


def encode_split(
    items: list[TideItem], tokenizer: Any, max_length: int, chat_template: bool, prompt: str = "neutral"
) -> EncodedSplit:
    split = EncodedSplit(n_items=len(items))
    for item in items:
        example = encode(item, tokenizer, max_length, chat_template, split, prompt)
        if example is None:
            split.too_long.append(item.item_id)
            continue
        split.examples.append(example)
        labelled = sum(1 for t in example["labels"] if t != IGNORE)
        split.min_labelled = labelled if split.min_labelled is None else min(split.min_labelled, labelled)
    return split


def collate(batch: list[dict[str, list[int]]], pad_id: int) -> dict[str, Any]:
    """Right-padded tensors; padding is never labelled (labels come from lengths, not pad ids)."""
    import torch

    width = max(len(b["input_ids"]) for b in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, b in enumerate(batch):
        n = len(b["input_ids"])
        ids[row, :n] = torch.tensor(b["input_ids"])
        labels[row, :n] = torch.tensor(b["labels"])
        mask[row, :n] = 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}
