"""Reply-only masking under real chat-template families, checked against lm-eval's own rendering.

Each fixture (tests/fixtures/chat_templates) is a tokenizer config: special tokens plus a
template rendering system/user/assistant messages as that family's published template does.
The demo model's tokenizer carries them (no download). For every family that can be trained,
the training prompt must be exactly what lm-eval 0.4.13 renders and tokenizes at evaluation
(HFLM.apply_chat_template and tok_batch_encode, called directly), and the labels must be the
reply followed by its end-of-turn token. Families that cannot give such labels are refused.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lm_eval.models.huggingface import HFLM

from tide_bench.cli.main import cli
from tide_bench.core.errors import TideBenchError
from tide_bench.data import load_dataset
from tide_bench.finetune import FinetuneConfig, finetune
from tide_bench.finetune.chat import TemplateMismatch
from tide_bench.finetune.examples import IGNORE, encode, encode_split, system_prompt
from tide_bench.generation.runner import place_system_prompts, with_template_kwargs
from tide_bench.tasks.prompts import build_messages

FIXTURES = Path(__file__).parents[1] / "fixtures" / "chat_templates"
SPECS = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(FIXTURES.glob("*.json"))}
TRAINABLE = [name for name, spec in SPECS.items() if spec["expect"] == "ok"]
REFUSED = [name for name, spec in SPECS.items() if spec["expect"] == "refuse"]


@pytest.fixture(scope="module")
def base_tokenizer(demo_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(demo_model_dir)


def tokenizer_for(base: Any, name: str) -> Any:
    spec = SPECS[name]
    tok = copy.deepcopy(base)
    special: dict[str, Any] = {"additional_special_tokens": spec["special_tokens"]}
    special |= {key: spec[key] for key in ("bos_token", "eos_token") if spec.get(key)}
    tok.add_special_tokens(special)
    if spec.get("add_bos_token"):
        tok.add_bos_token = True
    tok.chat_template = spec["chat_template"]
    return tok


@pytest.fixture(scope="module")
def templated(base_tokenizer: Any) -> dict[str, Any]:
    """One tokenizer per fixture, built once (tests that change a tokenizer build their own)."""
    return {name: tokenizer_for(base_tokenizer, name) for name in SPECS}


@pytest.fixture(scope="module")
def items() -> list:
    return load_dataset("sample").items_for("train")[:3]


def lm_eval_prompt_ids(tok: Any, messages: list[dict[str, str]]) -> tuple[str, list[int]]:
    """What `tide-bench eval` has lm-eval's hf backend render and tokenize: lm-eval's own
    HFLM.apply_chat_template and tok_batch_encode, with the model args tide-bench eval passes and
    its system-prompt placement installed on the model (generation.runner.place_system_prompts)."""
    args = dict(part.split("=") for part in with_template_kwargs("hf", "pretrained=x").split(",")[1:])
    fake = SimpleNamespace(
        tokenizer=tok,
        chat_template_args={k: v == "True" for k, v in args.items()},
        backend="causal",
        add_bos_token=None,
    )
    fake.apply_chat_template = lambda history, add_generation_prompt=True: HFLM.apply_chat_template(
        fake, history, add_generation_prompt=add_generation_prompt
    )
    place_system_prompts(fake)
    prompt = fake.apply_chat_template(messages, add_generation_prompt=True)
    ids, _ = HFLM.tok_batch_encode(fake, [prompt])
    return prompt, ids[0].tolist()


@pytest.mark.parametrize("name", TRAINABLE)
def test_prompt_tokens_are_lm_evals_and_labels_are_the_reply_and_its_end_of_turn(
    base_tokenizer: Any, items: list, name: str
) -> None:
    tok, spec = tokenizer_for(base_tokenizer, name), SPECS[name]
    for item in items:
        example = encode(item, tok, 4096, chat_template=True)
        assert example is not None
        n_prompt = sum(1 for label in example["labels"] if label == IGNORE)
        _, eval_ids = lm_eval_prompt_ids(tok, build_messages(item.to_doc(), system_prompt()))
        assert example["input_ids"][:n_prompt] == eval_ids, name
        assert example["labels"][:n_prompt] == [IGNORE] * n_prompt
        labelled = example["labels"][n_prompt:]
        assert labelled == example["input_ids"][n_prompt:] and IGNORE not in labelled
        text = tok.decode(labelled)
        assert text.strip().startswith(item.reference_reply.strip()[:60]), (name, text[:80])
        eot_id = tok.convert_tokens_to_ids(spec["end_of_turn"])
        assert eot_id in labelled[-3:], (name, tok.convert_ids_to_tokens(labelled[-3:]))
        assert "<think>" not in text and "[INST]" not in text


def test_the_system_prompt_reaches_every_template_at_training_and_evaluation_alike(
    base_tokenizer: Any, items: list
) -> None:
    """Issue 29, M2: a template without a system role (Gemma-2) gets the system prompt at the start
    of the first user turn, at evaluation and in training; lm-eval alone would drop it."""
    for name in TRAINABLE:
        tok = tokenizer_for(base_tokenizer, name)
        split = encode_split(items, tok, 4096, chat_template=True)
        prompt, _ = lm_eval_prompt_ids(tok, build_messages(items[0].to_doc(), system_prompt()))
        no_system_role = bool(SPECS[name].get("system_dropped"))
        expected = "first_user_turn" if no_system_role else "system"
        assert split.placements == {expected: len(items)} and split.system_dropped == 0, name
        assert system_prompt()[:60] in prompt, name
        if no_system_role:  # folded: the user turn opens with the system prompt, then a blank line, then the client
            turn = prompt.split("<start_of_turn>user\n", 1)[1]
            assert turn.startswith(system_prompt()) and f"{system_prompt()}\n\n{items[0].client_utterance}" in turn


def test_thinking_templates_render_without_a_think_block_at_training_and_evaluation(
    base_tokenizer: Any, items: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    tok = tokenizer_for(base_tokenizer, "qwen3")
    example = encode(items[0], tok, 4096, chat_template=True)
    assert example is not None
    think = tok.convert_tokens_to_ids("<think>")
    prompt_part = [t for t, label in zip(example["input_ids"], example["labels"], strict=True) if label == IGNORE]
    assert think in prompt_part and think not in [t for t in example["labels"] if t != IGNORE]
    assert "enable_thinking=False" in with_template_kwargs(
        "hf", "pretrained=m"
    ) and "enable_thinking" not in with_template_kwargs("openai-chat-completions", "model=m")
    monkeypatch.setattr("tide_bench.finetune.chat.CHAT_TEMPLATE_KWARGS", {})  # what the old code rendered
    with pytest.raises(TemplateMismatch, match=r"puts '<think>"):
        encode(items[0], tok, 4096, chat_template=True)


@pytest.mark.parametrize("name", REFUSED)
def test_templates_that_cannot_give_reply_only_labels_are_refused_with_the_reason(
    base_tokenizer: Any, items: list, name: str
) -> None:
    with pytest.raises(TemplateMismatch, match=SPECS[name]["refusal"]):
        encode(items[0], tokenizer_for(base_tokenizer, name), 4096, chat_template=True)


def test_refusal_comes_before_any_model_loads_and_the_cli_says_it_in_one_line(
    base_tokenizer: Any, tmp_path: Path, demo_model_dir: Path
) -> None:
    folder = tmp_path / "mistral-like"  # a tokenizer and config, no weights: loading the model would fail otherwise
    tokenizer_for(base_tokenizer, "mistral_v0_3").save_pretrained(folder)
    (folder / "config.json").write_text((demo_model_dir / "config.json").read_text())
    with pytest.raises(TemplateMismatch, match="does not keep the evaluation prompt"):
        finetune(FinetuneConfig(model=str(folder), data="sample", out=tmp_path / "a", max_steps=1), progress=False)
    assert not (tmp_path / "a").exists()
    result = CliRunner().invoke(
        cli, ["finetune", "--model", str(folder), "--data", "sample", "--out", str(tmp_path / "b")]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "does not keep the evaluation prompt as the start of the conversation" in result.output


def test_plain_transcript_gets_bos_exactly_as_lm_eval_adds_it(base_tokenizer: Any, items: list) -> None:
    tok = copy.deepcopy(base_tokenizer)
    tok.add_bos_token = True
    example = encode(items[0], tok, 4096, chat_template=False)
    assert example is not None
    from tide_bench.tasks.prompts import render_plain

    fake = SimpleNamespace(tokenizer=tok, backend="causal", add_bos_token=None)
    eval_ids = HFLM.tok_batch_encode(fake, [render_plain(build_messages(items[0].to_doc(), system_prompt()))])[0][
        0
    ].tolist()
    n_prompt = sum(1 for label in example["labels"] if label == IGNORE)
    assert eval_ids[0] == tok.bos_token_id and example["input_ids"][:n_prompt] == eval_ids
    assert example["input_ids"][-1] == tok.eos_token_id and example["labels"][-1] == tok.eos_token_id


def test_too_long_examples_are_left_out_counted_and_never_cut(base_tokenizer: Any) -> None:
    items = load_dataset("sample").items_for("train")
    lengths = sorted(len(encode(i, base_tokenizer, 10**6, True)["input_ids"]) for i in items)  # type: ignore[index]
    limit = lengths[len(lengths) // 2]
    longer = sum(1 for n in lengths if n > limit)
    assert longer > 0
    split = encode_split(items, base_tokenizer, limit, chat_template=True)
    assert len(split.too_long) == longer and len(split.examples) == len(items) - longer
    assert split.report()["too_long_share"] == round(longer / len(items), 4)
    eot = base_tokenizer.convert_tokens_to_ids("<|im_end|>")
    for example in split.examples:
        assert len(example["input_ids"]) <= limit
        assert eot in example["labels"][-2:]  # the end-of-turn token is always learned
    with pytest.raises(TideBenchError, match="every training example is longer"):
        finetune(
            FinetuneConfig(
                model=str(Path(base_tokenizer.name_or_path)),
                data="sample",
                out=Path("/nonexistent/x"),
                max_length=lengths[0] - 1,
            ),
            progress=False,
        )


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(client=st.text(min_size=1, max_size=80), reply=st.text(min_size=1, max_size=80), name=st.sampled_from(TRAINABLE))
def test_any_text_gives_lm_evals_prompt_and_a_labelled_reply_or_a_clear_refusal(
    templated: dict[str, Any], items: list, client: str, reply: str, name: str
) -> None:
    """Conversation text comes from outside (a TIDE snapshot): whatever it holds, encoding either keeps the
    evaluation prompt's tokens and labels exactly the rendered reply with its end-of-turn, or refuses clearly."""
    from dataclasses import replace

    tok = templated[name]
    item = replace(items[0], client_utterance=client, reference_reply=reply)
    try:
        example = encode(item, tok, 10**6, chat_template=True)
    except TemplateMismatch as exc:
        assert item.item_id in str(exc)
        return
    assert example is not None
    n_prompt = sum(1 for label in example["labels"] if label == IGNORE)
    _, eval_ids = lm_eval_prompt_ids(tok, build_messages(item.to_doc(), system_prompt()))
    assert example["input_ids"][:n_prompt] == eval_ids
    labelled = example["labels"][n_prompt:]
    assert labelled and tok.convert_tokens_to_ids(SPECS[name]["end_of_turn"]) in labelled


def test_the_guided_condition_trains_on_the_guided_system_prompt(base_tokenizer: Any, items: list) -> None:
    """An adapter for the guided condition is trained on tide_empathy_guided's prompt, not the neutral one."""
    from tide_bench.tasks.registry import system_prompt as task_prompt

    neutral = encode(items[0], base_tokenizer, 4096, True, prompt="neutral")
    guided = encode(items[0], base_tokenizer, 4096, True, prompt="guided")
    text = base_tokenizer.decode(guided["input_ids"])
    assert task_prompt("guided") in text and task_prompt("neutral") not in text
    assert base_tokenizer.decode(neutral["input_ids"]).count(task_prompt("neutral")) == 1
    assert system_prompt("guided") == task_prompt("guided") != system_prompt()
