"""No credential reaches a file through any writer of a record (issue 32, N4).

One redaction function (tide_bench.core.secrets.redact_record) serves every writer: run.json
(``eval`` and ``import``), lm-eval's results copied by ``import`` and ``submit``, a submission's
files, a study's stage records. The fuzz puts a secret in every shape the review found (a
string ``--model-args`` with ``token=``/``api_key=``/``password=``, a URL with ``user:password@``,
an HF token in free text, a mapping key named like a credential) into every field of those
records, runs each writer, and reads back every file it wrote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import make_lm_eval_output

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
SECRET = st.text(alphabet=_ALNUM, min_size=16, max_size=28).map(lambda s: "Zq9" + s)
KEYS = st.sampled_from(["token", "hf_token", "api_key", "apikey", "auth_token", "password", "secret", "OPENAI_API_KEY"])


@st.composite
def secret_shapes(draw: Any) -> tuple[str, Any]:
    """(secret, a value carrying it) in one of the shapes credentials reach records in."""
    secret, key = draw(SECRET), draw(KEYS)
    shape = draw(st.sampled_from(["model_args", "url", "hf_token", "mapping", "command", "bearer"]))
    if shape == "model_args":
        value: Any = f"pretrained=org/model,dtype=float32,{key}={secret},trust_remote_code=True"
    elif shape == "url":
        value = f"https://alice:{secret}@gateway.example.org:8443/v1"
    elif shape == "hf_token":
        secret = "hf_" + secret
        value = f"downloaded with {secret} yesterday"
    elif shape == "mapping":
        value = {key: secret, "bos_token": "<s>"}
    elif shape == "command":
        value = ["tide-bench", "eval", "--model-args", f"pretrained=x,{key}={secret}"]
    else:
        value = f"Authorization: Bearer {secret}"
    return secret, value


def _nested_in(record: dict[str, Any], where: tuple[str, ...], value: Any) -> dict[str, Any]:
    node = record
    for key in where[:-1]:
        node = node.setdefault(key, {}) if isinstance(node.get(key), dict | type(None)) else node
    node[where[-1]] = value
    return record


def _files_hold(folder: Path, secret: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and secret in p.read_text(errors="replace")]


@settings(max_examples=200, derandomize=True, deadline=None)
@given(case=secret_shapes())
def test_redact_record_masks_every_shape(case: tuple[str, Any]) -> None:
    from tide_bench.core.secrets import redact_record

    secret, value = case
    assert secret not in json.dumps(redact_record({"field": value, "list": [value], "deep": {"x": [{"y": value}]}}))


_RUN_FIELDS = [("model", "args"), ("model", "parsed_args"), ("command",), ("generation", "base_url"), ("note",),
               ("environment", "packages", "x")]  # fmt: skip


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=secret_shapes(), where=st.sampled_from(_RUN_FIELDS))
def test_run_json_writer(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[str, Any], where: tuple[str, ...]
) -> None:
    from tide_bench.generation.manifest import write_manifest

    secret, value = case
    folder = tmp_path_factory.mktemp("manifest")
    write_manifest(folder / "run.json", _nested_in({"model": {}, "generation": {}}, where, value))
    assert _files_hold(folder, secret) == []


_RESULTS_FIELDS = [("config", "model_args"), ("configs", "tide_empathy", "metadata"), ("model_source",),
                   ("config", "device")]  # fmt: skip


@settings(max_examples=12, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=secret_shapes(), where=st.sampled_from(_RESULTS_FIELDS))
def test_import_writer(tmp_path_factory: pytest.TempPathFactory, case: tuple[str, Any], where: tuple[str, ...]) -> None:
    from tide_bench.core.errors import TideBenchError
    from tide_bench.generation.adopt import import_lm_eval_run

    secret, value = case
    root = tmp_path_factory.mktemp("import")
    out = make_lm_eval_output(root)
    path = next(out.rglob("results_*.json"))
    results = json.loads(path.read_text())
    if where == ("configs", "tide_empathy", "metadata") and not isinstance(value, dict):
        value = {"model_args": value}
    path.write_text(json.dumps(_nested_in(results, where, value)))
    try:
        import_lm_eval_run(out, root / "run", data="sample")
    except TideBenchError:  # a value of another type than the field takes: refused, nothing written
        assert not (root / "run").exists()
        return
    assert _files_hold(root / "run", secret) == []


_TYPED_FIELDS = {str: [("model", "args"), ("note",), ("generation", "base_url")], dict: [("model", "parsed_args")],
                 list: [("command",)]}  # fmt: skip


@settings(max_examples=12, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=secret_shapes(), data=st.data())
def test_submit_writer(tmp_path_factory: pytest.TempPathFactory, case: tuple[str, Any], data: st.DataObject) -> None:
    """A run whose run.json, judge configuration and submission.yaml carry a secret, each in a
    field of its type: submit accepts it and no file it writes holds the secret."""
    import yaml

    from tests.leaderboard_helpers import meta, tide_run, write_judgments
    from tide_bench.judging.rubric import load_rubric
    from tide_bench.leaderboard import BoardConfig, create_submission

    secret, value = case
    where = data.draw(st.sampled_from(_TYPED_FIELDS[type(value)]))
    root = tmp_path_factory.mktemp("submit")
    run = tide_run(root / "run", "That sounds hard.", Path("sample"), model_name="fake-org/fake-model-0.5B")
    rubric = load_rubric()
    write_judgments(run, rubric, lambda k, g: dict.fromkeys(rubric.factor_keys, 3))
    manifest = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps(_nested_in(manifest, where, value)))
    (run / "judge" / "judge_config.json").write_text(json.dumps({"version": "benchbenchbench0", "extra": value}))
    model = {"hub_id": "fake-org/fake-model-0.5B", "revision": "main"}
    (root / "meta.yaml").write_text(yaml.safe_dump(meta("sub", demo=True, model=model, notes=json.dumps(value))))
    board = BoardConfig(demo=True, split="test", spot_check_items=0, conversations_per_persona=None)
    check = create_submission(run, root / "meta.yaml", root / "subs", board=board, spot_checks=False)
    assert check.ok and _files_hold(root / "subs", secret) == []


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=secret_shapes(), where=st.sampled_from(["inputs", "measured", "by"]))
def test_study_stage_record_writer(tmp_path_factory: pytest.TempPathFactory, case: tuple[str, Any], where: str) -> None:
    """A stage record's inputs, measurements and worker name are redacted; its outputs are paths
    the study derives itself (never taken from a record or a setting), so no secret can reach them."""
    from tide_bench.study.plan import Cell, StagePlan, mark_done
    from tide_bench.study.spec import ModelSpec, StudySpec

    secret, value = case
    out = tmp_path_factory.mktemp("study")
    spec = StudySpec(name="s", models=[ModelSpec(id="m", model="org/model")], conditions={"zero-shot": {}})
    inputs = {"judge": {"base_url": value}} if where == "inputs" else {}
    stage = StagePlan(Cell("m-zero-shot", "zero-shot"), "eval", "f" * 16, inputs)
    by = value if where == "by" and isinstance(value, str) else None
    mark_done(out, spec, stage, {"x": value} if where == "measured" else None, by=by)
    assert _files_hold(out, secret) == []
    shutil.rmtree(out)
