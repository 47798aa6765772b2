"""LoRA fine-tuning on CPU with the offline demo model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.data import load_dataset
from tide_bench.finetune import FinetuneConfig, finetune
from tide_bench.generation import load_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory, demo_model_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("ft") / "adapter"
    finetune(FinetuneConfig(
        model=str(demo_model_dir), data="sample", out=out, limit_examples=2, batch_size=2, grad_accum=1,
        max_steps=8, learning_rate=3e-3, max_length=256, patience=100, rank=8, alpha=16,
    ), progress=False)
    return out


def test_a_few_steps_reduce_training_loss_on_a_fixed_batch(adapter: Path) -> None:
    card = json.loads((adapter / "adapter_card.json").read_text())
    losses = [h["train_loss"] for h in card["loss_history"] if h.get("train_loss") is not None]
    assert len(losses) == 8
    assert losses[-1] < losses[0] * 0.8, losses
    assert (adapter / "adapter_model.safetensors").is_file() and (adapter / "loss_curve.png").stat().st_size > 1000


def test_card_records_what_produced_the_adapter(adapter: Path, demo_model_dir: Path) -> None:
    card = json.loads((adapter / "adapter_card.json").read_text())
    assert card["base_model"] == str(demo_model_dir)
    assert card["data"]["split"] == "train" and card["data"]["source"].startswith("sample") and len(card["data"]["split_sha256"]) == 64
    assert card["trained_on_test_split"] is False
    hp = card["hyperparameters"]
    assert hp["rank"] == 8 and hp["alpha"] == 16 and hp["target_modules"] == ["q_proj", "k_proj", "v_proj", "o_proj"] and hp["precision"] == "fp32"
    assert card["parameters"]["trainable"] < card["parameters"]["total"] / 50
    assert card["training"]["initial_val_loss"] is not None and card["packages"]["peft"]
    assert len(card["prompt"]["prompt_sha256"]) == 64


def test_train_split_never_contains_a_test_persona() -> None:
    ds = load_dataset("sample")
    assert not {i.persona_id for i in ds.items_for("train")} & {i.persona_id for i in ds.items_for("test")}


def test_adapter_loads_through_lm_eval_peft_and_changes_generations(tmp_path: Path, adapter: Path, demo_model_dir: Path) -> None:
    replies = {}
    for name, args in (("base", f"pretrained={demo_model_dir}"), ("tuned", f"pretrained={demo_model_dir},peft={adapter}")):
        result = CliRunner().invoke(cli, ["eval", "--data", "sample", "--model-args", args, "--device", "cpu", "--limit", "1",
                                          "--gen-kwargs", "max_gen_toks=24", "--output-dir", str(tmp_path / name)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        run = load_run(tmp_path / name)
        replies[name] = [g.reply for g in run.generations]
    assert replies["base"] != replies["tuned"]
    manifest = load_run(tmp_path / "tuned").manifest
    assert manifest["model"]["adapter"]["path"] == str(adapter)
    assert manifest["model"]["adapter"]["card"]["base_model"] == str(demo_model_dir)


def test_refusals(tmp_path: Path, demo_model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="refusing to train on the test split"):
        finetune(FinetuneConfig(model=str(demo_model_dir), data="sample", out=tmp_path / "a", split="test"), progress=False)
    with pytest.raises(ConfigError, match=r"(?s)unknown target module\(s\) c_attn.*q_proj"):
        finetune(FinetuneConfig(model=str(demo_model_dir), data="sample", out=tmp_path / "b", target_modules=["c_attn"], max_steps=1), progress=False)
    only_test = tmp_path / "tide"
    for sub in ("conversations", "metadata"):
        (only_test / sub).mkdir(parents=True)
    src = load_dataset("sample").source.path
    shutil.copy(src / "conversations" / "2_conversations.json", only_test / "conversations")
    shutil.copy(src / "metadata" / "2_metadata.json", only_test / "metadata")
    with pytest.raises(DataError, match=r"'train' split .* is empty"):
        finetune(FinetuneConfig(model=str(demo_model_dir), data=str(only_test), out=tmp_path / "c"), progress=False)
