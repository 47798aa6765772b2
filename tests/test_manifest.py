"""run.json's prompt block: the condition and the hash of everything the model was told."""

from __future__ import annotations

from tide_bench.generation.manifest import _prompt_block
from tide_bench.tasks.prompts import prompt_sha256


def _results(*conditions: str) -> dict:
    return {
        "configs": {
            f"t{i}": {"description": f"prompt {c}", "metadata": {"version": 2.0, "prompt_condition": c}}
            for i, c in enumerate(conditions)
        }
    }


def test_condition_and_hash_of_a_single_task_run() -> None:
    block = _prompt_block(_results("guided"), {"system_instruction": None}, is_reference=False)
    assert block["condition"] == "guided" and block["prompt_sha256"] == prompt_sha256("prompt guided")


def test_tasks_of_two_conditions_make_a_mixed_run() -> None:
    assert _prompt_block(_results("neutral", "guided"), {}, is_reference=False)["condition"] == "mixed"


def test_the_reference_run_has_its_own_condition() -> None:
    assert _prompt_block(_results("neutral"), {}, is_reference=True)["condition"] == "reference"


def test_an_extra_instruction_is_hashed_with_the_prompt() -> None:
    block = _prompt_block(_results("neutral"), {"system_instruction": "Say it makes sense."}, is_reference=False)
    assert (
        block["prompt_sha256"]
        == prompt_sha256("prompt neutral", "Say it makes sense.")
        != prompt_sha256("prompt neutral")
    )


def test_a_peft_adapter_is_not_counted_into_the_models_size() -> None:
    """U5 (new-user round 3): the demo's fine-tuned entry was listed at 136M parameters beside its
    135M base: lm-eval counts a peft-loaded LoRA's weights into the model."""
    from tide_bench.generation.manifest import base_parameters

    card = {"parameters": {"trainable": 921_600, "total": 135_436_416}}
    assert base_parameters(135_436_416, {"loaded_via": "peft", "card": card}) == 134_514_816
    merged = {"loaded_via": "merged", "card": card}  # a merged adapter adds no weights
    assert base_parameters(134_514_816, merged) == 134_514_816
    assert base_parameters(134_514_816, None) == 134_514_816
    assert base_parameters(None, {"loaded_via": "peft", "card": card}) is None
    assert base_parameters(1_000, {"loaded_via": "peft", "card": {"parameters": {"trainable": 5_000}}}) == 1_000
