"""Prompt construction: genuine multi-turn messages, plain transcript, versioned hash."""

from __future__ import annotations

from tests.helpers import MULTI_EXCHANGE
from tide_bench.data import load_dataset
from tide_bench.tasks.prompts import build_messages, prompt_sha256, render_plain


def _turn2_doc() -> dict:
    item = next(i for i in load_dataset(str(MULTI_EXCHANGE)).items if i.item_id == "4/conversation_2/turn2")
    return item.to_doc()


def test_messages_are_system_history_then_client_turn() -> None:
    doc = _turn2_doc()
    messages = build_messages(doc, "Be kind.")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"] == "Be kind."
    assert messages[1]["content"].startswith("Fourth of July is coming up")
    assert messages[2]["content"] == doc["history"][1]["content"]
    assert messages[3]["content"] == doc["client_utterance"]


def test_no_system_prompt_means_no_system_message() -> None:
    assert [m["role"] for m in build_messages(_turn2_doc(), None)] == ["user", "assistant", "user"]


def test_plain_transcript_ends_with_the_supporter_cue() -> None:
    text = render_plain(build_messages(_turn2_doc(), "Be kind."))
    assert text.startswith("Be kind.\n")
    assert "\nClient: Fourth of July" in text
    assert "\nSupporter: That sounds like it was frightening" in text
    assert text.endswith("\nClient: " + _turn2_doc()["client_utterance"] + "\nSupporter:")


def test_prompt_hash_tracks_the_system_prompt() -> None:
    assert prompt_sha256("a") == prompt_sha256(" a ")
    assert prompt_sha256("a") != prompt_sha256("b")
    assert len(prompt_sha256(None)) == 64


def test_a_system_instruction_changes_the_prompt_hash() -> None:
    """An instruction prepended with --system-instruction is part of what the model is told."""
    assert prompt_sha256("a", None) == prompt_sha256("a", "  ") == prompt_sha256("a")
    assert prompt_sha256("a", "Always say it makes sense.") != prompt_sha256("a")
    assert prompt_sha256("a", "x") != prompt_sha256("a", "y")
