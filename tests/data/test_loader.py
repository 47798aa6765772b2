"""The TIDE loader on the built-in sample and on deliberately broken copies of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    # The likely real shape: one exchange per conversation, so every item is turn 1, no history.
    assert {i.turn for i in ds.items} == {1}
    assert all(i.history == [] for i in ds.items)
    assert ds.shape.exchanges == {1: 40}
    item = next(i for i in ds.items if i.item_id == "1/conversation_1/turn1")
    assert item.persona["trauma_type"] == "workplace violence"
    assert item.client_utterance.startswith("Sometimes when a call bell goes off")
    assert item.scenario == "flashbacks"
    # Risk content is part of the sample: the safety flag and crisis rules get exercised.
    assert {"suicidal_thoughts", "self_harm", "current_danger", "dissociation"} <= {i.scenario for i in ds.items}


def test_multi_exchange_fixture_builds_history_from_earlier_turns() -> None:
    from tests.helpers import MULTI_EXCHANGE

    ds = load_dataset(str(MULTI_EXCHANGE))
    assert len(ds.items) == 40 and {i.turn for i in ds.items} == {1, 2}
    assert ds.shape.exchanges == {2: 20}
    item = next(i for i in ds.items if i.item_id == "1/conversation_1/turn2")
    assert item.client_utterance.startswith("Afterwards I just feel stupid")
    first = next(i for i in ds.items if i.item_id == "1/conversation_1/turn1")
    assert item.history == [
        {"role": "user", "content": first.client_utterance},
        {"role": "assistant", "content": first.reference_reply},
    ]
    assert first.history == []


def test_sample_references_use_only_what_the_conversation_says() -> None:
    """Context rule (A): no reference names a trauma the client's message does not mention."""
    ds = load_dataset("sample")
    trauma_words = (
        "assault",
        "deployment",
        "veteran",
        "crash",
        "fire",
        "robbery",
        "gunpoint",
        "flood",
        "abuse",
        "paramedic",
    )
    for item in ds.items:
        for word in trauma_words:
            if word in item.reference_reply.lower():
                assert word in item.client_utterance.lower(), (item.item_id, word)


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
    _rewrite(_conv_file(sample_copy), lambda o: o["conversations"]["conversation_1"].update(chatbot="Changed."))
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
    lines[5] = lines[5] + " oops"
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


def test_missing_reference_key_names_file_line_field_and_keys(multi_exchange_copy: Path) -> None:
    path = _conv_file(multi_exchange_copy, "2")
    _rewrite(path, lambda o: o["conversations"]["conversation_2"]["turns"][1].pop("chatbot"))
    with pytest.raises(DataError) as err:
        load_dataset(str(multi_exchange_copy))
    text = str(err.value)
    assert "conversations/2_conversations.json:" in text
    assert "conversation_2.turns.turn2" in text
    assert "no reference reply" in text and "found keys ['person']" in text


def test_missing_reference_key_in_a_single_exchange(sample_copy: Path) -> None:
    _rewrite(_conv_file(sample_copy, "2"), lambda o: o["conversations"]["conversation_3"].pop("chatbot"))
    with pytest.raises(
        DataError, match=r"2_conversations\.json:\d+, field 'conversation_3\.turn1': no reference reply"
    ):
        load_dataset(str(sample_copy))


def test_missing_client_turn(sample_copy: Path) -> None:
    _rewrite(_conv_file(sample_copy), lambda o: o["conversations"]["conversation_1"].pop("person"))
    with pytest.raises(DataError, match="no client utterance"):
        load_dataset(str(sample_copy))


def test_empty_text_is_an_error(multi_exchange_copy: Path) -> None:
    _rewrite(
        _conv_file(multi_exchange_copy), lambda o: o["conversations"]["conversation_2"]["turns"][0].update(person="   ")
    )
    with pytest.raises(DataError, match="empty client utterance"):
        load_dataset(str(multi_exchange_copy))


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
    _rewrite(_conv_file(sample_copy, "2"), lambda o: o["conversations"]["conversation_1"].update(person=""))
    _rewrite(_conv_file(sample_copy, "3"), lambda o: o["conversations"]["conversation_1"].pop("chatbot"))
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
        {
            "category": "avoidance",
            "messages": [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"},
                {"role": "assistant", "content": "d"},
            ],
        },
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


def _snapshot(root: Path, files: dict[str, object], metadata: dict[str, object] | None = None) -> Path:
    """A snapshot folder with the given conversation files (name -> JSON value or raw str)."""
    (root / "conversations").mkdir(parents=True)
    (root / "metadata").mkdir()
    for name, value in files.items():
        (root / "conversations" / name).write_text(value if isinstance(value, str) else json.dumps(value))
    for name, value in (metadata or {}).items():
        (root / "metadata" / name).write_text(value if isinstance(value, str) else json.dumps(value))
    return root


@pytest.mark.parametrize(
    ("name", "content", "container"),
    [
        (
            "7_conversation.json",
            {"c1": {"person": "a", "chatbot": "b"}, "c2": {"person": "c", "chatbot": "d"}},
            "an object keyed by conversation id",
        ),
        (
            "7_conversations.json",
            {"conversations": {"c1": {"person": "a", "chatbot": "b"}, "c2": {"person": "c", "chatbot": "d"}}},
            'an object keyed by conversation id under "conversations"',
        ),
        (
            "7_conversations.json",
            {
                "conversations": [
                    {"conversation_id": "c1", "person": "a", "chatbot": "b"},
                    {"conversation_id": "c2", "person": "c", "chatbot": "d"},
                ]
            },
            'a list of conversations under "conversations"',
        ),
    ],
    ids=["keyed-singular-name", "keyed-under-conversations", "list-under-conversations"],
)
def test_single_exchange_shapes_load_and_are_reported(tmp_path: Path, name: str, content: dict, container: str) -> None:
    root = _snapshot(tmp_path / "snap", {name: content}, {"7_metadata.json": {"age": 40}})
    reader = SnapshotReader(root).read()
    assert reader.problems == []
    assert [(i.item_id, i.turn, i.history) for i in reader.items] == [("7/c1/turn1", 1, []), ("7/c2/turn1", 1, [])]
    report = validate(str(root))
    assert report["shape"]["exchanges_per_conversation"] == {"1": 2}
    assert report["shape"]["containers"] == {container: 1}
    assert report["shape"]["file_patterns"] == {f"conversations/{name.replace('7', 'N', 1)}": 1}
    assert report["shape"]["summary"] == "one exchange per conversation (2 conversations)"
    from tide_bench.data import format_report

    assert "one exchange per conversation (2 conversations)" in format_report(report)


def test_a_mix_of_one_and_two_exchanges_is_reported_as_a_mix(tmp_path: Path) -> None:
    root = _snapshot(
        tmp_path,
        {
            "1_conversations.json": {
                "c1": {"person": "a", "chatbot": "b"},
                "c2": {"turns": [{"person": "a", "chatbot": "b"}, {"person": "c", "chatbot": "d"}]},
            }
        },
    )
    report = validate(str(root))
    assert report["ok"] and report["counts"]["by_turn"] == {"1": 2, "2": 1}
    assert report["shape"]["summary"] == "mixed: 1 exchange: 1, 2 exchanges: 1 conversations"


def _errors(root: Path) -> list[str]:
    return [str(p) for p in SnapshotReader(root).read().problems if p.severity == "error"]


@pytest.mark.parametrize("scenario", [["flashbacks"], 7, {"name": "x"}, True])
def test_a_non_string_scenario_is_an_error_not_none(tmp_path: Path, scenario: object) -> None:
    root = _snapshot(tmp_path, {"1_conversations.json": {"c1": {"scenario": scenario, "person": "a", "chatbot": "b"}}})
    errors = _errors(root)
    assert len(errors) == 1 and "1_conversations.json:" in errors[0]
    assert "field 'c1.scenario'" in errors[0] and "scenario must be a string" in errors[0]


def test_metadata_persona_id_disagreeing_with_its_file_is_an_error(tmp_path: Path) -> None:
    root = _snapshot(
        tmp_path,
        {"1_conversations.json": {"c1": {"person": "a", "chatbot": "b"}}},
        {"1_metadata.json": '{\n  "persona_id": "2",\n  "age": 3\n}'},
    )
    errors = _errors(root)
    assert errors == [
        "error: metadata/1_metadata.json:2, field 'persona_id': persona_id '2' disagrees with the file name ('1')"
    ]


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_in_any_file_is_an_error_with_its_line(tmp_path: Path, token: str) -> None:
    root = _snapshot(
        tmp_path,
        {"1_conversations.json": {"c1": {"person": "a", "chatbot": "b"}}},
        {"1_metadata.json": '{\n  "age": ' + token + "\n}"},
    )
    errors = _errors(root)
    assert len(errors) == 1 and "metadata/1_metadata.json:2" in errors[0] and "not valid JSON" in errors[0]


@pytest.mark.parametrize(
    ("entry", "what"),
    [
        ({"person": "a", "client": "x", "chatbot": "b"}, "client utterance: both 'person' and 'client'"),
        ({"person": "a", "chatbot": "b", "assistant": "y"}, "reference reply: both 'chatbot' and 'assistant'"),
    ],
)
def test_two_candidate_keys_in_one_turn_are_ambiguous(tmp_path: Path, entry: dict, what: str) -> None:
    root = _snapshot(tmp_path, {"1_conversations.json": {"c1": {"turns": [entry]}}})
    errors = _errors(root)
    assert len(errors) == 1 and f"ambiguous {what}" in errors[0] and "field 'c1.turns.turn1'" in errors[0]


def test_duplicate_explicit_conversation_ids_name_the_file(tmp_path: Path) -> None:
    root = _snapshot(
        tmp_path,
        {
            "1_conversations.json": {
                "conversations": [
                    {"conversation_id": "c1", "person": "a", "chatbot": "b"},
                    {"conversation_id": "c1", "person": "c", "chatbot": "d"},
                ]
            }
        },
    )
    errors = _errors(root)
    assert len(errors) == 1 and "conversations/1_conversations.json" in errors[0]
    assert "duplicate conversation id 'c1'" in errors[0]


def test_a_directory_named_json_and_a_symlink_loop_are_reported_not_raised(tmp_path: Path) -> None:
    root = _snapshot(tmp_path, {"1_conversations.json": {"c1": {"person": "a", "chatbot": "b"}}})
    (root / "conversations" / "99_conversations.json").mkdir()
    loop = root / "conversations" / "98_conversations.json"
    loop.symlink_to(loop)
    errors = _errors(root)
    assert any("99_conversations.json: is a directory" in e for e in errors)
    assert any("98_conversations.json: cannot read the file" in e for e in errors)
    assert len(SnapshotReader(root).read().items) == 1


# ---------------------------------------------------------------- fuzz: snapshot files
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "person",
                    "client",
                    "chatbot",
                    "response",
                    "turns",
                    "messages",
                    "role",
                    "content",
                    "scenario",
                    "conversations",
                    "persona_id",
                    "id",
                    "c1",
                    "person_1",
                    "chatbot_1",
                    "_x",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    conv=_json_values, meta=_json_values, raw=st.binary(max_size=40), third=st.sampled_from(["bytes", "dir", "loop"])
)
def test_fuzz_any_snapshot_file_gives_items_or_located_problems(
    tmp_path_factory: pytest.TempPathFactory, conv, meta, raw: bytes, third: str
) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    _snapshot(root, {"1_conversations.json": conv, "2_conversations.json": {"c": conv}}, {"1_metadata.json": meta})
    odd = root / "conversations" / "3_conversations.json"
    if third == "bytes":
        odd.write_bytes(raw)
    elif third == "dir":
        odd.mkdir()
    else:
        odd.symlink_to(odd)
    reader = SnapshotReader(root).read()  # never raises
    for problem in reader.problems:
        assert problem.path is not None and problem.path.startswith(("conversations/", "metadata/")), problem
    for item in reader.items:
        assert item.client_utterance.strip() and item.reference_reply.strip()


def test_validate_reports_references_that_use_persona_facts_the_conversation_never_states() -> None:
    from tests.helpers import MULTI_EXCHANGE
    from tide_bench.data import format_report

    clean = validate("sample")["persona_facts_in_references"]
    assert (clean["n_checked"], clean["n_leaking"]) == (40, 0)  # the sample follows the context rule
    leaky = validate(str(MULTI_EXCHANGE))  # the first sample named traumas the clients never mentioned
    leaks = leaky["persona_facts_in_references"]
    assert leaks["n_leaking"] >= 12 and {"item_id": "1/conversation_2/turn1", "terms": ["assault"]} in leaks["examples"]
    assert "use metadata words the conversation never states" in format_report(leaky)


# ---------------------------------------------------------------- two shapes at once (issue 32, N17)
_SHAPES = {
    "single": {"person": "I keep reliving it.", "chatbot": "That sounds exhausting."},
    "list": {"turns": [{"person": "It came back.", "chatbot": "That sounds hard."}]},
    "numbered": {"person_1": "Again last night.", "chatbot_1": "I'm sorry it was so hard."},
}


@settings(max_examples=30, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(shapes=st.lists(st.sampled_from(sorted(_SHAPES)), min_size=1, max_size=3, unique=True))
def test_a_conversation_that_fits_two_shapes_is_refused_naming_both(
    tmp_path_factory: pytest.TempPathFactory, shapes: list[str]
) -> None:
    import shutil

    from tide_bench.data.sources import SAMPLE_DIR, read_source, resolve

    root = tmp_path_factory.mktemp("shapes") / "tide"
    shutil.copytree(SAMPLE_DIR, root)
    path = root / "conversations" / "1_conversations.json"
    data = json.loads(path.read_text())
    conv: dict = {"scenario": "sleep_nightmares"}
    for shape in shapes:
        conv |= _SHAPES[shape]
    data["conversations"]["conversation_1"] = conv
    path.write_text(json.dumps(data, indent=2))
    problems = [p for p in read_source(resolve(str(root))).problems if p.severity == "error"]
    if len(shapes) == 1:
        assert problems == []
    else:
        (problem,) = problems
        assert "fits two conversation shapes" in problem.message and problem.field == "conversation_1"
        assert problem.message.count(" and ") >= 1 and "1_conversations.json" in str(problem)
