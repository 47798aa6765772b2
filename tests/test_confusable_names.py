"""Look-alike model names and ids are one name (issue 32, N13).

Names and ids are compared by a skeleton (NFKC, then each confusable character as the letter it
reads as: Cyrillic and Greek look-alikes, ``0``/``O``, ``1``/``l``/``I``, separators; case
folded; ``rn`` as ``m``): two entries whose names or ids read the same are both refused, each
naming the other."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.consistency import cross_check
from tide_bench.leaderboard.submission import Submission
from tide_bench.leaderboard.validate import CheckResult

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


@settings(max_examples=200, derandomize=True)
@given(
    name=st.text(alphabet="abcdeilmnopxyO01 -_.", min_size=1, max_size=20),
    swaps=st.lists(st.integers(0, 19), max_size=5),
)
def test_a_confusable_variant_has_the_same_skeleton(name: str, swaps: list[int]) -> None:
    from tide_bench.leaderboard.metadata import name_key

    chars = list(name)
    for k in swaps:
        if k < len(chars) and chars[k] in LOOKALIKES:
            chars[k] = LOOKALIKES[chars[k]]
    assert name_key("".join(chars)) == name_key(name)
