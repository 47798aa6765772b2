"""Rating returns come from outside: each bad file is refused on its own and the rest merged
(issue 12 item 8); the assignment links every pair of raters (item 9); fuzzed returns never
crash the collector."""

from __future__ import annotations

import contextlib
import copy
import csv
import json
import os
import shutil
import tempfile
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import make_run, rater_payload
from tide_bench.annotation import AssignmentOptions, build_annotation
from tide_bench.annotation.assign import plan
from tide_bench.annotation.collect import checksum, collect_returns, write_outputs
from tide_bench.cli.main import cli
from tide_bench.core.errors import DataError

OPTS = AssignmentOptions(per_rater=6, raters=3, overlap=2, repeats=1, seed=11)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("runs")
    return [
        make_run(root / f"model-{m}", lambda i, m=m: f"Reply {m} to {i.item_id}", split="all", model_name=f"org/{m}")
        for m in "ab"
    ]


@pytest.fixture
def ann(tmp_path: Path, runs: list[Path]) -> Path:
    build_annotation(runs, tmp_path / "ann", OPTS)
    return tmp_path / "ann"


def export(
    ann: Path, rater: str = "rater-1", *, upto: int | None = None, score: Any = 3, **changes: Any
) -> dict[str, Any]:
    payload = rater_payload(
        ann,
        rater,
        lambda p, u, factors: {"position": p, "unit_id": u, "scores": {f: score for f in factors}},
        demographics={"age_group": "25-34", "gender": "", "education": "", "comments": ""},
    )
    payload["ratings"] = payload["ratings"][:upto]
    return payload | changes


def seal(payload: Any) -> Any:
    if isinstance(payload, dict):
        payload = {k: v for k, v in payload.items() if k != "checksum"}
        payload["checksum"] = checksum(payload)
    return payload


def write(folder: Path, name: str, payload: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return path


def _mutate(path: list[Any], value: Any) -> Any:
    def apply(payload: dict[str, Any]) -> dict[str, Any]:
        payload = copy.deepcopy(payload)
        target = payload
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        return payload

    return apply


_DELETE = object()
MALFORMED = {
    "ratings-is-an-object": _mutate(["ratings"], {"0": {"position": 0}}),
    "rating-is-a-number": _mutate(["ratings"], [5]),
    "scores-null": _mutate(["ratings", 0, "scores"], None),
    "rating-without-scores": _mutate(["ratings", 0, "scores"], _DELETE),
    "no-ratings": _mutate(["ratings"], _DELETE),
    "rater-id-a-list": _mutate(["rater_id"], ["rater-1"]),
    "demographics-a-list": _mutate(["demographics"], ["x"]),
    "demographics-a-number": _mutate(["demographics", "comments"], 42),
    "position-a-bool": _mutate(["ratings", 0, "position"], True),
    "consent-string-no": _mutate(["consent"], "no"),
    "consent-one": _mutate(["consent"], 1),
    "score-a-float": _mutate(["ratings", 0, "scores", "emotion_recognition"], 3.0),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_one_malformed_return_is_refused_and_the_others_merged(tmp_path: Path, ann: Path, case: str) -> None:
    good = write(ann / "returns", "ratings-rater-2.json", seal(export(ann, "rater-2")))
    bad = write(ann / "returns", "ratings-rater-1.json", seal(MALFORMED[case](export(ann))))
    c = collect_returns([bad, good])
    assert list(c.refused) == [str(bad)] and c.refused[str(bad)]
    assert set(c.raters) == {"rater-2"} and c.rows
    write_outputs(c, tmp_path / "human.csv", tmp_path / "raters.csv")
    assert len((tmp_path / "human.csv").read_text().splitlines()) == len(c.rows) + 1


@pytest.mark.parametrize(
    ("score", "says"),
    [
        (3.0, "must be a whole number in 1..5"),
        (True, "must be a whole number in 1..5"),
        ("3", "must be a whole number in 1..5"),
        (6, "is outside 1..5"),
        (0, "is outside 1..5"),
    ],
)
def test_a_score_refusal_says_what_is_wrong_with_it(ann: Path, score: Any, says: str) -> None:
    """30 Nov kit, ann/collect_tamper.py: 3.0, true and "3" were refused as "outside 1..5",
    which they are not; the reason names the actual fault."""
    c = collect_returns([write(ann / "returns", "r1.json", seal(export(ann, score=score)))])
    assert says in next(iter(c.refused.values()))


def test_conflicting_ratings_for_one_position_are_refused(ann: Path) -> None:
    payload = export(ann)
    payload["ratings"].append({**payload["ratings"][0], "scores": {k: 1 for k in payload["ratings"][0]["scores"]}})
    c = collect_returns([write(ann / "returns", "r1.json", seal(payload))])
    assert "two different ratings for position 0" in next(iter(c.refused.values()))
    same = export(ann)
    same["ratings"].append(copy.deepcopy(same["ratings"][0]))  # an identical repeat is harmless
    assert collect_returns([write(ann / "returns2", "r1.json", seal(same))]).refused == {}


@pytest.mark.parametrize("partial_first", [True, False])
def test_the_complete_file_is_kept_whatever_the_order(ann: Path, partial_first: bool) -> None:
    partial = write(ann / "returns", "ratings-rater-1-partial.json", seal(export(ann, upto=2, score=2)))
    final = write(ann / "returns", "ratings-rater-1.json", seal(export(ann, score=4)))
    c = collect_returns([partial, final] if partial_first else [final, partial])
    assert c.refused == {} and c.superseded == {str(partial): str(final)}
    assert c.missing["rater-1"] == [] and {row[3] for row in c.rows} == {4}


def test_a_folder_means_its_json_files_and_an_unmatched_pattern_is_an_error(tmp_path: Path, ann: Path) -> None:
    write(ann / "returns", "ratings-rater-1.json", seal(export(ann)))
    write(ann / "returns", "ratings-rater-2.json", seal(export(ann, "rater-2")))
    c = collect_returns([ann / "returns"])
    assert set(c.raters) == {"rater-1", "rater-2"} and c.refused == {}
    with pytest.raises(DataError, match="no file matches"):
        collect_returns([str(ann / "nothing" / "*.json")])
    with pytest.raises(DataError, match=r"no \*\.json ratings files"):
        collect_returns([_empty(tmp_path)])
    runner = CliRunner()
    for args in ([str(ann / "nothing" / "*.json")], [str(ann / "missing.json")]):
        result = runner.invoke(cli, ["annotate", "collect", *args, "--out", str(tmp_path / "h.csv")])
        assert result.exit_code == 2 and result.output.startswith("error: ") and "Traceback" not in result.output
    ok = runner.invoke(cli, ["annotate", "collect", str(ann / "returns"), "--out", str(tmp_path / "h.csv")])
    assert ok.exit_code == 0 and f"written: {tmp_path / 'h.csv'}" in ok.output and '{"coverage"' not in ok.output


def _empty(tmp_path: Path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def test_refusal_names_the_file_once(tmp_path: Path, ann: Path) -> None:
    bad = write(ann / "returns", "ratings-rater-1.json", seal(export(ann, consent=False)))
    result = CliRunner().invoke(cli, ["annotate", "collect", str(bad), "--out", str(tmp_path / "h.csv")])
    assert result.exit_code == 1
    line = next(x for x in result.output.splitlines() if x.startswith("REFUSED"))
    assert line.count(str(bad)) == 1 and "consent" in line


def test_free_text_demographics_cannot_become_spreadsheet_formulas(tmp_path: Path, ann: Path) -> None:
    hostile = {
        "comments": '=HYPERLINK("http://evil.example","click")',
        "gender": "+cmd|' /C calc'!A0",
        "age_group": "@SUM(1)",
        "education": "-2+3",
    }
    c = collect_returns([write(ann / "returns", "r1.json", seal(export(ann, demographics=hostile)))])
    write_outputs(c, tmp_path / "h.csv", tmp_path / "raters.csv")
    row = next(csv.DictReader((tmp_path / "raters.csv").open()))
    assert all(row[k].startswith("'") and row[k][1:] == v for k, v in hostile.items())


def test_a_zero_on_a_zero_based_scale_is_kept(ann: Path) -> None:
    a = json.loads((ann / "assignment.json").read_text())
    a["rubric"]["scale"] = {"min": 0, "max": 4}
    (ann / "assignment.json").write_text(json.dumps(a))
    c = collect_returns([write(ann / "returns", "r1.json", seal(export(ann, score=0)))])
    assert c.refused == {} and c.rows and {row[3] for row in c.rows} == {0} and c.missing["rater-1"] == []


# ------------------------------------------------------------------ the assignment design (item 9)


@pytest.mark.parametrize(("raters", "overlap"), [(4, 2), (6, 3), (6, 2), (5, 3), (3, 3)])
def test_every_rater_pair_shares_items(runs: list[Path], raters: int, overlap: int) -> None:
    a = plan(runs, AssignmentOptions(per_rater=6, raters=raters, overlap=overlap, repeats=0, seed=1))
    sets = {r["rater_id"]: set(r["sequence"]) for r in a["raters"]}
    assert all(sets[x] & sets[y] for x, y in combinations(sets, 2))  # the round robin split 4/2, 6/3, 6/2 into blocks
    assert {len(s) for s in sets.values()} == {6} and all(
        sum(u in s for s in sets.values()) == overlap for u in a["units"]
    )
    d = a["design"]
    assert (
        d["pairs_sharing_items"] == d["rater_pairs"] == raters * (raters - 1) // 2
        and d["connected"]
        and d["warning"] is None
    )


def test_a_plan_too_small_to_link_every_pair_says_so(tmp_path: Path, runs: list[Path]) -> None:
    a = plan(runs, AssignmentOptions(per_rater=2, raters=8, overlap=2, repeats=0, seed=1))
    d = a["design"]
    assert d["pairs_sharing_items"] < d["rater_pairs"] and "share no item" in d["warning"]
    assert len(d["pairs_without_shared_items"]) == d["rater_pairs"] - d["pairs_sharing_items"]
    result = CliRunner().invoke(
        cli,
        [
            "annotate",
            "build",
            *map(str, runs),
            "--per-rater",
            "2",
            "--raters",
            "8",
            "--overlap",
            "2",
            "--repeats",
            "0",
            "--out",
            str(tmp_path / "ann"),
        ],
    )
    assert result.exit_code == 0 and "warning:" in result.output and "rater pairs sharing items" in result.output
    saved = json.loads((tmp_path / "ann" / "assignment.json").read_text())["design"]
    assert saved["pairs_sharing_items"] < saved["rater_pairs"] == 28 and saved["warning"]


# ------------------------------------------------------------------ fuzz: any return file

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 9) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
FIELDS = ["ratings", "rater_id", "consent", "demographics", "assignment_id", "kind", "checksum"]


@settings(
    max_examples=80,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    edits=st.lists(
        st.tuples(
            st.sampled_from(
                [*FIELDS, "ratings.0", "ratings.0.scores", "ratings.0.position", "ratings.0.scores.emotion_recognition"]
            ),
            JSON,
        ),
        max_size=3,
    ),
    reseal=st.booleans(),
    raw=st.none() | st.binary(max_size=40),
)
def test_fuzz_any_return_is_merged_or_refused_with_a_reason(
    runs: list[Path], edits: list[tuple[str, Any]], reseal: bool, raw: bytes | None
) -> None:
    folder = _fuzz_assignment(runs)
    returns = Path(tempfile.mkdtemp(dir=folder))
    payload: Any = export(folder)
    for where, value in edits:
        payload = _set(payload, where.split("."), value)
    path = returns / "fuzzed.json"
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(json.dumps(seal(payload) if reseal else payload))
    good = write(returns, "good.json", seal(export(folder, "rater-2")))
    before = _snapshot(folder)
    c = collect_returns([path, good])
    assert "rater-2" in c.raters  # the good file is always merged
    assert str(path) in c.refused or "rater-1" in c.raters
    if str(path) in c.refused:
        assert c.refused[str(path)].strip()
    assert _snapshot(folder) == before  # nothing read-only was touched, nothing deleted
    shutil.rmtree(returns)


def _set(payload: Any, keys: list[str], value: Any) -> Any:
    payload = copy.deepcopy(payload)
    target = payload
    for key in keys[:-1]:
        index: Any = int(key) if key.isdigit() else key
        try:
            target = target[index]
        except (KeyError, IndexError, TypeError):
            return payload
    last: Any = int(keys[-1]) if keys[-1].isdigit() else keys[-1]
    with contextlib.suppress(IndexError, TypeError):
        target[last] = value
    return payload


_FOLDERS: dict[str, Path] = {}


def _fuzz_assignment(runs: list[Path]) -> Path:
    if "ann" not in _FOLDERS:
        _FOLDERS["ann"] = Path(tempfile.mkdtemp()) / "ann"
        build_annotation(runs, _FOLDERS["ann"], OPTS)
    return _FOLDERS["ann"]


def _snapshot(folder: Path) -> dict[str, float]:
    return {
        str(p): os.stat(p).st_mtime
        for p in folder.rglob("*")
        if p.is_file() and (p.suffix == ".html" or p.name == "assignment.json")
    }
