"""``tide-bench leaderboard pin``: fix a board to one TIDE release, one judge configuration and
the prompt of each condition it ranks.

The pins are computed from a snapshot the maintainer trusts, with the same code that
validation later uses on each submission's own items (the split hash over the items'
content, the item-id hash, the persona-hash split definition). Only the pinned keys of the
board file are rewritten, line by line, so its comments (the documentation of the board)
stay in place.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.core.jsonio import atomic_write_text
from tide_bench.data.splits import SPLIT_VERSION
from tide_bench.leaderboard.config import load_board
from tide_bench.leaderboard.submission.data_pins import item_ids_hash
from tide_bench.leaderboard.submission.local_paths import redact_text
from tide_bench.leaderboard.submission.prompt_check import installed_prompt_hash


def _set_keys(text: str, values: dict[str, Any]) -> str:
    lines = text.splitlines()
    for key, value in values.items():
        rendered = f"{key}: {yaml.safe_dump(value, default_flow_style=True).strip().removesuffix('...').strip()}"
        pattern = re.compile(rf"^{re.escape(key)}\s*:(?P<value>[^#]*)(?P<comment>#.*)?$")
        for k, line in enumerate(lines):
            match = pattern.match(line)
            if match:
                comment = match.group("comment")
                lines[k] = f"{rendered}  {comment}" if comment else rendered
                break
        else:
            lines.append(rendered)
    return "\n".join(lines) + "\n"


def pin_board(board_path: Path, data: str, judge_name: str, served_model: str | None = None) -> dict[str, Any]:
    """Compute the pins from ``data`` and write them into ``board_path``; return them.
    ``served_model`` pins the model that must have served the judge's requests (what the
    judge's API reports, e.g. a dated snapshot); without it that pin is left as it is."""
    from tide_bench.data import load_dataset
    from tide_bench.judging import load_judge

    config = load_board(board_path)
    dataset = load_dataset(data)
    if dataset.source.is_sample and not config.demo:
        raise ConfigError(
            "the built-in synthetic sample cannot define a TIDE board: pin it to a TIDE snapshot", path=board_path
        )
    items = dataset.items_for(config.split)
    per_persona: dict[str, set[str]] = {}
    for item in items:
        per_persona.setdefault(item.persona_id, set()).add(item.conversation_id)
    counts = {len(c) for c in per_persona.values()}
    judge = load_judge(judge_name)
    pins = {
        "split": config.split,
        "split_version": SPLIT_VERSION,
        "dataset_release": redact_text(dataset.source.label),
        "split_sha256": dataset.content_hash(config.split),
        "n_items": len(items),
        "item_ids_sha256": item_ids_hash([i.item_id for i in items]),
        "conversations_per_persona": counts.pop() if len(counts) == 1 else None,
        "judge_version": judge.version,
        "judge_rubric": judge.identity()["rubric"],
        "prompt_sha256": {condition: installed_prompt_hash(condition) for condition in config.prompt_conditions},
    }
    if served_model:
        pins["judge_served_model"] = served_model
    atomic_write_text(
        board_path, _set_keys(board_path.read_text(encoding="utf-8"), {k: v for k, v in pins.items() if k != "split"})
    )
    load_board(board_path)  # the rewritten file must still be a valid board
    return pins
