"""The TIDE loader on the built-in sample and on deliberately broken copies of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.data import load_dataset, validate
from tide_bench.data.snapshot import SnapshotReader


def _conv_file(root: Path, pid: str = "1") -> Path:
    return root / "conversations" / f"{pid}_conversations.json"


def _rewrite(path: Path, mutate) -> None:
    obj = json.loads(path.read_text())
    mutate(obj)
    path.write_text(json.dumps(obj, indent=2))


def test_sample_loads_into_the_documented_schema() -> None:
    ds = load_dataset("sample")
    assert ds.source.is_sample
    assert len(ds.items) == 40
    assert len({i.persona_id for i in ds.items}) == 10
    assert {i.turn for i in ds.items} == {1, 2}
    assert len({i.scenario for i in ds.items}) == 7
    item = next(i for i in ds.items if i.item_id == "1/conversation_1/turn2")
    assert item.persona["trauma_type"] == "workplace violence"
    assert item.client_utterance.startswith("Afterwards I just feel stupid")
    assert item.reference_reply.startswith("I hear how much")
    # Earlier turns (client + reference) become chat history.
    first = next(i for i in ds.items if i.item_id == "1/conversation_1/turn1")
    assert item.history == [
        {"role": "user", "content": first.client_utterance},
        {"role": "assistant", "content": first.reference_reply},
    ]
    assert first.history == []


def test_sample_files_say_they_are_synthetic() -> None:
    ds = load_dataset("sample")
    for path in sorted(ds.source.path.rglob("*.json")):
        assert "SYNTHETIC SAMPLE" in json.loads(path.read_text())["_notice"], path
    assert "not TIDE" in ds.source.label


def test_local_snapshot_is_labelled_with_its_path(sample_copy: Path) -> None:
    ds = load_dataset(str(sample_copy))
    assert ds.source.kind == "local"
    assert ds.source.label == f"local:{sample_copy.resolve()}"
    assert not ds.source.is_sample
    assert ds.content_hash() == load_dataset("sample").content_hash()  # same content, same hash


def test_content_hash_changes_with_content(sample_copy: Path) -> None:
    before = load_dataset(str(sample_copy)).content_hash()
    _rewrite(_conv_file(sample_copy), lambda o: o["conversations"]["conversation_1"]["turns"][0].update(chatbot="Changed."))
    from tide_bench.data.sources import _load_cached

    _load_cached.cache_clear()
    assert load_dataset(str(sample_copy)).content_hash() != before


def test_no_source_chosen_is_an_error_not_the_sample() -> None:
    with pytest.raises(ConfigError, match="no TIDE data source chosen"):
        load_dataset()


def test_source_from_environment_and_metadata(monkeypatch: pytest.MonkeyPatch, sample_copy: Path) -> None:
    monkeypatch.setenv("TIDE_BENCH_DATA", "sample")
    assert load_dataset().source.is_sample
    assert load_dataset(metadata={"tide_data": str(sample_copy)}).source.kind == "local"


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_dataset(str(tmp_path / "nope"))


def test_wrong_layout_names_what_was_found(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("x")
    with pytest.raises(DataError, match=r"no 'conversations/' folder .*data\.csv"):
        load_dataset(str(tmp_path))


def test_invalid_json_names_file_and_line(sample_copy: Path) -> None:
    path = _conv_file(sample_copy, "3")
    lines = path.read_text().splitlines()
    lines[5] = lines[5] + ' oops'
    path.write_text("\n".join(lines))
    with pytest.raises(DataError) as err:
        load_dataset(str(sample_copy))
    assert "conversations/3_conversations.json:6" in str(err.value)
    assert "invalid JSON" in str(err.value)


def test_invalid_utf8_is_reported_with_line(sample_copy: Path) -> None:
    path = _conv_file(sample_copy, "4")
    raw = path.read_bytes().split(b"\n")
    raw[3] = raw[3] + b"\xff\xfe"
    path.write_bytes(b"\n".join(raw))
    with pytest.raises(DataError, match=r"4_conversations\.json:4.*invalid UTF-8"):
        load_dataset(str(sample_copy))


def test_missing_reference_key_names_file_line_field_and_keys(sample_copy: Path) -> None:
    path = _conv_file(sample_copy, "2")
    _rewrite(path, lambda o: o["conversations"]["conversation_2"]["turns"][1].pop("chatbot"))
    with pytest.raises(DataError) as err:
        load_dataset(str(sample_copy))
    text = str(err.value)
    assert "conversations/2_conversations.json:" in text
    assert "conversation_2.turns.turn2" in text
    assert "no reference reply" in text and "found keys ['person']" in text


def test_missing_client_turn(sample_copy: Path) -> None:
    _rewrite(_conv_file(sample_copy), lambda o: o["conversations"]["conversation_1"]["turns"][0].pop("person"))
    with pytest.raises(DataError, match="no client utterance"):
        load_dataset(str(sample_copy))


def test_empty_text_is_an_error(sample_copy: Path) -> None:
    _rewrite(_conv_file(sample_copy), lambda o: o["conversations"]["conversation_2"]["turns"][0].update(person="   "))
    with pytest.raises(DataError, match="empty client utterance"):
        load_dataset(str(sample_copy))


def test_duplicate_conversation_key_is_caught(sample_copy: Path) -> None:
    path = _conv_file(sample_copy, "5")
    text = path.read_text().replace('"conversation_2"', '"conversation_1"')
    path.write_text(text)
    with pytest.raises(DataError, match="duplicate key 'conversation_1'"):
        load_dataset(str(sample_copy))


def test_duplicate_persona_files_are_caught(sample_copy: Path) -> None:
    src = _conv_file(sample_copy, "6")
    (sample_copy / "conversations" / "6_conversations_copy.json").write_text(src.read_text())
    with pytest.raises(DataError, match="duplicate persona id 6"):
        load_dataset(str(sample_copy))


def test_persona_id_disagreeing_with_file_name(sample_copy: Path) -> None:
    _rewrite(_conv_file(sample_copy, "7"), lambda o: o.update(persona_id="70"))
    with pytest.raises(DataError, match="disagrees with the file name"):
        load_dataset(str(sample_copy))


def test_validate_lists_every_problem_and_counts(sample_copy: Path) -> None:
    _rewrite(_conv_file(sample_copy, "2"), lambda o: o["conversations"]["conversation_1"]["turns"][0].update(person=""))
    _rewrite(_conv_file(sample_copy, "3"), lambda o: o["conversations"]["conversation_1"]["turns"][1].pop("chatbot"))
    (sample_copy / "metadata" / "9_metadata.json").unlink()
    report = validate(str(sample_copy))
    assert not report["ok"]
    assert report["n_errors"] == 2
    assert report["n_warnings"] == 1
    assert any("9_conversations.json" in p["text"] and "no metadata" in p["text"] for p in report["problems"])
    assert "expected 500 personas on the full TIDE set, found 10" in report["notes"]


@pytest.mark.parametrize(
    "conversation",
    [
        {"scenario": "avoidance", "person_1": "a", "chatbot_1": "b", "person_2": "c", "chatbot_2": "d"},
        {"category": "avoidance", "messages": [
            {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]},
        [{"client": "a", "response": "b"}, {"client": "c", "response": "d"}],
    ],
    ids=["numbered-keys", "role-messages", "list-of-exchanges"],
)
def test_alternative_layouts_map_to_the_same_items(tmp_path: Path, conversation) -> None:
    (tmp_path / "conversations").mkdir()
    (tmp_path / "metadata").mkdir()
    (tmp_path / "metadata" / "42_metadata.json").write_text('{"age": 30}')
    (tmp_path / "conversations" / "42_conversation.json").write_text(json.dumps({"c1": conversation}))
    reader = SnapshotReader(tmp_path).read()
    assert [p for p in reader.problems if p.severity == "error"] == []
    assert [(i.item_id, i.client_utterance, i.reference_reply) for i in reader.items] == [
        ("42/c1/turn1", "a", "b"),
        ("42/c1/turn2", "c", "d"),
    ]
    assert reader.items[1].history[1] == {"role": "assistant", "content": "b"}
    assert reader.items[0].persona == {"age": 30}


def test_unknown_shape_reports_found_keys(tmp_path: Path) -> None:
    (tmp_path / "conversations").mkdir()
    (tmp_path / "conversations" / "1_c.json").write_text(json.dumps({"c1": {"speaker_a": "x", "speaker_b": "y"}}))
    reader = SnapshotReader(tmp_path).read()
    errors = [str(p) for p in reader.problems if p.severity == "error"]
    assert len(errors) == 1 and "found keys ['speaker_a', 'speaker_b']" in errors[0]


def test_hub_unreachable_explains_gating_and_licence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError) as err:
        load_dataset("hub:yenopoya/TIDE")
    text = str(err.value)
    assert "gated" in text and "CC BY-NC 4.0" in text and "--local-dir" in text
