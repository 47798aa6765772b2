"""The "where to add X" recipes of docs/architecture.md, each followed step by step: a judge
provider (an OpenAI-compatible server of your own, as a judge folder; and a new wire protocol,
one file), a validation pack (a
manifest in $TIDE_BENCH_VALIDATION_PACKS read by an existing adapter) and an executor
(``register_executor``). The metric recipe is tests/leaderboard/test_metric_table.py's, the column recipe
tests/leaderboard/test_site.py's."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tests.validation_fixtures import annomi
from tide_bench.cli.main import cli

RECIPES = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"


@pytest.fixture
def server():
    """The fake API on 127.0.0.1 (no key checked: a local server needs none)."""
    fake = FakeLLMServer().start()
    yield fake
    fake.stop()


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_recipe_add_a_judge_provider(tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """1. a judge folder with `provider: openai-compatible` (data, no code); 2. `judge --dry-run`
    with it; 3. `judge` with `--base-url`; 4. its name, provider and version are in every output."""
    monkeypatch.delenv("TIDE_BENCH_JUDGE_API_KEY", raising=False)
    config = RECIPES / "judges" / "my-vllm" / "config.yaml"
    run = make_run(tmp_path / "run")
    url = server.url + "/v1"
    estimate = _cli(
        "judge", str(run), "--judge", str(config), "--base-url", url, "--out", str(tmp_path / "j"), "--dry-run"
    )
    assert "calls" in estimate and server.total_calls == 0 and not (tmp_path / "j").exists()
    out = tmp_path / "judge"
    _cli("judge", str(run), "--judge", str(config), "--base-url", url, "--out", str(out))
    judged = json.loads((out / "judge_config.json").read_text())
    assert judged["name"] == "my-vllm" and judged["provider"] == "openai-compatible"
    lines = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert lines and all(j["status"] == "scored" and j["judge"]["name"] == "my-vllm" for j in lines)
    assert {j["judge"]["version"] for j in lines} == {judged["version"]}
    assert server.routes["POST /v1/chat/completions"] == len(lines)  # over HTTP, the lean compatible path
    summary = json.loads((out / "judge_summary.json").read_text())
    assert summary["n_scored"] == len(lines) and summary["judge"]["family"] == "my-family"


def _toy_rpc_server() -> tuple[Any, str]:
    """A server speaking the made-up Toy RPC protocol on 127.0.0.1, rating like the fake API."""
    import asyncio
    import threading

    from aiohttp import web

    from tests.fakes.llm_server import _markers, _reply_of

    rater, seen = FakeLLMServer(), {"rate": 0, "keys": set()}

    async def rate(request: web.Request) -> web.Response:
        body = await request.json()
        seen["rate"] += 1
        seen["keys"].add(request.headers.get("X-Toy-Key"))
        assert isinstance(body["instructions"], str) and [m["role"] for m in body["input"]] == ["user"]
        reply = _reply_of(body["input"][-1]["content"])
        answer = rater._rating(reply, _markers(reply), 1, body["answer_format"]["schema"])
        return web.json_response({"answer": answer, "used": {"in": 900, "out": 120}, "model": body["model"]})

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": "toy"}]})

    app = web.Application()
    app.router.add_post("/toy/rate", rate)
    app.router.add_get("/toy/models", models)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return seen, f"http://127.0.0.1:{runner.addresses[0][1]}/toy"


def test_recipe_add_a_wire_protocol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A protocol that is not OpenAI-compatible is one file: a Provider subclass registered with
    its capabilities (tests/fixtures/recipes/protocol/toy_rpc.py). Imported, it judges over HTTP
    through the whole command (plan, cost, cache, records); batch mode is refused because its
    capabilities say so; nothing else in tide-bench was edited for it."""
    monkeypatch.setenv("TIDE_BENCH_JUDGE_API_KEY", "toy-key-0123456789")
    if "toy_rpc" not in sys.modules:
        spec = importlib.util.spec_from_file_location("toy_rpc", RECIPES / "protocol" / "toy_rpc.py")
        assert spec is not None and spec.loader is not None
        sys.modules["toy_rpc"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    seen, url = _toy_rpc_server()
    config = RECIPES / "judges" / "my-toy-judge" / "config.yaml"
    run = make_run(tmp_path / "run")
    out = tmp_path / "judge"
    common = ["judge", str(run), "--judge", str(config), "--base-url", url, "--out", str(out)]
    assert "calls" in _cli(*common, "--dry-run") and seen["rate"] == 0
    _cli(*common)
    lines = [json.loads(x) for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert lines and all(j["status"] == "scored" and j["judge"]["provider"] == "toy-rpc" for j in lines)
    assert seen["rate"] == len(lines) and seen["keys"] == {"toy-key-0123456789"}
    summary = json.loads((out / "judge_summary.json").read_text())
    assert summary["n_scored"] == len(lines)
    refused = CliRunner().invoke(cli, [*common, "--mode", "batch", "--overwrite"])
    assert refused.exit_code != 0 and "batch mode is not implemented for the toy-rpc provider" in refused.output


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_recipe_add_a_validation_pack(tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """1. the upstream files at a pinned revision; 2. a manifest naming them with their sha256,
    licence, design, adapter and dimensions, in a folder on $TIDE_BENCH_VALIDATION_PACKS;
    3. `validation list`; 4. `fetch --from`; 5. `run` a judge; 6. `report` it."""
    upstream = tmp_path / "upstream"
    annomi(upstream, tmp_path / "unused-manifests", turns=30, raters=4)  # AnnoMI's layout, made up
    manifest = yaml.safe_load((RECIPES / "packs" / "fx-recipe.yaml").read_text())
    for entry in manifest["files"]:
        entry["sha256"] = _sha256(upstream / entry["path"])
    packs = tmp_path / "my-packs"
    packs.mkdir()
    (packs / "fx-recipe.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    monkeypatch.setenv("TIDE_BENCH_VALIDATION_PACKS", str(packs))
    monkeypatch.setenv("TIDE_BENCH_CACHE", str(tmp_path / "cache"))
    assert "fx-recipe" in _cli("validation", "list")
    _cli("validation", "fetch", "fx-recipe", "--accept-licence", "--from", str(upstream))
    server.rater = lambda reply: {"scores": [3, 3, 4 if "so" in reply else 2], "category": None, "risk": None}
    run = tmp_path / "runs" / "fx-recipe-fake"
    _cli(
        "validation", "run", "fx-recipe", "--judge", "local", "--model", "fake-judge",
        "--base-url", server.url + "/v1", "--out", str(run),
    )  # fmt: skip
    report = tmp_path / "report.json"
    text = _cli("validation", "report", "fx-recipe", "--judge-ratings", str(run), "--json", str(report))
    assert "fx-recipe" in text
    block = json.loads(report.read_text())["packs"]["fx-recipe"]
    (judge,) = block["judges"]
    dim = block["judges"][judge]["dimensions"]["reflection_exists"]
    assert dim["n"] == 30 and dim["alt_test"]["result"]["passed"] is not None


@pytest.mark.slow
def test_recipe_add_an_executor(tmp_path: Path, demo_model_dir: Path) -> None:
    """1. a function ``run(ctx, plan)`` that has each pending cell run ``run_one_cell(snapshot,
    cell_id, worker=...)`` where it runs cells; 2. ``register_executor(name, run)``; 3.
    ``run_study(..., executor=name)``: the cells run through it, then judging, board and report."""
    from tide_bench.demo.model import resolve_model
    from tide_bench.study import load_study, run_study
    from tide_bench.study.executors import ADDED_EXECUTORS, pending_cells, register_executor, run_one_cell

    ran: list[str] = []

    def inline(ctx, plan) -> None:  # a stand-in for a queue or a cloud batch service
        snapshot = ctx.write_snapshot(plan)
        for cell in pending_cells(plan, ctx):
            ran.append(cell.id)
            run_one_cell(str(snapshot), cell.id, worker=f"inline:{cell.id}")

    register_executor("inline", inline)
    try:
        demo = yaml.safe_load((Path(__file__).resolve().parents[2] / "studies" / "demo.yaml").read_text())
        study = demo | {
            "name": "recipe",
            "split": "validation",
            "conditions": {"zero-shot": {}},
            "eval": {"backend": "hf", "device": "cpu", "batch_size": 4, "max_gen_toks": 4},
            "board": {"spot_check_items": 0},
            "resources": {"gpus_per_cell": 0, "cpus_per_cell": 1},
        }
        path = tmp_path / "recipe.yaml"
        path.write_text(yaml.safe_dump(study))
        out = tmp_path / "out"
        result = run_study(load_study(path), out, resolve_model=resolve_model, echo=lambda _: None, executor="inline")
        assert result.failed == {} and result.unfinished == []
        assert sorted(ran) == ["reference", "smollm2-135m-zero-shot"]
        by = {json.loads(p.read_text())["by"] for p in out.glob("cells/*/eval.done.json")}
        assert by == {f"inline:{cell}" for cell in ran}
        assert (out / "site" / "leaderboard.json").is_file() and (out / "report" / "report.md").is_file()
    finally:
        ADDED_EXECUTORS.pop("inline", None)
    shutil.rmtree(out, ignore_errors=True)
