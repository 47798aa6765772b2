"""`tide-bench demo` end to end: generation, metrics, and the judge stage when configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer
from tide_bench.demo.pipeline import configured_judge, run_demo

pytestmark = pytest.mark.slow


def test_demo_runs_every_configured_stage(tmp_path: Path, demo_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeLLMServer().start()
    try:
        for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("TIDE_BENCH_JUDGE_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("TIDE_BENCH_JUDGE_MODEL", "fake-judge")
        lines: list[str] = []
        produced = run_demo(tmp_path / "demo", max_gen_toks=8, batch_size=6, finetune_steps=2, echo=lines.append)
        text = "\n".join(lines)
        assert (tmp_path / "demo" / "runs" / "demo-smollm2-chat" / "run.json").is_file()
        assert "cosine_sim" in text and "not benchmark results" in text
        assert "[judge] demo-smollm2-chat: rating the replies with local (fake-judge)" in text
        assert Path(produced["judge"], "judgments.jsonl").is_file() and server.total_calls == 36
        site = Path(produced["site"])
        assert site.is_file() and "Demo board" in site.read_text() and "refused" not in text
        rows = __import__("json").loads((site.parent / "leaderboard.json").read_text())["rows"]
        assert len(rows) == 3 and all(r["judged"] for r in rows)
        assert [r["condition"] for r in rows].count("fine-tuned") == 1
        assert "[finetune]" in text
    finally:
        server.stop()


def test_judge_stage_is_skipped_without_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TIDE_BENCH_JUDGE_BASE_URL", "TIDE_BENCH_JUDGE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert configured_judge() is None
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    assert configured_judge().name == "openai-gpt"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    assert configured_judge().name == "claude-sonnet"
