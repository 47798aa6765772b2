"""The fine-tuned EPITOME encoder: one transformer reading the reply, three level heads.

Why this shape (measured on the authors' files, docs/validation.md "EPITOME"): frozen sentence
embeddings + logistic regression stay below TF-IDF, while fine-tuning the offline
all-MiniLM-L6-v2 on the reply alone reaches the paper's RoBERTa bi-encoder level; adding the
seeker post as a pair did worse. So: the reply (at most ``max_length`` word pieces), mean
pooling over the last hidden states, dropout, one linear 3-way head per mechanism, the sum of
three class-weighted cross-entropies (levels 1 of IP and EX are rare: ~4 % of replies).

Any local Hugging Face encoder folder works (a sentence-transformers folder is one: its
``config.json`` and weights sit at the top); it is loaded with ``local_files_only`` and
without remote code. A GPU is used when torch sees one.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.core.errors import ConfigError
from tide_bench.core.jsonio import default_file_mode
from tide_bench.epitome.mechanisms import KEYS, LEVELS

HEADS_NAME = "heads.safetensors"
ENCODER_DIR = "encoder"


@dataclass(frozen=True)
class EncoderConfig:
    """How the encoder is fine-tuned (recorded in the card; part of the training fingerprint)."""

    max_length: int = 128
    batch_size: int = 16
    epochs: int = 3
    learning_rate: float = 5e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    dropout: float = 0.1
    seed: int = 12

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def pick_device(requested: str = "auto") -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--device {requested}: torch sees no GPU here")
    return requested


def _load_backbone(path: Path) -> tuple[Any, Any]:
    from transformers import AutoModel, AutoTokenizer

    if not (path / "config.json").is_file():
        raise ConfigError(
            "is not a Hugging Face encoder folder (no config.json)",
            path=path,
            hint="pass a local sentence-transformers or transformers model folder, e.g. the offline MiniLM's",
        )
    with _quiet():
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            model = AutoModel.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot load the encoder ({exc})", path=path) from None
    return tokenizer, model


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No "Loading weights" / "Writing model shards" bars and no "some weights were not used"
    warning (a sentence-transformers folder's pooling config) for a 100-ms load or save."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hub_bars = not are_progress_bars_disabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    disable_progress_bars()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
        if hub_bars:
            enable_progress_bars()


@lru_cache(maxsize=1)
def _multi_head_class() -> Any:
    """The module class, built on first use so that importing this file needs no torch."""
    from torch import nn

    class MultiHead(nn.Module):
        def __init__(self, backbone: Any, dropout: float) -> None:
            super().__init__()
            self.backbone = backbone
            self.dropout = nn.Dropout(dropout)
            hidden = int(backbone.config.hidden_size)
            self.heads = nn.ModuleDict({k: nn.Linear(hidden, len(LEVELS)) for k in KEYS})

        def forward(self, input_ids: Any, attention_mask: Any) -> dict[str, Any]:
            hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            pooled = self.dropout(pooled)
            return {k: head(pooled) for k, head in self.heads.items()}

    return MultiHead


class EpitomeEncoder:
    """The backbone, its tokenizer and the three heads, on one device."""

    def __init__(self, tokenizer: Any, model: Any, device: str, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.model = model
        self.device = device
        self.max_length = max_length

    @classmethod
    def from_backbone(cls, path: str | Path, config: EncoderConfig, device: str = "auto") -> EpitomeEncoder:
        import torch

        torch.manual_seed(config.seed)
        tokenizer, backbone = _load_backbone(Path(path))
        model = _multi_head_class()(backbone, config.dropout)
        device = pick_device(device)
        return cls(tokenizer, model.to(device), device, config.max_length)

    @classmethod
    def load(cls, folder: Path, max_length: int, device: str = "auto") -> EpitomeEncoder:
        from safetensors.torch import load_file

        tokenizer, backbone = _load_backbone(folder / ENCODER_DIR)
        model = _multi_head_class()(backbone, 0.0)
        state = load_file(str(folder / HEADS_NAME))
        model.heads.load_state_dict({k.removeprefix("heads."): v for k, v in state.items()})
        device = pick_device(device)
        model.to(device).eval()
        return cls(tokenizer, model, device, max_length)

    def save(self, folder: Path) -> None:
        from safetensors.torch import save_file

        with _quiet():
            self.model.backbone.save_pretrained(str(folder / ENCODER_DIR))
            self.tokenizer.save_pretrained(str(folder / ENCODER_DIR))
        heads = {f"heads.{k}": v.detach().cpu().contiguous() for k, v in self.model.heads.state_dict().items()}
        save_file(heads, str(folder / HEADS_NAME))
        for path in [folder / HEADS_NAME, *(folder / ENCODER_DIR).iterdir()]:
            path.chmod(default_file_mode())  # safetensors writes 0600; a shared model folder is read by others

    def _batch(self, texts: Sequence[str]) -> dict[str, Any]:
        encoded = self.tokenizer(
            list(texts), truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
        )
        return {
            "input_ids": encoded["input_ids"].to(self.device),
            "attention_mask": encoded["attention_mask"].to(self.device),
        }

    def fit(
        self,
        texts: Sequence[str],
        labels: dict[str, Sequence[int]],
        config: EncoderConfig,
        *,
        on_epoch: Callable[[int, float], None] | None = None,
        on_step: Callable[[int], None] | None = None,
    ) -> list[float]:
        """Fine-tune for ``config.epochs``; returns the seconds each epoch took. ``on_epoch(epoch,
        seconds)`` runs after each epoch (the cross-validation scores the held-out fold there)."""
        import torch
        from torch import nn
        from transformers import get_linear_schedule_with_warmup

        generator = torch.Generator().manual_seed(config.seed)
        n = len(texts)
        targets = {k: torch.as_tensor(np.asarray(labels[k], dtype=np.int64)) for k in KEYS}
        losses = {k: nn.CrossEntropyLoss(weight=class_weights(labels[k]).to(self.device)) for k in KEYS}
        decay = [
            p for name, p in self.model.named_parameters() if not name.endswith("bias") and "LayerNorm" not in name
        ]
        no_decay = [p for name, p in self.model.named_parameters() if name.endswith("bias") or "LayerNorm" in name]
        optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=config.learning_rate,
        )
        lengths = [len(t) for t in texts]
        steps_per_epoch = math.ceil(n / config.batch_size)
        total = steps_per_epoch * config.epochs
        scheduler = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * total), total)
        seconds = []
        for epoch in range(1, config.epochs + 1):
            self.model.train()
            start = time.perf_counter()
            for rows in _length_batches(lengths, config.batch_size, generator):
                batch = self._batch([texts[i] for i in rows])
                logits = self.model(**batch)
                loss = sum(losses[k](logits[k], targets[k][rows].to(self.device)) for k in KEYS)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                if on_step is not None:
                    on_step(len(rows))
            seconds.append(time.perf_counter() - start)
            if on_epoch is not None:
                on_epoch(epoch, seconds[-1])
        self.model.eval()
        return seconds

    def predict_proba(self, texts: Sequence[str], batch_size: int = 64) -> dict[str, np.ndarray]:
        """``{key: (n, 3)}`` level probabilities. Replies are batched by length (sorted), so a
        batch pads to its own longest reply rather than to the longest of all."""
        import torch

        self.model.eval()
        n = len(texts)
        out = {k: np.zeros((n, len(LEVELS)), dtype=np.float64) for k in KEYS}
        if n == 0:
            return out
        order = sorted(range(n), key=lambda i: len(texts[i]))
        with torch.inference_mode():
            for first in range(0, n, batch_size):
                rows = order[first : first + batch_size]
                logits = self.model(**self._batch([texts[i] for i in rows]))
                for k in KEYS:
                    out[k][rows] = torch.softmax(logits[k].float(), dim=-1).cpu().numpy()
        return out


def _length_batches(lengths: Sequence[int], batch_size: int, generator: Any, pool: int = 50) -> list[list[int]]:
    """Shuffled batches of similar length: shuffle, cut into pools of ``pool`` batches, sort
    each pool by length, batch it, then shuffle the batches. A batch pads to its own longest
    reply; random batches almost always hold one reply of ``max_length`` pieces, and padding
    every batch to it made an epoch about twice as slow (the replies' median is ~35 pieces)."""
    import torch

    order = torch.randperm(len(lengths), generator=generator).tolist()
    batches: list[list[int]] = []
    step = batch_size * pool
    for start in range(0, len(order), step):
        chunk = sorted(order[start : start + step], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    shuffled = torch.randperm(len(batches), generator=generator).tolist()
    return [batches[i] for i in shuffled]


def class_weights(labels: Sequence[int]) -> Any:
    """Balanced class weights ``n / (K * count)``; a level absent from the labels gets weight 0."""
    import torch

    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=len(LEVELS)).astype(float)
    weights = np.where(counts > 0, counts.sum() / (len(LEVELS) * np.maximum(counts, 1)), 0.0)
    return torch.as_tensor(weights, dtype=torch.float32)
