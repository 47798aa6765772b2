"""A study generates through vLLM where it is installed and hf otherwise (issue 46), and --dry-run
prices both. No vLLM here: "installed" is an empty ``vllm`` package put on the import path, which is
all the choice looks at (the backend itself is lm-eval's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError
from tide_bench.study import load_study, make_plan
from tide_bench.study.backend import cell_model_args, resolve_backend, vllm_importable
from tide_bench.study.runner import _model_args

STUDY = {
    "name": "vb",
    "data": "sample",
    "split": "validation",
    "models": [{"id": "small", "model": "org/model-0.5B", "model_args": {"dtype": "bfloat16"}}],
    "conditions": {"zero-shot": {}, "fine-tuned": {"lora": {"max_steps": 1}}},
    "eval": {"device": "cuda:0", "max_gen_toks": 100},
    "resources": {"gpus_per_cell": 1},
}


@pytest.fixture
def vllm_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "site" / "vllm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(package.parent))


def _spec(tmp_path: Path, **changes: object):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(STUDY | changes, sort_keys=False))
    return load_study(path)


def test_the_backend_follows_what_is_importable_and_a_named_one_is_kept() -> None:
    assert resolve_backend(None, "cuda:0", lambda: True) == ("vllm", "auto: vllm is installed")
    backend, why = resolve_backend("auto", "cuda:0", lambda: False)
    assert backend == "hf" and "pip install 'tide-bench[vllm]'" in why
    assert resolve_backend("auto", "cpu", lambda: True)[0] == "hf"  # the CPU generates through hf
    assert resolve_backend("hf", "cuda:0", lambda: True) == ("hf", "eval.backend")
    assert resolve_backend("vllm", "cuda:0", lambda: False)[0] == "vllm"
    assert vllm_importable() is False  # this machine: no vLLM


def test_the_adapter_goes_in_as_each_backend_loads_it() -> None:
    args = {"pretrained": "base", "dtype": "bfloat16"}
    assert cell_model_args("hf", args, "ad") == args | {"peft": "ad"}
    assert cell_model_args("vllm", args, "ad") == args | {"lora_local_path": "ad"}
    assert cell_model_args("vllm", args, None) == args
    with pytest.raises(ConfigError, match="loads LoRA adapters"):
        cell_model_args("local-chat-completions", args, "ad")


def _cell_args(tmp_path: Path) -> tuple[str, str, str]:
    spec = _spec(tmp_path)
    plan = make_plan(spec, tmp_path / "out")
    stage = next(s for s in plan.stages if s.stage == "eval" and s.cell.condition == "fine-tuned")
    config = spec.eval_config(backend=None, model_args="", output_dir=tmp_path / "run", chat=True)
    return config.model, _model_args(spec, stage, lambda m: m, tmp_path / "adapter"), str(tmp_path / "adapter")


def test_a_cells_eval_uses_vllm_with_lora_local_path_where_vllm_is_installed(
    tmp_path: Path, vllm_installed: None
) -> None:
    backend, args, adapter = _cell_args(tmp_path)
    assert backend == "vllm" and args == f"pretrained=org/model-0.5B,dtype=bfloat16,lora_local_path={adapter}"


def test_a_cells_eval_uses_hf_with_peft_where_vllm_is_not_installed(tmp_path: Path) -> None:
    backend, args, adapter = _cell_args(tmp_path)
    assert backend == "hf" and args == f"pretrained=org/model-0.5B,dtype=bfloat16,peft={adapter}"


def _dry_run(tmp_path: Path, rates: Path | None = None) -> str:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(STUDY, sort_keys=False))
    extra = ["--rates", str(rates)] if rates else []
    result = CliRunner().invoke(cli, ["study", str(path), "--dry-run", "--out", str(tmp_path / "o"), *extra])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_dry_run_prices_both_backends_and_says_which_it_uses(tmp_path: Path, vllm_installed: None) -> None:
    text = _dry_run(tmp_path)
    # 4 items x 100 tokens, 2 cells, at the assumed 2,500 (hf) and 20,000 (vllm) tokens/s for 0.5B
    assert "generation by backend: hf 0.3 s (assumed rate), vllm 0.0 s (assumed rate); this study uses vllm" in text
    row = next(line for line in text.splitlines() if line.startswith("small-zero-shot"))
    assert row.rstrip().endswith("0.0 s")  # the cell is priced at the backend it will use


def test_a_measured_hf_rate_keeps_vllms_assumed_one(tmp_path: Path) -> None:
    rates = tmp_path / "results.json"
    rates.write_text(json.dumps({"rates": {"source": "GPU check", "devices": {"cuda": {
        "machine": "H200", "generate_tokens_per_s": {"hf": {"0.5": 1000}}}}}}))  # fmt: skip
    text = _dry_run(tmp_path, rates)
    assert "generation by backend: hf 0.8 s, vllm 0.0 s (assumed rate); this study uses hf (auto: vllm is not" in text
    assert "cuda generate (hf); the rest assumed" in text
