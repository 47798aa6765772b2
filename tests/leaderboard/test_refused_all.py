"""A build that refuses every submission fails and says which board would accept them (issue 34 item 3).

Rebuilding the demo's board with the default (TIDE) board refuses both demo entries (they are
runs on the synthetic sample): the command exits 2, leaves the previous site as it was, and
names ``--board leaderboard/demo.yaml``, with which the same command builds them."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fakes.llm_server import FakeLLMServer
from tests.leaderboard_helpers import judged_submission
from tide_bench.cli.main import cli
from tide_bench.core.resources import resource_dir
from tide_bench.leaderboard import load_board


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-refused-000")


def test_a_build_that_refuses_everything_exits_non_zero_and_names_the_board_that_accepts(
    tmp_path: Path, llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = load_board(resource_dir("leaderboard") / "demo.yaml")
    for sid in ("demo-zero-shot", "demo-other"):
        judged_submission(
            tmp_path, llm_server, sid, lambda i, s=sid: f"{s} reply {i.item_id}", the_board=demo, data=Path("sample"),
            demo=True,
        )  # fmt: skip
    subs, site = tmp_path / "submissions", tmp_path / "site"
    monkeypatch.chdir(resource_dir("leaderboard").parent)  # where a user of a checkout types the command
    runner = CliRunner()
    ok = runner.invoke(
        cli,
        ["leaderboard", "build", "--submissions", str(subs), "--board", "leaderboard/demo.yaml", "--out", str(site)],
    )
    assert ok.exit_code == 0 and "2 entries, 0 refused" in ok.output, ok.output
    before = (site / "leaderboard.json").read_bytes()
    refused = runner.invoke(cli, ["leaderboard", "build", "--submissions", str(subs), "--out", str(site)])
    assert refused.exit_code == 2, refused.output
    assert "all 2 submission(s) were refused" in refused.output and "no board was written" in refused.output
    assert "--board leaderboard/demo.yaml accepts 2 of them" in refused.output
    assert (site / "leaderboard.json").read_bytes() == before  # the previous site is untouched
