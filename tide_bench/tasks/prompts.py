"""Prompt construction: the same messages for evaluation, fine-tuning and API backends.

A TIDE item becomes a genuine multi-turn chat: the system prompt (the task YAML's
``description``), then the earlier client/reference turns as user/assistant messages, then
the client utterance to answer. Models without a chat template get a plain transcript with
``Client:`` / ``Supporter:`` speaker labels, ending in ``Supporter:``; generation stops at
the next ``\\nClient:``.

``PROMPT_FORMAT_VERSION`` changes whenever the rendering rules below change; together with
the system prompt text (and any ``--system-instruction``) it forms :func:`prompt_sha256`,
recorded in every result. The system prompt is chosen by the task: ``tide_empathy`` carries
the neutral condition, ``tide_empathy_guided`` the rubric-aware one (``PROMPT_CONDITIONS``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tide_bench.core.hashing import sha256_json

PROMPT_FORMAT_VERSION = "2"  # 2: chat templates render with CHAT_TEMPLATE_KWARGS
PROMPT_CONDITIONS = ("neutral", "guided")
# Chat-template settings for every TIDE prompt, at evaluation (lm-eval's hf/vllm backends get
# them as model arguments) and fine-tuning alike: thinking templates (Qwen3) render without a
# think block, so replies are scored and learned as replies.
CHAT_TEMPLATE_KWARGS: dict[str, bool] = {"enable_thinking": False}
CLIENT_LABEL = "Client"
SUPPORTER_LABEL = "Supporter"


def build_messages(doc: Mapping[str, Any], system_prompt: str | None) -> list[dict[str, str]]:
    """Chat messages for one item: system, history, then the client's turn."""
    messages: list[dict[str, str]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt.strip()})
    history: Sequence[Mapping[str, str]] = doc.get("history") or []
    messages += [{"role": m["role"], "content": m["content"]} for m in history]
    messages.append({"role": "user", "content": doc["client_utterance"]})
    return messages


def render_plain(messages: Sequence[Mapping[str, str]]) -> str:
    """A transcript for models without a chat template (base models, plain-text APIs)."""
    parts: list[str] = []
    for m in messages:
        if m["role"] == "system":
            parts.append(m["content"].strip() + "\n")
        else:
            label = CLIENT_LABEL if m["role"] == "user" else SUPPORTER_LABEL
            parts.append(f"{label}: {m['content'].strip()}")
    return "\n".join(parts) + f"\n{SUPPORTER_LABEL}:"


def prompt_sha256(system_prompt: str | None, system_instruction: str | None = None, placement: str = "system") -> str:
    """Version hash of everything the model is told: the task's system prompt, any extra
    ``--system-instruction`` placed before it, and the rendering rules' version. Without an
    instruction it equals the task's own hash (lm-eval records that one in its results). The
    chat-template settings are part of the rules, and so is where the system prompt went
    (:mod:`tide_bench.tasks.placement`): the usual ``system`` placement hashes as it always
    has; ``first_user_turn`` and ``dropped`` give other hashes."""
    record: dict[str, Any] = {
        "format": PROMPT_FORMAT_VERSION,
        "system": (system_prompt or "").strip(),
        "chat_template_kwargs": CHAT_TEMPLATE_KWARGS,
    }
    if system_instruction and system_instruction.strip():
        record["system_instruction"] = system_instruction.strip()
    if placement != "system":
        record["system_prompt_placement"] = placement
    return sha256_json(record)
