"""Token counts without a tokenizer: ~4 characters per token (a heuristic for English).

Neither SDK offers a token counter that works offline (Anthropic's ``count_tokens`` is an API
call; ``tiktoken`` downloads its tables), so every estimate uses this one rule and says so.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4.0


def estimate_tokens(text: str) -> int:
    return max(1, round(len(text) / CHARS_PER_TOKEN))
