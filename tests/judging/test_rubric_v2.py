"""Rubric v2 (issue 19): rendered from one file into the judge prompt and the output schema, with
its rules, caps, worked examples, risk cue and safety categories; the judge's answer in thinking
order; a random reply tag per call; v1 kept byte for byte; judgments that record the category."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.data import load_dataset
from tide_bench.generation.run_dir import load_run
from tide_bench.judging import judge_run, load_judge, load_rubric
from tide_bench.judging.judgment import read_judgments
from tide_bench.judging.parse import SchemaViolation, parse_rating
from tide_bench.judging.prompt import rating_schema, system_text, user_text

KEY = "sk-ant-test-RUBRIC-0123456789"
FAST = {"timeout_s": 2.0, "backoff_base_s": 0.01, "backoff_cap_s": 0.02, "concurrency": 4}
ITEMS = load_dataset("sample").items_for("test")
TAG = re.compile(r"<(candidate_reply_[0-9a-f]{12})>\n")
# The model id v1 and v2 judgments were made with (an alias; the shipped configs now pin a dated snapshot).
# With it, v1 and v2 configurations keep the versions their judgments and boards recorded.
LEGACY_MODEL = "claude-sonnet-4-5"


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def _flat(text: str) -> str:
    return " ".join(text.split())


def rubric_path(version: str) -> Path:
    from tide_bench.judging.rubric import rubric_path as path

    return path(version)


def _v2():
    return load_rubric(rubric_path("v2"))


# ------------------------------------------------------------------ the prompt renders v2 from the one file


def test_the_v2_judge_renders_every_part_of_rubric_v2() -> None:
    config = load_judge("claude-sonnet", rubric="v2", model=LEGACY_MODEL)
    assert config.rubric.version == 2 and config.identity()["rubric"] == "tide-empathy-rubric@v2"
    system = _flat(system_text(config))
    raw = yaml.safe_load(rubric_path("v2").read_text())
    texts = [
        *raw["rules"],
        raw["examples_context"],
        raw["risk_cue"]["question"],
        raw["safety"]["question"],
        raw["safety"]["note"],
    ]
    for f in raw["factors"]:
        texts += [f["question"], *f["anchors"].values(), *f["caps"], *f["examples"].values()]
    texts += [f"{code}: {text}" for code, text in {**raw["risk_cue"]["kinds"], **raw["safety"]["categories"]}.items()]
    missing = [t for t in texts if _flat(t) not in system]
    assert not missing, missing
    assert "{rubric}" not in system and "Brevity is not a fault" in system
    assert "Ordinary psychoeducation is not a flag" in system  # plain-words reactions are not a label


@pytest.mark.parametrize(
    ("factor", "behaviour", "ceiling"),
    [
        ("supportive_reflection", "Unrequested directive advice", 3),
        ("emotion_recognition", "A feeling stated as fact that the message does not support", 2),
        ("distress_normalization", "Validating a harmful behaviour or plan", 2),
    ],
)
def test_caps_are_stated_in_the_rendered_prompt(factor: str, behaviour: str, ceiling: int) -> None:
    system = system_text(load_judge("claude-sonnet", rubric="v2", model=LEGACY_MODEL))
    section = system.split(f"(`{factor}`)", 1)[1].split("\n## ", 1)[0]  # the factor's own block
    caps = [line for line in section.splitlines() if line.strip().startswith("Cap:")]
    assert any(behaviour in cap and f"at {ceiling}" in cap for cap in caps), caps
    assert "A cap is a ceiling" in system  # and how to apply it


def test_emotion_recognition_no_longer_contradicts_itself() -> None:
    er = next(f for f in _v2().factors if f.key == "emotion_recognition")
    assert "attribut" not in er.anchors[1].lower()  # an unsupported attribution is a cap at 2, not level 1
    assert "tentatively" in er.anchors[5] and "without presenting it as fact" in er.anchors[5]
    assert any("stated as fact" in c and "at 2" in c for c in er.caps)
    v1 = load_rubric(rubric_path("v1")).factors[0]
    assert "did not express" in v1.anchors[1] and "unspoken" in v1.anchors[5]  # v1 kept, contradiction and all


def test_every_level_has_a_single_criterion_and_a_worked_example() -> None:
    for f in _v2().factors:
        assert sorted(f.examples) == [1, 2, 3, 4, 5], f.key
        assert f.anchors[5].startswith("Meets 4")  # level 5 adds one element to level 4
        assert not re.search(r"\band\b.*\band\b.*\band\b", f.anchors[4]), f"AND-list at level 4 of {f.key}"
    assert _v2().examples_context and "Client:" in _v2().examples_context


def test_rubric_files_are_checked(tmp_path: Path) -> None:
    bad = (
        rubric_path("v2")
        .read_text()
        .replace("  - Brevity is not a fault. A short reply", "  - Brevity is not a fault: a short reply")
    )
    path = tmp_path / "rubric.yaml"
    path.write_text(bad)
    with pytest.raises(ConfigError, match="rules"):
        load_rubric(path)
    path.write_text(rubric_path("v2").read_text().replace("    none: no risk cue in the client's messages.\n", ""))
    with pytest.raises(ConfigError, match=r"risk_cue\.kinds"):
        load_rubric(path)


# ------------------------------------------------------------------ the output schema, in thinking order


@pytest.mark.parametrize("judge", ["claude-sonnet", "openai-gpt"])
def test_schema_asks_for_risk_cue_evidence_and_safety_first_and_each_rationale_before_its_score(judge: str) -> None:
    schema = rating_schema(load_judge(judge, rubric="v2"))
    props = schema["properties"]
    assert list(props) == [
        "risk_cue",
        "evidence",
        "safety",
        "emotion_recognition",
        "distress_normalization",
        "supportive_reflection",
    ]
    assert list(props["safety"]["properties"]) == ["category", "reason", "flagged"]
    assert props["safety"]["properties"]["category"]["enum"] == [*_v2().safety_categories, "none"]
    assert (
        props["risk_cue"]["properties"]["kind"]["enum"][0] == "none"
        and "current_danger" in props["risk_cue"]["properties"]["kind"]["enum"]
    )
    for factor in _v2().factor_keys:
        assert list(props[factor]["properties"]) == ["rationale", "score"]

    def strict(node: dict) -> None:  # OpenAI strict mode: every object closed and fully required
        if node.get("type") == "object":
            assert node["required"] == list(node["properties"]) and node["additionalProperties"] is False
            for child in node["properties"].values():
                strict(child)

    strict(schema)
    assert json.dumps(schema).index('"risk_cue"') < json.dumps(schema).index(
        '"emotion_recognition"'
    )  # sent in this order


def test_a_self_contradicting_answer_is_a_schema_violation() -> None:
    good = {
        "risk_cue": {"present": True, "kind": "suicide_self_harm"},
        "evidence": [" quoted "],
        "safety": {"category": "risk_mishandled", "reason": "ignores it", "flagged": True},
    }
    good |= {f: {"rationale": "r", "score": 2} for f in _v2().factor_keys}
    rating = parse_rating(good, _v2())
    assert (rating.safety_category, rating.risk_cue_kind, rating.evidence) == (
        "risk_mishandled",
        "suicide_self_harm",
        ("quoted",),
    )
    for bad in (
        {"safety": {"category": "none", "reason": "x", "flagged": True}},
        {"safety": {"category": "risk_mishandled", "reason": "", "flagged": False}},
        {"safety": {"category": "made_up", "reason": "x", "flagged": True}},
        {"risk_cue": {"present": False, "kind": "current_danger"}},
        {"risk_cue": {"present": True, "kind": "none"}},
        {"evidence": "one quote"},
    ):
        with pytest.raises(SchemaViolation):
            parse_rating(good | bad, _v2())


# ---------------------------------------------------- v1 stays reproducible; the version follows the rubric


def test_v1_is_reproduced_byte_for_byte_and_versions_follow_the_rubric(tmp_path: Path) -> None:
    v1 = load_judge("claude-sonnet", rubric="v1", model=LEGACY_MODEL)
    # The v1 configuration version the default judge had before v2 existed: cached v1 judgments and
    # boards pinned to it stay valid.
    assert v1.version == "682f60ca63d3a27f"
    assert v1.decoding == {"temperature": 0.0, "max_tokens": 1024} and v1.rubric.content_hash().startswith("d79909a7")
    assert list(rating_schema(v1)["properties"]["emotion_recognition"]["properties"]) == ["score", "rationale"]
    assert "<candidate_reply>" in user_text(v1, load_run(make_run(tmp_path / "r")).generations[0])
    v2 = load_judge("claude-sonnet", rubric="v2", model=LEGACY_MODEL)
    assert v2.version == "bf06e4d93e439473" and v2.rubric.content_hash().startswith("fd0f2309")  # as before v3
    assert load_judge("openai-gpt", rubric="v2", model="gpt-4.1").version == "2f78e0633187db7c"
    assert load_judge("openai-gpt", rubric="v1", model="gpt-4.1").version == "8a3fa699f20bf0b0"
    assert v2.versioned_content()["output_schema_version"] == 2 and v2.versioned_content()["prompt_rendering"] == 3
    with pytest.raises(ConfigError, match="unknown rubric"):
        load_judge("claude-sonnet", rubric="v5")


def test_editing_the_rubric_changes_the_judge_version(tmp_path: Path) -> None:
    judges = Path(rubric_path("v2")).parent
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(rubric_path("v2").read_text().replace("caps this factor at 3", "caps this factor at 4"))
    config = tmp_path / "judge.yaml"
    config.write_text(
        (judges / "claude-sonnet" / "config.yaml")
        .read_text()
        .replace("../rubric_v3.yaml", str(rubric))
        .replace("../prompt_v3.yaml", "../prompt_v2.yaml")
        .replace("../", f"{judges}/")
    )
    assert load_judge(str(config)).version != load_judge("claude-sonnet", rubric="v2").version


# ------------------------------------------------------------------ random reply tags, per call


def test_every_call_wraps_the_reply_in_a_fresh_random_tag(tmp_path: Path, server: FakeLLMServer) -> None:
    config = load_judge("claude-sonnet", rubric="v2", base_url=server.url, overrides=FAST)
    gen = load_run(make_run(tmp_path / "one", "Plain reply.", items=ITEMS[:1])).generations[0]
    first, second = user_text(config, gen), user_text(config, gen)
    tags = [TAG.search(t).group(1) for t in (first, second)]
    assert tags[0] != tags[1] and first.count(tags[0]) == 4  # named in the sentence, opened, closed
    assert "<candidate_reply>" not in first
    run = make_run(tmp_path / "run", lambda i: f"[[500:1]] reply to {i.item_id}", items=ITEMS[:3])
    judge_run(run, tmp_path / "judge", config)
    assert len(server.reply_tags) == 6 and len(set(server.reply_tags)) == 6  # a retried call gets a new tag too


# ------------------------------------------------------------------ judgments and summaries record the category


def test_judgments_record_risk_cue_evidence_and_category_and_the_summary_counts_them(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    categories = list(_v2().safety_categories)

    def reply(item) -> str:
        return {
            0: "[[FLAG:3]] [[RISK]] Go back alone and replay it.",
            1: "[[RISK:3]] Stay with me; feet on the floor.",
        }.get(ITEMS.index(item), f"A kind reply to {item.item_id}.")

    run = make_run(tmp_path / "run", reply)
    result = judge_run(
        run, tmp_path / "judge", load_judge("claude-sonnet", rubric="v2", base_url=server.url, overrides=FAST)
    )
    records = {r["item_id"]: r for r in result.records}
    flagged = records[ITEMS[0].item_id]
    assert flagged["safety"] == {"flagged": True, "reason": "fake safety reason", "category": categories[3]}
    assert flagged["risk_cue"] == {"present": True, "kind": "suicide_self_harm"} and flagged["evidence"]
    assert records[ITEMS[1].item_id]["risk_cue"]["kind"] == list(_v2().risk_cue_kinds)[3]
    assert (
        records[ITEMS[2].item_id]["safety"]["category"] == "none"
        and records[ITEMS[2].item_id]["risk_cue"]["present"] is False
    )
    s = result.summary
    assert s["safety_categories"] == {categories[3]: 1} and s["n_safety_flagged"] == 1
    assert s["risk_cue"]["n_scored_with_risk_cue"] == 2 and s["risk_cue"]["risk_handled_rate"]["mean"] == 0.5
    adjusted, raw = s["safety_adjusted_empathy"]["mean"], s["empathy"]["mean"]
    first = sum(flagged["scores"].values()) / 3
    assert adjusted == pytest.approx(raw - (first - 1) / len(ITEMS))  # the flagged reply counts at the minimum
    judgments = read_judgments(tmp_path / "judge" / "judgments.jsonl", _v2())
    assert judgments[0].safety_category == categories[3] and judgments[0].as_record()["risk_cue"] == flagged["risk_cue"]


def test_a_contradicting_judge_answer_is_asked_again_then_unscored(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run", "[[CONTRADICT]] reply", items=ITEMS[:1])
    result = judge_run(
        run, tmp_path / "judge", load_judge("claude-sonnet", rubric="v2", base_url=server.url, overrides=FAST)
    )
    assert result.records[0]["unscored_kind"] == "schema_violation" and server.calls_for("[[CONTRADICT]] reply") == 3
    assert result.records[0]["risk_cue"] is None and result.records[0]["evidence"] is None


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda r: r["safety"].update(category="made_up"), "safety.category"),
        (lambda r: r["safety"].update(category="none", flagged=True, reason="x"), "safety.category"),
        (lambda r: r["risk_cue"].update(present=True), "risk_cue.kind"),
        (lambda r: r.update(evidence=[3]), "evidence[0]"),
        (lambda r: r.pop("risk_cue"), "evidence"),
    ],
)
def test_the_judgment_reader_checks_the_v2_fields(tmp_path: Path, server: FakeLLMServer, edit, field: str) -> None:
    run = make_run(tmp_path / "run", "A reply.", items=ITEMS[:1])
    judge_run(run, tmp_path / "judge", load_judge("claude-sonnet", rubric="v2", base_url=server.url, overrides=FAST))
    path = tmp_path / "judge" / "judgments.jsonl"
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(DataError) as info:
        read_judgments(path, _v2())
    assert info.value.field == field and info.value.line == 1


def test_judge_cli_rubric_v1_writes_v1_judgments(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run", items=ITEMS[:2])
    result = CliRunner().invoke(
        cli, ["judge", str(run), "--out", str(tmp_path / "j1"), "--base-url", server.url, "--rubric", "v1"]
    )
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "j1" / "judgments.jsonl").read_text().splitlines()[0])
    assert record["judge"]["rubric"] == "tide-empathy-rubric@v1" and set(record["safety"]) == {"flagged", "reason"}
    assert "risk_cue" not in record and "evidence" not in record
    assert not server.reply_tags  # v1: the fixed <candidate_reply> tag, as before
    bad = CliRunner().invoke(cli, ["judge", str(run), "--out", str(tmp_path / "j3"), "--rubric", "v5"])
    assert bad.exit_code == 2 and "v5" in bad.output
