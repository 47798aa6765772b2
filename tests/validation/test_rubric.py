"""Which rubric a validation run judges with, made explicit.

A validation run judges with its configuration's own rubric (v4 by default since issue 44): the
judges board stamps a configuration version, and the version hashes the rubric, so only a run of
the board's very configuration validates the board's judge. A pack threshold that turns a judge
score into a binary code is read off some rubrics' anchors; the pack names them and the others
are refused, before any call is paid and again when a run folder is reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.fakes.llm_server import FakeLLMServer
from tests.validation_fixtures import annomi
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.judging import JudgeOptions, load_judge
from tide_bench.judging.rubric import DEFAULT_RUBRIC, load_rubric, rubric_path
from tide_bench.validation import fetch_pack, manifest, report_pack, run_pack
from tide_bench.validation.manifest import PACKS_ENV, load_pack, parse_pack
from tide_bench.validation.run import RUN_RECORD
from tide_bench.validation.stamps import judge_key


@pytest.fixture
def am(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    manifests = tmp_path / "manifests"
    monkeypatch.setenv(PACKS_ENV, str(manifests))
    monkeypatch.setenv("TIDE_BENCH_CACHE", str(tmp_path / "cache"))
    codes = annomi(tmp_path / "am", manifests, turns=12, raters=3)
    fetch_pack("fx-annomi", accept_licence=True, source=tmp_path / "am")
    return codes


def _local(server: FakeLLMServer, rubric: str | None = None):
    return load_judge("local", model="fake-judge", base_url=server.url + "/v1", rubric=rubric)


def test_a_run_judges_with_the_configurations_rubric_and_stamps_that_configuration(
    am: np.ndarray, tmp_path: Path
) -> None:
    server = FakeLLMServer().start()
    try:
        config = _local(server)
        result = run_pack("fx-annomi", config, tmp_path / "run", JudgeOptions())
    finally:
        server.stop()
    assert DEFAULT_RUBRIC == "v4" and result["judge"]["rubric"].endswith("@v4")
    record = json.loads((tmp_path / "run" / RUN_RECORD).read_text())
    assert judge_key(record["judge"]) == judge_key(config.identity())  # the stamp is this configuration's
    with_v2 = load_judge("local", model="fake-judge", base_url="http://127.0.0.1:9/v1", rubric="v2")
    assert judge_key(with_v2.identity()) != judge_key(config.identity())  # a v2 run does not stamp v4 entries


def test_a_rubric_the_threshold_was_not_written_for_is_refused_before_any_call(am: np.ndarray, tmp_path: Path) -> None:
    server = FakeLLMServer().start()
    try:
        with pytest.raises(ConfigError, match=r"written for rubric v2, v3, v4, and this judge uses .*@v1") as err:
            run_pack("fx-annomi", _local(server, "v1"), tmp_path / "run", JudgeOptions())
        assert server.total_calls == 0 and not (tmp_path / "run").exists()
    finally:
        server.stop()
    assert "judge_rubrics" in str(err.value.hint)


def test_report_refuses_a_run_folder_judged_with_another_rubric(am: np.ndarray, tmp_path: Path) -> None:
    server = FakeLLMServer().start()
    try:
        run_pack("fx-annomi", _local(server), tmp_path / "run", JudgeOptions())
    finally:
        server.stop()
    report_pack("fx-annomi", [tmp_path / "run"], resamples=100)  # v4 (the default): accepted
    path = tmp_path / "run" / RUN_RECORD
    record = json.loads(path.read_text())
    record["judge"]["rubric"] = "tide-empathy-rubric@v1"
    path.write_text(json.dumps(record))
    with pytest.raises(DataError, match="written for rubric v2, v3, v4") as err:
        report_pack("fx-annomi", [tmp_path / "run"], resamples=100)
    assert err.value.field == "judge.rubric"


def test_the_annomi_threshold_means_a_reflection_in_every_rubric_it_names() -> None:
    """Score >= 3 counts as 'a reflection': true of the supportive-reflection anchors of each named rubric."""
    pack = load_pack("annomi")
    (dim,) = [d for d in pack.dimensions if d.judge_threshold is not None]
    assert dim.judge_rubrics == ("v2", "v3", "v4") and dim.judge_threshold == 3
    for version in dim.judge_rubrics:
        (factor,) = [f for f in load_rubric(rubric_path(version)).factors if f.key == dim.judge_factor]
        for level, text in factor.anchors.items():
            if level < dim.judge_threshold:
                assert text.startswith("No reflection"), (version, level)
            else:
                assert "reflection" in text.split(" - ")[0].lower() or text.startswith("Meets 4"), (version, level)
    v1 = load_rubric(rubric_path("v1"))
    (sr1,) = [f for f in v1.factors if f.key == dim.judge_factor]
    assert sr1.anchors[2].startswith("Little reflection")  # why v1 is not named: its 2 is not "no reflection"


@pytest.mark.parametrize("bad", [[], "v3", ["3"], [None], ["v3", 4]])
def test_a_malformed_judge_rubrics_list_is_a_clear_error(bad: object) -> None:
    path = Path(manifest.__file__).parent / "packs" / "annomi.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw["dimensions"][0]["judge_rubrics"] = bad
    with pytest.raises(ConfigError, match="judge_rubrics must be") as err:
        parse_pack(raw, path)
    assert err.value.field == "dimensions[0].judge_rubrics"
