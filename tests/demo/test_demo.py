"""`tide-bench demo`: the study in miniature (zero-shot, fine-tuned, reference), judged when configured."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import board_cell, launch_chromium, read_figure, sideways_scroll, uncached_replies
from tide_bench.demo.pipeline import configured_judge, run_demo
from tide_bench.generation import load_run

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
        # every cell judged once; each model cell also answers the risk supplement (76 items, its 19 severe ones
        # judged three times) so the demo board shows a real gate (issue 44); the zero-shot cell's two samples
        # are judged too (after the runs: a sample of 8 tokens that repeats the greedy reply comes from the judge's
        # cache), and every cell's replies once more with the seeker's rubric (issue 49)
        runs = [cells / c / "run" for c in ("smollm2-135m-zero-shot", "smollm2-135m-fine-tuned", "reference")]
        samples = [cells / "smollm2-135m-zero-shot" / "samples" / f"sample-{k}" for k in (1, 2)]
        assert all(len(load_run(s).generations) == 12 for s in samples)
        calls = 3 * 12 + 2 * (76 + 2 * 19) + uncached_replies(samples, runs) + 3 * 12
        assert len(produced["judge"]) == 3 and server.total_calls == calls
        assert "2 sampled runs of the zero-shot cell" in text and "the seeker's view" in text
        site = Path(produced["site"])
        rows = json.loads((site.parent / "leaderboard.json").read_text())["rows"]
        assert len(rows) == 3 and all(r["judged"] for r in rows)
        models = [r for r in rows if r["condition"] != "reference"]
        # the supplement's 56 messages labelled with a risk (76 less 20 labelled none)
        assert all(r["risk_handling"]["by_source"]["risk supplement"]["n"] == 56 for r in models)
        assert all(r["severe_risk_failures"] is not None for r in models)
        assert sorted(r["condition"] for r in rows) == ["fine-tuned", "reference", "zero-shot"]
        report = json.loads((tmp_path / "demo" / "report" / "report.json").read_text())
        empathy = report["models"][0]["empathy"]
        assert empathy["gain"]["n"] == 12 and "reference_minus" in empathy and report["reference"]["empathy"]["n"] == 12
        _, _, marks = read_figure((tmp_path / "demo" / "report" / "gain_empathy.svg").read_text())
        assert len(marks) == 3  # the one model's zero-shot and fine-tuned means, and its gain
        zero_shot = next(r for r in rows if r["condition"] == "zero-shot")
        assert zero_shot["consistency"]["k"] == 2 and all(r["seeker_view"]["n"] == 12 for r in rows)
        _demo_board_in_a_browser(site, {r["condition"]: r["id"] for r in rows})
        again: list[str] = []
        run_demo(tmp_path / "demo", max_gen_toks=8, batch_size=6, finetune_steps=2, echo=again.append)
        assert server.total_calls == calls and not any(": running" in line for line in again)  # nothing redone
    finally:
        server.stop()


def _demo_board_in_a_browser(index: Path, ids: dict[str, str]) -> None:
    """Issue 49: on the judged demo board, the equity column and chart, the consistency columns (the
    zero-shot entry's two samples) and the seeker's-view column show in a real browser, under the banner
    saying these are not benchmark results; nothing scrolls sideways at a desktop's or a phone's width."""
    errors: list[str] = []
    with launch_chromium() as chromium:
        for width in (1400, 390):
            page = chromium.new_page(viewport={"width": width, "height": 900})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(index.as_uri())
            assert sideways_scroll(page) == 0, width
            banner = page.locator(".banner", has_text="Demo board").first
            assert banner.is_visible() and "not TIDE results" in " ".join(banner.inner_text().split())
            for key in ("equity_gap", "flag_agreement", "seeker_view"):
                assert page.locator(f"th[data-key={key}]").count() == 1, key
            # the sample's test split holds no severe item: "Handled every time" has nothing to count, and no
            # entry shows it (a column shown only when some entry has a value)
            assert page.locator("th[data-key=handled_every_time]").count() == 0
            if width == 1400:
                for key in ("equity_gap", "flag_agreement", "seeker_view"):
                    assert page.locator(f"th[data-key={key}]").is_visible(), key
                assert re.match(r"\d+\.\d%", board_cell(page, ids["zero-shot"], "flag_agreement"))
                assert board_cell(page, ids["fine-tuned"], "flag_agreement") == "n/a"  # no samples
                assert re.match(r"\d\.\d\d", board_cell(page, ids["reference"], "seeker_view"))
                # the sample's few personas: no group of 10 to compare, said, not left blank
                assert board_cell(page, ids["zero-shot"], "equity_gap") == "not estimable"  # the reason on hover
                equity = page.locator("#equity")
                assert equity.locator("svg").count() >= 1 and "not estimable" in equity.inner_text()
            assert errors == []
            page.close()
        page = chromium.new_page(viewport={"width": 1400, "height": 900})
        page.goto((index.parent / "models" / f"{ids['zero-shot']}.html").as_uri())
        safety = page.locator("#safety").inner_text()  # the entry's consistency summary, on its own page
        assert "Consistency across samples" in safety and "flag_agreement" in safety.replace(" ", "_").lower()
        page.close()


def test_judge_stage_is_skipped_without_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TIDE_BENCH_JUDGE_BASE_URL", "TIDE_BENCH_JUDGE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert configured_judge() is None
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    assert configured_judge().name == "openai-gpt"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    assert configured_judge().name == "claude-sonnet"


def test_the_demo_says_how_long_it_takes_before_it_starts(tmp_path: Path) -> None:
    """U6 (new-user round 3): on a busy machine the demo took 51 minutes and looked hung; it now
    says what it will take (the study planner's rates) and the quicker variant, before it starts."""
    from tide_bench.demo.pipeline import QUICK, demo_study, expected_seconds, time_line

    spec, quick = demo_study(finetune_steps=10), demo_study(**QUICK)
    full, short = expected_seconds(spec, tmp_path), expected_seconds(quick, tmp_path)
    assert full is not None and short is not None and 0 < short < full < 20 * 60
    line = time_line(spec, quick, tmp_path)
    assert line.startswith(f"[time] about {round(full / 60)} min on 2 idle CPU cores") and "--finetune 0" in line


def test_fine_tuning_time_follows_the_studys_sequences_per_step(tmp_path: Path) -> None:
    """The planner priced every fine-tuning step at 16 sequences, whatever the study's micro-batch
    and accumulation (the demo's LoRA takes 2 a step): its estimate was 8 times too long."""
    from dataclasses import replace

    from tide_bench.demo.pipeline import demo_study
    from tide_bench.study.estimate import finetune_seconds, workload
    from tide_bench.study.plan import make_plan
    from tide_bench.study.rates import assumed_rates

    def seconds(batch: int, accum: int) -> float:
        spec = demo_study(finetune_steps=10)
        lora = spec.lora() | {"batch_size": batch, "grad_accum": accum}
        spec = replace(spec, conditions={"zero-shot": {}, "fine-tuned": {"lora": lora}})
        plan = make_plan(spec, tmp_path)
        stage = next(s for s in plan.stages if s.stage == "finetune")
        value, _ = finetune_seconds(plan, stage, workload(spec), assumed_rates())
        assert value is not None
        return value

    assert seconds(4, 4) > seconds(1, 2) * 4  # training tokens 8x (validation unchanged)
