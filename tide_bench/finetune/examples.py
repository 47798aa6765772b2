"""Training examples with exactly the evaluation prompts, and loss on the reply only.

Each TIDE item becomes the messages `tide-bench eval` sends (the task YAML's system prompt,
the earlier turns, the client's message) followed by the reference reply as the assistant
turn. Prompt tokens are masked (label -100), so the loss is computed on the reply tokens only.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import yaml

from tide_bench.data.schema import TideItem
from tide_bench.tasks.prompts import build_messages, render_plain
from tide_bench.tasks.registry import tasks_path

IGNORE = -100


class _TagTolerantLoader(yaml.SafeLoader):
    pass


_TagTolerantLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


@lru_cache(maxsize=1)
def system_prompt() -> str:
    """The evaluation system prompt, read from the task YAML (one source of truth)."""
    raw = yaml.load((tasks_path() / "tide_empathy" / "_template_yaml").read_text(encoding="utf-8"), Loader=_TagTolerantLoader)
    return str(raw["description"]).strip()


def encode(item: TideItem, tokenizer: Any, max_length: int, chat_template: bool) -> dict[str, list[int]] | None:
    """input_ids / labels for one item, or None when the prompt alone exceeds ``max_length``."""
    messages = build_messages(item.to_doc(), system_prompt())
    if chat_template and getattr(tokenizer, "chat_template", None):
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        full = tokenizer.apply_chat_template([*messages, {"role": "assistant", "content": item.reference_reply}], tokenize=False)
    else:
        prompt = render_plain(messages)
        full = f"{prompt} {item.reference_reply}{tokenizer.eos_token or ''}"
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    full_ids = tokenizer(full, add_special_tokens=False)["input_ids"]
    if len(prompt_ids) >= max_length:
        return None
    full_ids = full_ids[:max_length]
    labels = [IGNORE] * min(len(prompt_ids), len(full_ids)) + full_ids[len(prompt_ids) :]
    return {"input_ids": full_ids, "labels": labels}


def collate(batch: list[dict[str, list[int]]], pad_id: int) -> dict[str, Any]:
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
