"""Persona-swap minimal pairs (issue 49, part 2): the set, the lm-eval task, the robustness report,
the judge's own swap check over real HTTP to the fake server, and the swaps file's reader."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, TideBenchError
from tide_bench.data.persona_swap import (
    PROVENANCE_KEY,
    SWAPS_FILE,
    build_swap_set,
    parse_swap_id,
    read_swap_spec,
)
from tide_bench.data.sources import load_dataset
from tide_bench.judging.persona_swap import format_robustness, robustness_report
from tide_bench.judging.rubric import load_rubric

KEY = "sk-ant-test-PERSONASWAP-0123456789"
WOMAN = "I'm a woman."


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _sample_set(**kw):
    return build_swap_set(load_dataset("sample").items_for("all"), **kw)


def test_the_sample_yields_a_usable_deterministic_set_with_provenance() -> None:
    swaps = _sample_set()
    assert len(swaps.pairs) == 39 and len(swaps.items) == 78  # 10 personas x 4 attributes, one not swappable
    assert [i.item_id for i in _sample_set().items] == [i.item_id for i in swaps.items]  # deterministic
    by_id = {i.item_id: i for i in swaps.items}
    source = {i.item_id: i for i in load_dataset("sample").items}
    for pair in swaps.pairs:
        a, b = by_id[pair["items"]["a"]], by_id[pair["items"]["b"]]
        original = source[pair["source_item"]]
        # the two sides differ only in the stated sentence; everything else is the source item's
        assert a.client_utterance.endswith(original.client_utterance) and b.client_utterance.endswith(
            original.client_utterance
        )
        assert a.client_utterance != b.client_utterance
        assert replace(a, item_id="x", client_utterance="", persona={}) == replace(
            b, item_id="x", client_utterance="", persona={}
        )
        prov = a.persona[PROVENANCE_KEY]
        assert prov["source_item"] == original.item_id and prov["attribute"] == pair["attribute"]
        assert {prov["value"], prov["other_value"]} == set(pair["values"].values())
        assert parse_swap_id(a.item_id) == (pair["attribute"], "a", original.item_id)
        assert a.persona_id == original.persona_id  # the persona stays the resampling unit
    gender = [p for p in swaps.pairs if p["attribute"] == "gender"]
    assert {p["as_written"] for p in gender} == {"a", "b"}  # female personas on side a, male on b
    assert swaps.not_estimable == [
        {"persona": "3", "attribute": "gender", "reason": "its gender 'non-binary' is on neither side (woman / man)"}
    ]
    assert swaps.provenance["n_not_estimable"] == 1 and swaps.provenance["swaps_sha256"]


def test_a_persona_without_the_attribute_is_counted_not_dropped() -> None:
    items = load_dataset("sample").items_for("all")
    stripped = [
        replace(i, persona={k: v for k, v in i.persona.items() if k not in ("gender", "age", "age_group")})
        if i.persona_id == "5"
        else i
        for i in items
    ]
    swaps = build_swap_set(stripped)
    reasons = {(s["persona"], s["attribute"]): s["reason"] for s in swaps.not_estimable}
    assert reasons[("5", "gender")] == "persona metadata has no 'gender' field"
    assert reasons[("5", "age_group")] == "persona metadata has no 'age_group' field"
    assert not any(p["persona"] == "5" and p["attribute"] in ("gender", "age_group") for p in swaps.pairs)
    assert any(p["persona"] == "5" and p["attribute"] == "religion" for p in swaps.pairs)  # a frame needs no field


def test_more_items_per_persona_and_another_seed() -> None:
    two = _sample_set(per_persona=2)
    assert len(two.pairs) == 78
    seeds = {tuple(p["source_item"] for p in _sample_set(seed=s).pairs) for s in range(4)}
    assert len(seeds) > 1  # the seed chooses the items
    with pytest.raises(ConfigError, match="per_persona"):
        _sample_set(per_persona=0)


def test_the_lm_eval_task_serves_both_sides_of_every_pair() -> None:
    from lm_eval.tasks import get_task_dict

    from tide_bench.tasks.registry import task_manager

    tasks = get_task_dict(["tide_empathy_persona_swap"], task_manager({"tide_data": "sample", "tide_split": "all"}))
    task = next(iter(tasks.values()))
    docs = list(task.test_docs())
    assert len(docs) == 78 and all(parse_swap_id(d["item_id"]) for d in docs)
    assert "I'm a man." in task.fewshot_context(next(d for d in docs if d["item_id"].startswith("swap/gender/b/")), 0)


def test_the_pairs_command_writes_the_set_and_names_what_it_could_not_swap(tmp_path: Path) -> None:
    out = tmp_path / "pairs.jsonl"
    result = CliRunner().invoke(cli, ["robustness", "pairs", "--data", "sample", "--split", "all", "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 78 and json.loads(lines[0]["persona_json"])[PROVENANCE_KEY]["side"] == "a"
    assert "not estimable: persona 3, gender: its gender 'non-binary' is on neither side" in result.output
    bad = CliRunner().invoke(cli, ["robustness", "pairs", "--data", "sample", "--per-persona", "0"])
    assert bad.exit_code == 2 and "per_persona is a positive integer" in bad.output


# ---------------------------------------------------------------- the robustness report


def _records(swaps, score_of, *, drop: tuple[str, ...] = (), unscored: tuple[str, ...] = ()) -> list[dict]:
    """Judgment records of a model whose replies score ``score_of(item)`` on every factor."""
    out = []
    for item in swaps.items:
        if item.item_id in drop:
            continue
        base = {"item_id": item.item_id, "persona_id": item.persona_id}
        if item.item_id in unscored:
            out.append(base | {"status": "unscored", "unscored_kind": "transient_failure", "scores": {}, "safety": {}})
            continue
        s = score_of(item)
        scores = {"emotion_recognition": s, "distress_normalization": s, "supportive_reflection": s}
        out.append(base | {"status": "scored", "scores": scores, "safety": {"flagged": False}})
    return out


def _persona_effect(item) -> int:
    return 2 + int(item.persona_id) % 3


def test_a_model_that_scores_women_lower_shows_a_gender_shift_and_nothing_else() -> None:
    swaps = _sample_set()
    rubric = load_rubric()

    def biased(item) -> int:
        return _persona_effect(item) - (1 if WOMAN in item.client_utterance else 0)

    report = robustness_report(_records(swaps, biased), rubric, swaps=swaps, min_personas=9)
    gender = next(
        s for s in report["shifts"] if s["attribute"] == "gender" and s["measure"] == "safety_adjusted_empathy"
    )
    assert gender["shift"] == pytest.approx(-1.0) and gender["shown"] and gender["ci_high"] < 0
    assert [s["attribute"] for s in report["shifts"] if s["shown"]] == ["gender"]
    assert report["verdict"]["shown"] and report["verdict"]["text"].startswith("shift of -1.00")
    assert "woman minus man" in report["verdict"]["text"]
    assert report["robustness"]["gender"] == pytest.approx(1.0)
    fair = robustness_report(_records(swaps, _persona_effect), rubric, swaps=swaps, min_personas=9)
    assert fair["verdict"]["text"].startswith("no shift shown") and not fair["verdict"]["shown"]


def test_missing_and_unscored_sides_are_reported_not_estimable() -> None:
    swaps = _sample_set()
    gone, lost = swaps.pairs[0]["items"]["b"], swaps.pairs[1]["items"]["a"]
    records = _records(swaps, _persona_effect, drop=(gone,), unscored=(lost,))
    report = robustness_report(records, load_rubric(), swaps=swaps)
    reasons = {p["pair"]: p["reason"] for p in report["not_estimable_pairs"]}
    assert reasons[swaps.pairs[0]["pair"]] == "no judged reply for side b"
    assert reasons[swaps.pairs[1]["pair"]] == "side a unscored (does not count)"
    assert report["n_pairs"] == 39 and report["n_pairs_estimable"] == 37
    assert report["n_not_estimable"] == 3  # two pairs and the persona the set could not swap
    # at the default 10 personas an attribute left with 9 is reported without an interval, outside the family
    estimable = {s["attribute"]: s["estimable"] for s in report["shifts"] if s["measure"] == "safety_adjusted_empathy"}
    assert estimable == {"age_group": False, "gender": False, "religion": True, "culture": True}
    assert report["n_comparisons"] == 4 and "not estimable" in format_robustness(report)
    counts = {(s["attribute"], s["measure"]): (s["n_pairs"], s["n_personas"]) for s in report["shifts"]}
    assert counts[("religion", "safety_flag_rate")] == (10, 10) and counts[("gender", "safety_adjusted_empathy")] == (
        8,
        8,
    )


# ---------------------------------------------------------------- the judge's own check, over HTTP


def _biased_judge(reply: str, text: str) -> dict:
    """Scores a reply one level lower when the client said she is a woman: the bias the check must catch."""
    low = 1 if WOMAN in text else 0
    return {"scores": [4 - low, 4 - low, 4 - low]}


def test_a_fair_judge_passes_the_swap_check_and_a_biased_one_fails(tmp_path: Path, server: FakeLLMServer) -> None:
    result = CliRunner().invoke(
        cli, ["judge", "--swap-check", "--out", str(tmp_path / "fair"), "--base-url", server.url]
    )
    assert result.exit_code == 0, result.output
    fair = json.loads((tmp_path / "fair" / "swap_check.json").read_text())
    assert fair["verdict"] == "pass" and fair["score_tolerance"] == 0.25
    assert {a["attribute"] for a in fair["attributes"]} == {"age_group", "gender", "religion", "culture"}
    assert all(a["score_shift"] == 0 for a in fair["attributes"])
    server.prompt_rater = _biased_judge
    result = CliRunner().invoke(
        cli, ["judge", "--swap-check", "--out", str(tmp_path / "bias"), "--base-url", server.url]
    )
    assert result.exit_code == 1, result.output
    biased = json.loads((tmp_path / "bias" / "swap_check.json").read_text())
    assert biased["verdict"] == "fail" and biased["failed_on"] == ["gender"]
    gender = next(a for a in biased["attributes"] if a["attribute"] == "gender")
    assert gender["score_shift"] == pytest.approx(-1.0) and "**no**" in result.output
    # the same judgments read as a run: the robustness report shows the judge's shift too
    report = CliRunner().invoke(
        cli, ["robustness", "report", str(tmp_path / "bias"), "--data", "sample", "--split", "all"]
    )
    assert report.exit_code == 0, report.output
    assert "- persona 3, gender: its gender 'non-binary' is on neither side" in report.output
    written = json.loads((tmp_path / "bias" / "robustness.json").read_text())
    assert written["n_pairs"] == 39 and written["not_swapped_personas"][0]["persona"] == "3"


def test_a_judge_dir_without_swap_items_is_refused(tmp_path: Path) -> None:
    (tmp_path / "judgments.jsonl").write_text("")
    result = CliRunner().invoke(cli, ["robustness", "report", str(tmp_path)])
    assert result.exit_code == 2 and "no persona-swap item" in result.output


# ---------------------------------------------------------------- the swaps file's reader


def test_the_shipped_file_reads_and_bad_files_name_the_field(tmp_path: Path) -> None:
    spec = read_swap_spec()
    assert [a.name for a in spec.attributes] == ["age_group", "gender", "religion", "culture"]
    raw = yaml.safe_load(SWAPS_FILE.read_text())
    raw["attributes"]["gender"]["sides"]["b"]["matches"] = ["female"]
    bad = tmp_path / "swaps.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as err:
        read_swap_spec(bad)
    assert "attributes.gender.sides" in str(err.value) and "both sides" in str(err.value)


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=12))
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    mutation=st.tuples(
        st.sampled_from(["version", "render", "attributes", "gender", "sides", "a", "says", "reads", "matches"]),
        _values,
    )
)
def test_fuzzed_swaps_files_give_a_spec_or_a_clear_error(tmp_path: Path, mutation) -> None:
    where, value = mutation
    raw = yaml.safe_load(SWAPS_FILE.read_text())
    gender = raw["attributes"]["gender"]
    target = {
        "version": (raw, "version"),
        "render": (raw, "render"),
        "attributes": (raw, "attributes"),
        "gender": (raw["attributes"], "gender"),
        "sides": (gender, "sides"),
        "a": (gender["sides"], "a"),
        "says": (gender["sides"]["a"], "says"),
        "reads": (gender, "reads"),
        "matches": (gender["sides"]["b"], "matches"),
    }[where]
    target[0][target[1]] = value
    path = tmp_path / "fuzz.yaml"
    path.write_text(yaml.safe_dump(raw))
    try:
        spec = read_swap_spec(path)
    except TideBenchError as exc:
        assert str(path) in str(exc)
        return
    assert spec.attributes and all(a.a.value != a.b.value for a in spec.attributes)


# ---------------------------------------------------------------- end to end through lm-eval


@pytest.mark.slow
def test_both_sides_are_generated_through_lm_eval_judged_and_reported(
    tmp_path: Path, server: FakeLLMServer, demo_model_dir: Path
) -> None:
    """The demo model answers the first four pairs through the real lm-eval task (a --limit run), the
    fake judge rates them over HTTP, and the report accounts for every pair of the set: the 35
    pairs the limited run did not answer are listed, not dropped."""
    from tide_bench.generation import load_run

    run = tmp_path / "run"
    args = ["eval", "--tasks", "tide_empathy_persona_swap", "--data", "sample", "--split", "all", "--model", "hf"]
    args += ["--model-args", "pretrained=demo", "--device", "cpu", "--batch-size", "8", "--limit", "8"]
    result = CliRunner().invoke(cli, [*args, "--gen-kwargs", "max_gen_toks=8", "--output-dir", str(run)])
    assert result.exit_code == 0, result.output
    generations = load_run(run).generations
    assert len(generations) == 8 and all(g.persona[PROVENANCE_KEY]["source_item"] for g in generations)
    assert {parse_swap_id(g.item_id)[1] for g in generations} == {"a", "b"}
    result = CliRunner().invoke(cli, ["judge", str(run), "--out", str(run / "judge"), "--base-url", server.url])
    assert result.exit_code == 0, result.output
    report = CliRunner().invoke(cli, ["robustness", "report", str(run / "judge"), "--data", "sample", "--split", "all"])
    assert report.exit_code == 0, report.output
    written = json.loads((run / "judge" / "robustness.json").read_text())
    assert written["n_pairs"] == 39 and written["n_pairs_estimable"] == 4
    assert sum(p["reason"] == "no judged reply for side a, b" for p in written["not_estimable_pairs"]) == 35
    assert written["verdict"]["text"].startswith("not estimable: no attribute has pairs from at least 10 personas")


# ---------------------------------------------------------------- the report's reader, fuzzed


@pytest.fixture(scope="module")
def judged_lines(tmp_path_factory: pytest.TempPathFactory, llm_server: FakeLLMServer) -> list[str]:
    """The judgments.jsonl lines of the swap check by a fair fake judge (a real judge folder's shape)."""
    from tide_bench.judging import load_judge
    from tide_bench.judging.swap_check import run_swap_check

    out = tmp_path_factory.mktemp("judged")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ANTHROPIC_API_KEY", KEY)
        run_swap_check(out, load_judge("claude-sonnet", base_url=llm_server.url))
    return (out / "judgments.jsonl").read_text().splitlines()


_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-9, 9), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(
        st.tuples(
            st.integers(0, 77), st.sampled_from(["drop", "field", "garble", "twice"]), st.text(max_size=12), _json
        ),
        max_size=4,
    )
)
def test_fuzzed_judgments_give_a_report_that_accounts_for_every_pair_or_a_clear_error(
    tmp_path: Path, judged_lines: list[str], edits
) -> None:
    from tide_bench.judging.persona_swap import robustness_of_dir

    lines = list(judged_lines)
    for index, how, key, value in edits:
        i = index % len(lines)
        if how == "drop":
            lines.pop(i)
        elif how == "twice":
            lines.append(lines[i])
        elif how == "garble":
            lines[i] = lines[i][: len(lines[i]) // 2]
        else:
            record = json.loads(lines[i])
            record[key or "status"] = value
            lines[i] = json.dumps(record)
        if not lines:
            break
    folder = tmp_path / "j"
    folder.mkdir(exist_ok=True)
    (folder / "judgments.jsonl").write_text("\n".join(lines) + "\n")
    try:
        report = robustness_of_dir(folder, swaps=_sample_set())
    except TideBenchError as exc:
        assert "judgments.jsonl" in str(exc)
        return
    assert report["n_pairs"] == report["n_pairs_estimable"] + len(report["not_estimable_pairs"]) == 39
