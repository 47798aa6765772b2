"""The plain install (no [eval] extra): what needs no model works, the rest says what to install.

The commands run in a fresh interpreter in which the [eval] extra's modules cannot be
imported (a ``sitecustomize`` refuses them, as if they were not installed), so every import
the commands really make is exercised, including the lazy ones.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.leaderboard_helpers import board, fake_judge, judged_submission, stand_in_dataset, tide_run
from tide_bench.core.extras import EVAL_MODULES

BLOCKER = """
import importlib.abc, sys
BLOCKED = {blocked!r}
class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _Blocked())
"""
HEAVY = sorted({m.split(".")[0] for m in EVAL_MODULES} | {"gguf", "pyarrow", "pandas", "sklearn"})


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("plain")
    (tmp / "site-hook").mkdir()
    (tmp / "site-hook" / "sitecustomize.py").write_text(BLOCKER.format(blocked=HEAVY))
    with fake_judge() as server:
        judged_submission(tmp, server, "alpha", lambda i: f"Alpha [[SCORES:4,4,3]] {i.item_id}")
        judged_submission(tmp, server, "beta", lambda i: f"Beta [[SCORES:2,3,2]] {i.item_id}")
    run = tide_run(tmp / "run-lean", lambda i: f"Lean [[SCORES:3,3,3]] {i.item_id}", stand_in_dataset(tmp))
    board_file = tmp / "board.yaml"  # the helpers' board: the stand-in's personas have fewer conversations than TIDE's
    board_file.write_text(f"name: plain\nconversations_per_persona: {board().conversations_per_persona or 'null'}\n")
    return {"tmp": tmp, "hook": tmp / "site-hook", "run": run, "submissions": tmp / "submissions", "board": board_file}


def tide(plain: dict[str, Path], *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m tide_bench ARGS`` with the [eval] modules unimportable."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | (env or {})
    environ["PYTHONPATH"] = os.pathsep.join([str(plain["hook"]), str(Path(__file__).resolve().parents[2])])
    return subprocess.run(
        [sys.executable, "-m", "tide_bench", *args], capture_output=True, text=True, env=environ, timeout=300
    )


def test_the_blocker_works(plain: dict[str, Path]) -> None:
    probe = tide(plain, "--version")
    assert probe.returncode == 0, probe.stderr
    blocked = subprocess.run(
        [sys.executable, "-c", "import torch"],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(plain["hook"])},
    )
    assert blocked.returncode != 0 and "No module named 'torch'" in blocked.stderr


def test_judging_viewing_validating_and_building_need_no_model(plain: dict[str, Path]) -> None:
    run, tmp = plain["run"], plain["tmp"]
    with fake_judge() as server:
        judged = tide(
            plain,
            "judge",
            str(run),
            "--out",
            str(run / "judge"),
            "--judge",
            "local",
            "--base-url",
            f"{server.url}/v1",
            "--model",
            "fake-judge",
        )
    assert judged.returncode == 0, judged.stderr
    assert (run / "judge" / "judgments.jsonl").is_file()
    viewed = tide(plain, "view", str(run))
    assert viewed.returncode == 0, viewed.stderr
    assert (run / "view.html").is_file()
    board_file = plain["board"]
    validated = tide(
        plain, "leaderboard", "validate", str(plain["submissions"]), "--board", str(board_file), "--no-embedding-check"
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr
    built = tide(
        plain, "leaderboard", "build", "--submissions", str(plain["submissions"]), "--out", str(tmp / "site"),
        "--board", str(board_file), "--allow-risk-gate-off",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert "2 entries, 0 refused" in built.stdout and (tmp / "site" / "index.html").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "--data", "sample", "--model-args", "pretrained=m", "--output-dir", "{tmp}/out"],
        ["finetune", "--model", "m", "--data", "sample", "--out", "{tmp}/adapter"],
        ["demo", "--out", "{tmp}/demo"],
        ["tasks-path"],
    ],
    ids=["eval", "finetune", "demo", "tasks-path"],
)
def test_model_commands_say_what_to_install(plain: dict[str, Path], args: list[str]) -> None:
    result = tide(plain, *(a.format(tmp=plain["tmp"]) for a in args))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "pip install 'tide-bench[eval]'" in result.stderr and "Traceback" not in result.stderr
    assert not (plain["tmp"] / "out").exists() and not (plain["tmp"] / "adapter").exists()


def test_the_embedding_spot_check_says_how_to_skip_it(plain: dict[str, Path]) -> None:
    result = tide(plain, "leaderboard", "validate", str(plain["submissions"] / "alpha"), "--board", str(plain["board"]))
    assert result.returncode == 2 and "--no-embedding-check" in result.stderr and "Traceback" not in result.stderr
