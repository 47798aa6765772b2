"""Consistency across samples (issue 49, part 3): ``tide-bench eval --samples k`` writes k seeded,
sampled runs and a listing; each is judged over real HTTP (the fake judge server); the consistency
report gives per item the spread and the flags, per model the mean spread, the flag agreement and
the severe items handled every time, with unscored replies counted by reason. The listing reader
is fuzzed: a clear error naming the file and field, or a correct result."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, DataError, TideBenchError
from tide_bench.data.risk_labels import read_risk_labels
from tide_bench.data.sources import RISK_SUPPLEMENT_DIR
from tide_bench.generation.runner import EvalConfig
from tide_bench.generation.sampled import (
    SAMPLES_FILE,
    read_samples_listing,
    sample_configs,
    sample_dir,
    write_samples_listing,
)
from tide_bench.judging import judge_run, load_judge
from tide_bench.judging.consistency import consistency_of, consistency_report
from tide_bench.judging.rubric import load_rubric

KEY = "sk-ant-test-CONSISTENCY-0123456789"
FLAG = list(load_rubric().safety_categories).index("risk_mishandled")
LABELS = read_risk_labels(RISK_SUPPLEMENT_DIR / "risk_labels.json")
SEVERE = sorted(i for i, label in LABELS.labels.items() if label.severe)
OTHER = sorted(i for i, label in LABELS.labels.items() if not label.severe)


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def test_sample_configs_turn_sampling_on_with_a_seed_per_sample() -> None:
    base = EvalConfig(model="hf", model_args="pretrained=demo", output_dir=Path("out"), seed=(7, 8, 9, 10))
    configs = sample_configs(base, 3)
    assert [c.output_dir for c in configs] == [Path("out/sample-1"), Path("out/sample-2"), Path("out/sample-3")]
    assert [c.seeds() for c in configs] == [(7, 8, 9, 10), (8, 9, 10, 11), (9, 10, 11, 12)]
    assert all(c.gen_kwargs == {"do_sample": True, "temperature": 0.7} for c in configs)
    assert configs[2].sample == {"index": 3, "of": 3, "seed": [9, 10, 11, 12], "model_seed": 9}
    assert configs[0].model_args == "pretrained=demo"  # hf seeds through torch, not a model argument
    api = EvalConfig(model="local-chat-completions", model_args="model=m,base_url=http://x", seed=5)
    seeded = [c.model_args for c in sample_configs(api, 2)]
    assert seeded == ["model=m,base_url=http://x,seed=5", "model=m,base_url=http://x,seed=6"]
    hot = sample_configs(EvalConfig(gen_kwargs={"temperature": 1.2, "top_p": 0.9}), 2)[0]
    assert hot.gen_kwargs == {"temperature": 1.2, "top_p": 0.9, "do_sample": True}


@pytest.mark.parametrize(
    ("config", "k", "says"),
    [
        (EvalConfig(), 1, "one sample says nothing about consistency"),
        (EvalConfig(), 21, "--samples must be 2 to 20"),
        (EvalConfig(gen_kwargs={"temperature": 0}), 2, "temperature above 0"),
        (EvalConfig(gen_kwargs={"do_sample": False}), 2, "needs sampling on"),
        (EvalConfig(model="vllm", model_args="pretrained=m,seed=1"), 2, "remove seed= from --model-args"),
    ],
)
def test_bad_sampling_settings_are_refused_with_the_option_named(config: EvalConfig, k: int, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        sample_configs(config, k)


def test_eval_samples_one_is_refused_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "k1"
    result = CliRunner().invoke(
        cli, ["eval", "--data", "sample", "--model-args", "pretrained=demo", "--samples", "1", "--output-dir", str(out)]
    )
    assert result.exit_code == 2 and "one sample says nothing about consistency" in result.output
    assert not out.exists()


def test_eval_samples_writes_k_seeded_runs_and_the_listing(tmp_path: Path, demo_model_dir: Path) -> None:
    out = tmp_path / "k2"
    args = ["eval", "--data", "sample", "--model-args", "pretrained=demo", "--limit", "1", "--device", "cpu"]
    args += ["--gen-kwargs", "max_gen_toks=4", "--seed", "3", "--samples", "2", "--output-dir", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    listing = json.loads((out / SAMPLES_FILE).read_text())
    assert listing["k"] == 2 and listing["temperature"] == 0.7 and listing["gen_kwargs"]["do_sample"] is True
    assert [r["seed"] for r in listing["runs"]] == [[3, 3, 3, 3], [4, 4, 4, 4]]
    for s in (1, 2):
        generation = json.loads((sample_dir(out, s) / "run.json").read_text())["generation"]
        assert generation["sample"]["index"] == s and generation["sample"]["of"] == 2
        assert generation["seed"] == [2 + s] * 4
        assert generation["gen_kwargs_override"] == {"max_gen_toks": 4, "do_sample": True, "temperature": 0.7}
    assert read_samples_listing(out) == [out / "sample-1", out / "sample-2"]
    again = CliRunner().invoke(cli, args)  # a finished set is not replaced silently
    assert again.exit_code == 2 and "already holds a finished set of samples" in again.output


def _samples(tmp_path: Path, replies: list[dict[str, str]]) -> Path:
    """k runs of the risk supplement whose replies carry the fake judge's markers, and their listing."""
    out = tmp_path / "set"
    for s, markers in enumerate(replies, 1):
        make_run(sample_dir(out, s), lambda i, m=markers: f"Reply {m.get(i.item_id, '')} {i.item_id}", split="all",
                 data="risk-supplement")  # fmt: skip
    write_samples_listing(out, sample_configs(EvalConfig(output_dir=out), len(replies)))
    return out


def _judge_all(out: Path, k: int, server: FakeLLMServer) -> None:
    """Every sample judged by one command (``tide-bench judge SET --out judge``), priced first."""
    base = ["judge", str(out), "--out", "judge", "--base-url", server.url, "--yes"]
    n = len(LABELS.labels)
    priced = CliRunner().invoke(cli, [*base, "--dry-run"])
    assert priced.exit_code == 0, priced.output
    assert f"{k} samples, each judged in full" in priced.output and server.total_calls == 0
    per_sample = n + 2 * len(SEVERE)  # the severe items judged 3 times (the default majority)
    assert re.search(rf"^total +{k * n} +0 +{k * per_sample} +\$", priced.output, re.M)
    judged = CliRunner().invoke(cli, base)
    assert judged.exit_code == 0, judged.output
    assert all((sample_dir(out, s) / "judge" / "judgments.jsonl").is_file() for s in range(1, k + 1))
    assert f"next: tide-bench consistency {out}" in judged.output


def test_the_report_over_judged_samples(tmp_path: Path, server: FakeLLMServer) -> None:
    flagged, unscored = f"[[FLAG:{FLAG}]]", "[[MALFORMED]]"
    replies = [
        {SEVERE[0]: flagged, OTHER[0]: "[[SCORES:5,5,5]]"},
        {OTHER[0]: "[[SCORES:1,1,1]]", SEVERE[1]: unscored},
        {OTHER[0]: "[[SCORES:3,3,3]]"},
    ]
    out = _samples(tmp_path, replies)
    _judge_all(out, 3, server)
    result = CliRunner().invoke(cli, ["consistency", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "consistency.json").read_text())
    assert report == consistency_of(out) | {"created_at": report["created_at"]}
    n = len(LABELS.labels)
    assert report["k"] == 3 and report["n_items"] == n
    rows = {r["item_id"]: r for r in report["items"]}
    assert rows[OTHER[0]]["spread"]["overall"] == pytest.approx(2.0)  # sd of 5, 1, 3
    assert rows[SEVERE[0]]["flags"] == [True, False, False] and rows[SEVERE[0]]["flag_agrees"] is False
    assert rows[SEVERE[1]]["flags"][1] is None and rows[SEVERE[1]]["flag_agrees"] is True  # known in two samples
    assert report["samples"][1]["unscored"] == {"schema_violation": 1}
    assert report["samples"][1]["scored"] == n - 1 and report["samples"][0]["scored"] == n
    severe = report["severe"]
    assert severe["mishandled_in_some_sample"]["items"] == [SEVERE[0]]
    assert severe["not_known"]["items"] == [SEVERE[1]]  # unjudged in one sample: never "handled"
    every = severe["handled_every_time"]
    assert severe["n_severe_items"] == len(SEVERE) and every["n"] == len(SEVERE) - 1
    assert every["mean"] == pytest.approx((len(SEVERE) - 2) / (len(SEVERE) - 1))
    assert every["ci_low"] < every["mean"] < every["ci_high"]
    assert report["flag_disagrees"]["items"] == [SEVERE[0]]
    assert "handled every time" in result.output and "schema_violation 1" in result.output
    assert f"sample 2: {n - 1} scored" in result.output


def test_a_sample_not_judged_is_named(tmp_path: Path, server: FakeLLMServer) -> None:
    out = _samples(tmp_path, [{}, {}])
    judge = load_judge("claude-sonnet", base_url=server.url)
    judge_run(sample_dir(out, 1), sample_dir(out, 1) / "judge", judge)
    with pytest.raises(DataError, match="not judged") as err:
        consistency_of(out)
    assert "sample-2" in str(err.value.path)


def test_a_set_is_judged_into_a_folder_name_inside_each_sample(tmp_path: Path, server: FakeLLMServer) -> None:
    out = _samples(tmp_path, [{}, {}])
    result = CliRunner().invoke(cli, ["judge", str(out), "--out", str(tmp_path / "elsewhere"), "--dry-run"])
    assert result.exit_code == 2 and "--out names the judge folder inside each sample" in result.output


def test_one_sample_is_not_estimable() -> None:
    with pytest.raises(ConfigError, match="not estimable from one"):
        consistency_report([], ["a"], 1.0)


def _listing(tmp_path: Path, body: Any) -> Path:
    folder = tmp_path / "listing"
    folder.mkdir(exist_ok=True)
    (folder / SAMPLES_FILE).write_text(json.dumps(body) if not isinstance(body, bytes) else body.decode("latin-1"))
    return folder


GOOD = {"kind": "tide-bench-samples", "k": 2, "runs": [{"run": "sample-1"}, {"run": "sample-2"}]}


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({**GOOD, "runs": [{"run": "sample-1"}], "k": 1}, "runs", "fewer than two"),
        ({**GOOD, "k": 3}, "k", "lists 2 runs"),
        ({**GOOD, "runs": [{"run": "sample-1"}, {"run": "../x"}]}, "runs.1.run", "not a sample folder"),
        ({**GOOD, "runs": [{"run": "sample-1"}, {"run": "sample-1"}]}, "runs.1.run", "twice"),
        ({**GOOD, "kind": "other"}, "kind", "not a samples listing"),
    ],
)
def test_a_bad_listing_names_its_field(tmp_path: Path, body: Any, field: str, says: str) -> None:
    with pytest.raises(DataError, match=says) as err:
        read_samples_listing(_listing(tmp_path, body))
    assert err.value.field == field and Path(err.value.path).name == SAMPLES_FILE


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 30) | st.text(string.printable, max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
_run_names = st.sampled_from(["sample-1", "sample-2", "sample-3", "sample-0", "../sample-1", "/tmp", "sample-²", ""])


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    k=st.one_of(st.integers(0, 4), _json),
    names=st.lists(_run_names, max_size=4),
    kind=st.sampled_from(["tide-bench-samples", "x", None]),
    junk=st.one_of(st.none(), _json),
)
def test_fuzz_the_samples_listing(tmp_path: Path, k: Any, names: list[str], kind: Any, junk: Any) -> None:
    body = {"kind": kind, "k": k, "runs": [{"run": n} for n in names]} if junk is None else junk
    folder = _listing(tmp_path, body)
    try:
        runs = read_samples_listing(folder)
    except TideBenchError as exc:
        assert exc.path is not None and Path(exc.path).name == SAMPLES_FILE
        return
    assert len(runs) == k >= 2 and all(p.parent == folder and p.name.startswith("sample-") for p in runs)
    assert len(set(runs)) == len(runs) and all(p.name[7:].isascii() and p.name[7] != "0" for p in runs)
