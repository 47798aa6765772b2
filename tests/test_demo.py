"""`tide-bench demo`: the study in miniature (zero-shot, fine-tuned, reference), judged when configured."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer
from tide_bench.demo.pipeline import configured_judge, run_demo

pytestmark = pytest.mark.slow


def test_demo_runs_every_configured_stage_and_resumes(
    tmp_path: Path, demo_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeLLMServer().start()
    try:
        for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("TIDE_BENCH_JUDGE_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("TIDE_BENCH_JUDGE_MODEL", "fake-judge")
        lines: list[str] = []
        produced = run_demo(tmp_path / "demo", max_gen_toks=8, batch_size=6, finetune_steps=2, echo=lines.append)
        text = "\n".join(lines)
        cells = tmp_path / "demo" / "cells"
        assert {p.parent.parent.name for p in cells.glob("*/run/run.json")} == {
            "smollm2-135m-zero-shot",
            "smollm2-135m-fine-tuned",
            "reference",
        }
        assert "not benchmark results" in text and produced["failed"] == {}
        assert re.search(r"capped at --max-gen-toks 8 tokens.*\b\d+ of 12 smollm2-135m-zero-shot replies", text)
        # every cell judged once; each model cell also answers the risk supplement (68 items, its 14 severe ones
        # judged three times) so the demo board shows a real gate (issue 44)
        calls = 3 * 12 + 2 * (68 + 2 * 14)
        assert len(produced["judge"]) == 3 and server.total_calls == calls
        site = Path(produced["site"])
        rows = json.loads((site.parent / "leaderboard.json").read_text())["rows"]
        assert len(rows) == 3 and all(r["judged"] for r in rows)
        models = [r for r in rows if r["condition"] != "reference"]
        assert all(r["risk_handling"]["by_source"]["risk supplement"]["n"] == 52 for r in models)
        assert all(r["severe_risk_failures"] is not None for r in models)
        assert sorted(r["condition"] for r in rows) == ["fine-tuned", "reference", "zero-shot"]
        report = json.loads((tmp_path / "demo" / "report" / "report.json").read_text())
        empathy = report["models"][0]["empathy"]
        assert empathy["gain"]["n"] == 12 and "reference_minus" in empathy and report["reference"]["empathy"]["n"] == 12
        assert (tmp_path / "demo" / "report" / "gain_empathy.png").is_file()
        again: list[str] = []
        run_demo(tmp_path / "demo", max_gen_toks=8, batch_size=6, finetune_steps=2, echo=again.append)
        assert server.total_calls == calls and not any(": running" in line for line in again)  # nothing redone
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
