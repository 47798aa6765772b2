"""Look-alike model names and ids are one name (issue 32, N13).

Names and ids are compared by a skeleton (NFKC, then each confusable character as the letter it
reads as: Cyrillic and Greek look-alikes, ``0``/``O``, ``1``/``l``/``I``, separators; case
folded; ``rn`` as ``m``): two entries whose names or ids read the same are both refused, each
naming the other."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission.consistency import cross_check
from tide_bench.leaderboard.submission.layout import Submission
from tide_bench.leaderboard.submission.validate import CheckResult

LOOKALIKES = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "l": "1", "O": "0", "m": "rn"}


def _entry(sid: str, name: str, digest: str) -> CheckResult:
    check = CheckResult(sid, Path(sid))
    check.submission = Submission(
        sid, Path(sid), {"model_name": name}, {}, [], split_hash="s", n_items=1, replies_digest=digest
    )
    return check


def _refusals(*entries: tuple[str, str]) -> dict[str, list[str]]:
    checks = [_entry(sid, name, f"digest-{k}") for k, (sid, name) in enumerate(entries)]
    cross_check(checks, BoardConfig(split_sha256="s", judge_version="v"))
    return {c.id: c.errors for c in checks}


def test_look_alike_display_names_are_refused_together() -> None:
    errors = _refusals(("qwen-a", "Qwen 0.5B Chat"), ("qwen-b", "Qwen O.5B Chat"), ("other", "Another model"))
    assert any("the same display name as entry qwen-b" in e for e in errors["qwen-a"])
    assert any("the same display name as entry qwen-a" in e for e in errors["qwen-b"])
    assert errors["other"] == []


def test_look_alike_ids_are_refused_together() -> None:
    errors = _refusals(("model-l1", "First model"), ("model-ll", "Second model"), ("model-x", "Third"))
    assert any("an id that reads the same as entry model-ll" in e for e in errors["model-l1"])
    assert errors["model-x"] == []


@pytest.mark.parametrize(
    ("name", "look_alike"),
    [
        ("Ilama 7B", "\u0399lama 7B"),  # Greek capital iota for the Latin I
        ("Ilama 7B", "\u0406lama 7B"),  # Cyrillic I
        ("llama 7B", "Ilama 7B"),  # capital I for a small l
        ("Qwen chat", "Qw\u00e9n chat"),  # an accent
        ("Qwen chat", "Qwe\u0301n chat"),  # a combining accent
        ("Qwen chat", "Qw\u3164en chat"),  # a Hangul filler, which draws nothing
        ("Qwen chat", "Qw\u00aden chat"),  # a soft hyphen
        ("Qwen chat", "Qwen\u00b7chat"),  # a middle dot as the separator
        ("gemma 2b", "gemma--2b"),  # a run of separators
    ],
)
def test_look_alikes_the_table_names_read_the_same(name: str, look_alike: str) -> None:
    from tide_bench.leaderboard.submission.metadata import name_key

    assert name_key(look_alike) == name_key(name)


@pytest.mark.parametrize(
    ("name", "other"), [("Llama 3 8B", "Llama 3 70B"), ("qwen-0.5b", "qwen-1.5b"), ("phi-2", "phi-3")]
)
def test_different_names_stay_different(name: str, other: str) -> None:
    from tide_bench.leaderboard.submission.metadata import name_key

    assert name_key(name) != name_key(other)


@settings(max_examples=200, derandomize=True)
@given(
    name=st.text(alphabet="abcdeilmnopxyO01 -_.", min_size=1, max_size=20),
    swaps=st.lists(st.integers(0, 19), max_size=5),
)
def test_a_confusable_variant_has_the_same_skeleton(name: str, swaps: list[int]) -> None:
    from tide_bench.leaderboard.submission.metadata import name_key

    chars = list(name)
    for k in swaps:
        if k < len(chars) and chars[k] in LOOKALIKES:
            chars[k] = LOOKALIKES[chars[k]]
    assert name_key("".join(chars)) == name_key(name)
