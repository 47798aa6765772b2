"""LoRA fine-tuning on CPU with the offline demo model: real training runs through transformers.Trainer."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner
from transformers import TrainerCallback

from tests.helpers import read_figure
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.data import load_dataset
from tide_bench.finetune import FinetuneConfig, finetune, merge_adapter
from tide_bench.finetune.precision import choose_precision, device_facts
from tide_bench.generation import load_run

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """On a shared 2-core machine one torch thread trains several times faster than two oversubscribed ones."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def sample_config(model_dir: Path, out: Path, **settings: Any) -> FinetuneConfig:
    """The demo model on the built-in sample, one sequence per micro-batch unless said otherwise."""
    return FinetuneConfig(
        model=str(model_dir), data="sample", out=out, **({"batch_size": 1, "grad_accum": 1} | settings)
    )


def history(card: dict[str, Any], key: str) -> list[tuple[int, float]]:
    return [(h["step"], h[key]) for h in card["loss_history"] if key in h]


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory, demo_model_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("ft") / "adapter"
    settings = {"limit_examples": 2, "batch_size": 2, "max_steps": 6, "eval_steps": 3, "learning_rate": 3e-3, "rank": 8}
    finetune(sample_config(demo_model_dir, out, **settings, patience=100, alpha=16), progress=False)  # precision auto
    return out


def test_a_few_steps_reduce_training_loss_on_a_fixed_batch(adapter: Path) -> None:
    card = json.loads((adapter / "adapter_card.json").read_text())
    losses = [loss for _, loss in history(card, "train_loss")]
    assert len(losses) == 6
    assert losses[-1] < losses[0] * 0.8, losses
    assert (adapter / "adapter_model.safetensors").is_file()
    _, _, marks = read_figure((adapter / "loss_curve.svg").read_text())
    assert marks[0] == "train (per step): 6 points" and len(marks) == 1 + len(history(card, "val_loss")) >= 3
    assert not list(adapter.glob("checkpoint-*")) and not (adapter / "training_args.bin").exists()
    assert [json.loads(line)["step"] for line in (adapter / "history.jsonl").read_text().splitlines()][-1] == 6


def test_card_records_what_produced_the_adapter(adapter: Path, demo_model_dir: Path) -> None:
    card = json.loads((adapter / "adapter_card.json").read_text())
    assert card["base_model"] == str(demo_model_dir)
    assert (
        card["data"]["split"] == "train"
        and card["data"]["source"].startswith("sample")
        and len(card["data"]["split_sha256"]) == 64
    )
    assert card["trained_on_test_split"] is False
    hp = card["hyperparameters"]
    assert hp["rank"] == 8 and hp["alpha"] == 16 and hp["target_modules"] == ["k_proj", "o_proj", "q_proj", "v_proj"]
    assert hp["precision"] == choose_precision("auto", device_facts()).name  # bf16 only on a CPU with native bf16
    assert hp["sequences_per_step"] == 2 and hp["eval_steps"] == 3
    chosen = card["device_defaults"]  # issue 46: what the device chose, and why (--batch-size 2 won here)
    assert chosen["micro_batch"] == 2 and "--batch-size" in chosen["micro_batch_reason"]
    assert (
        chosen["lora_dtype"] == "float32"
        and chosen["base_dtype"] == choose_precision("auto", device_facts()).torch_dtype
    )
    assert card["parameters"]["trainable"] < card["parameters"]["total"] / 50
    assert card["packages"]["peft"] and card["packages"]["transformers"] and len(card["prompt"]["prompt_sha256"]) == 64
    template = card["template"]
    assert template["sha256"] and "<|im_start|>" in template["text"] and template["end_of_turn"] == ["<|im_end|>\n"]
    assert template["system_prompt"] == "kept (the template's system role)"
    assert card["prompt"]["system_prompt_placement"] == "system"
    assert card["prompt"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert card["masking"]["check"] == "passed" and card["masking"]["min_labelled_tokens"] > 10
    assert card["truncation"]["train"]["too_long"] == 0 and card["truncation"]["train"]["too_long_share"] == 0.0
    training = card["training"]
    assert history(card, "val_loss")[0][0] == 0 and training["initial_val_loss"] is not None
    assert training["best_step"] in (3, 6) and card["best"]["val_loss"] == min(
        v for s, v in history(card, "val_loss") if s
    )
    assert training["tokens"] > 0 and training["tokens_per_second"] > 0


def test_best_adapter_is_restored_under_early_stopping(tmp_path: Path, demo_model_dir: Path) -> None:
    """A high learning rate on two examples overfits: validation loss rises after its best, training stops
    early, and the adapter on disk must be the best one (its validation loss recomputed here), not the last."""
    out = tmp_path / "adapter"
    settings = {"limit_examples": 2, "epochs": 8, "patience": 2, "learning_rate": 8e-3, "precision": "fp32"}
    card = finetune(sample_config(demo_model_dir, out, **settings), progress=False)
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tide_bench.finetune.examples import encode_split

    tokenizer = AutoTokenizer.from_pretrained(out)
    items = load_dataset("sample").items_for("validation")[:2]
    examples = encode_split(items, tokenizer, 1024, chat_template=True).examples
    model = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(demo_model_dir, dtype=torch.float32), out
    ).eval()
    with torch.no_grad():
        losses = [
            float(model(input_ids=torch.tensor([e["input_ids"]]), labels=torch.tensor([e["labels"]])).loss)
            for e in examples
        ]
    saved_val_loss = sum(losses) / len(losses)
    training = card["training"]
    assert saved_val_loss == pytest.approx(training["best_val_loss"], abs=1e-4)
    assert training["best_val_loss"] < training["last_val_loss"] - 0.05  # so the last weights would differ
    assert training["stopped"].startswith("early stopping") and training["steps"] < training["planned_steps"]
    assert training["best_step"] < training["steps"] and card["best"]["step"] == training["best_step"]
    assert "restored" in training["saved"]


class Interrupted(Exception):
    pass


class InterruptAfterCheckpoint(TrainerCallback):
    """Stands in for a killed job: training dies right after the step-2 checkpoint is on disk."""

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step == 2:
            raise Interrupted


def schedule_config(demo_model_dir: Path, out: Path, **changes: Any) -> FinetuneConfig:
    settings = {"limit_examples": 8, "validation_split": None, "max_steps": 4, "eval_steps": 2, "precision": "fp32"}
    return sample_config(demo_model_dir, out, **settings, **changes)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory, demo_model_dir: Path) -> dict[str, Any]:
    return finetune(schedule_config(demo_model_dir, tmp_path_factory.mktemp("full") / "adapter"), progress=False)


def test_resume_after_interruption_continues_the_schedule(
    tmp_path: Path, demo_model_dir: Path, uninterrupted: dict[str, Any]
) -> None:
    out = tmp_path / "adapter"
    with pytest.raises(Interrupted):
        finetune(schedule_config(demo_model_dir, out), progress=False, callbacks=[InterruptAfterCheckpoint()])
    assert (out / "checkpoint-2").is_dir() and not (out / "adapter_card.json").exists()
    with pytest.raises(ConfigError, match="is not empty"):
        finetune(schedule_config(demo_model_dir, out), progress=False)
    resumed = finetune(schedule_config(demo_model_dir, out, resume="latest"), progress=False)
    assert resumed["training"]["resumed_from"] == str(out / "checkpoint-2")
    assert history(resumed, "lr") == history(uninterrupted, "lr")
    assert [lr for _, lr in history(uninterrupted, "lr")] == pytest.approx([2e-4, 1.5e-4, 1e-4, 5e-5])
    resumed_loss, full_loss = history(resumed, "train_loss"), history(uninterrupted, "train_loss")
    assert [s for s, _ in resumed_loss] == [s for s, _ in full_loss] == [1, 2, 3, 4]
    assert [v for _, v in resumed_loss] == pytest.approx([v for _, v in full_loss], rel=1e-5)
    from safetensors.torch import load_file

    a = load_file(out / "adapter_model.safetensors")
    b = load_file(Path(uninterrupted["hyperparameters"]["out"]) / "adapter_model.safetensors")
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_two_processes_follow_one_processes_schedule_and_report_once(
    tmp_path: Path, demo_model_dir: Path, uninterrupted: dict[str, Any]
) -> None:
    """`accelerate launch` with two CPU processes (gloo): the LR of every step equals the one-process run's,
    exactly one "adapter written" line is printed, and examples too long for --max-length are reported."""
    from transformers import AutoTokenizer

    from tide_bench.finetune.examples import encode_split

    tokenizer = AutoTokenizer.from_pretrained(demo_model_dir)
    items = load_dataset("sample").items_for("train")[:8]
    lengths = sorted(len(e["input_ids"]) for e in encode_split(items, tokenizer, 10**6, chat_template=True).examples)
    max_length = lengths[5]  # the longest (two, unless lengths tie) are left out
    too_long = sum(1 for n in lengths if n > max_length)
    out = tmp_path / "adapter"
    launch = ["-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1"]
    launch += ["--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port())]
    options = ["--model", str(demo_model_dir), "--data", "sample", "--out", str(out), "--limit-examples", "8"]
    options += ["--batch-size", "1", "--grad-accum", "1", "--max-steps", "4", "--precision", "fp32"]
    options += ["--max-length", str(max_length)]
    env = os.environ | {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, *launch, "-m", "tide_bench.finetune", *options]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, cwd=ROOT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert output.count("adapter written") == 1, output[-3000:]
    card = json.loads((out / "adapter_card.json").read_text())
    assert card["hyperparameters"]["processes"] == 2 and card["hyperparameters"]["sequences_per_step"] == 2
    assert history(card, "lr") == history(uninterrupted, "lr")
    share = too_long / len(items)
    assert too_long >= 1 and card["truncation"]["train"]["too_long"] == too_long
    assert card["truncation"]["train"]["too_long_share"] == pytest.approx(share, abs=1e-4)
    note = f"note: {too_long} of {len(items)} training examples ({share:.1%}) are longer than --max-length {max_length}"
    assert output.count(note) == 1, output[-3000:]


def test_merge_writes_a_plain_model_with_the_adapter_folded_in(
    tmp_path: Path, adapter: Path, demo_model_dir: Path
) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    merged_dir = merge_adapter(adapter, tmp_path / "merged", dtype="float32")
    card = json.loads((merged_dir / "merge_card.json").read_text())
    assert card["base_model"] == str(demo_model_dir) and card["adapter_card"]["kind"] == "tide-bench-adapter"
    assert not (merged_dir / "adapter_config.json").exists() and (merged_dir / "tokenizer_config.json").is_file()
    ids = torch.tensor([[1, 200, 3000, 42, 7]])
    merged = AutoModelForCausalLM.from_pretrained(merged_dir).eval()
    tuned = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(demo_model_dir, dtype=torch.float32), adapter
    ).eval()
    base = AutoModelForCausalLM.from_pretrained(demo_model_dir, dtype=torch.float32).eval()
    with torch.no_grad():
        m, t, b = merged(ids).logits, tuned(ids).logits, base(ids).logits
    folded, change = float((m - t).abs().max()), float((m - b).abs().max())
    assert folded < 0.01 and change > 20 * folded, (
        folded,
        change,
    )  # fp32 sums in another order vs the adapter's effect
    result = CliRunner().invoke(cli, ["merge-adapter", str(adapter), "--out", str(merged_dir)])
    assert result.exit_code == 2 and "is not empty" in result.output


def test_adapter_loads_through_lm_eval_peft_and_changes_generations(
    tmp_path: Path, adapter: Path, demo_model_dir: Path
) -> None:
    replies = {}
    for name, args in (
        ("base", f"pretrained={demo_model_dir}"),
        ("tuned", f"pretrained={demo_model_dir},peft={adapter}"),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = CliRunner().invoke(
                cli,
                [
                    "eval",
                    "--data",
                    "sample",
                    "--model-args",
                    args,
                    "--device",
                    "cpu",
                    "--limit",
                    "1",
                    "--gen-kwargs",
                    "max_gen_toks=24",
                    "--output-dir",
                    str(tmp_path / name),
                ],
                catch_exceptions=False,
            )
        assert result.exit_code == 0, result.output
        assert not [w for w in caught if "is_gradient_checkpointing" in str(w.message)]  # peft's, not the user's
        run = load_run(tmp_path / name)
        replies[name] = [g.reply for g in run.generations]
    assert replies["base"] != replies["tuned"]
    manifest = load_run(tmp_path / "tuned").manifest
    assert manifest["model"]["adapter"]["path"] == str(adapter)
    assert manifest["model"]["adapter"]["card"]["base_model"] == str(demo_model_dir)
    assert manifest["model"]["parsed_args"]["enable_thinking"] == "False"  # the prompt the adapter was trained on
    assert manifest["prompt"]["prompt_sha256"] == manifest["model"]["adapter"]["card"]["prompt"]["prompt_sha256"]


def test_refusals(tmp_path: Path, demo_model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="refusing to train on the test split"):
        finetune(
            FinetuneConfig(model=str(demo_model_dir), data="sample", out=tmp_path / "a", split="test"), progress=False
        )
    with pytest.raises(ConfigError, match=r"(?s)unknown target module\(s\) c_attn.*q_proj"):
        finetune(
            FinetuneConfig(
                model=str(demo_model_dir), data="sample", out=tmp_path / "b", target_modules=["c_attn"], max_steps=1
            ),
            progress=False,
        )
    only_test = tmp_path / "tide"
    for sub in ("conversations", "metadata"):
        (only_test / sub).mkdir(parents=True)
    src = load_dataset("sample").source.path
    shutil.copy(src / "conversations" / "2_conversations.json", only_test / "conversations")
    shutil.copy(src / "metadata" / "2_metadata.json", only_test / "metadata")
    with pytest.raises(DataError, match=r"'train' split .* is empty"):
        finetune(FinetuneConfig(model=str(demo_model_dir), data=str(only_test), out=tmp_path / "c"), progress=False)
