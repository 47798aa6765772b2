"""Validation packs, reports and the judges board against hostile input (issue 43, round 3).

* R3-4: manifest fields that become paths (``source.revision``, ``source.repo``, file paths) follow
  a strict pattern and the pack's cache folder resolves inside the cache.
* R3-6, R3S-6: a copy or download stops at the pinned size plus one byte and is refused at once.
* A poisoned cache (item 7): ``pack.json`` naming other files, links, FIFOs.
* R3S-3: every report field the judges board reads is type-checked, every value on its page escaped.
* R3S-4: judge ratings off the run's rubric scale, a non-integer, an item twice, a line of another
  judge, a run record whose judge is not an object: refused naming the line and the field.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tests.validation_fixtures import annomi, file_server, mentalalign
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.judging import JudgeOptions, load_judge
from tide_bench.validation import fetch_pack, load_fetched, report_pack, run_pack, write_report
from tide_bench.validation.board import build_board
from tide_bench.validation.manifest import PACKS_ENV, load_pack, parse_pack
from tide_bench.validation.store import PACK_RECORD, pack_root

SHIPPED = Path(__file__).resolve().parents[2] / "tide_bench" / "validation" / "packs"
FUZZ = settings(
    max_examples=40, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
MARKUP = "<img src=x onerror=alert(1)>"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    manifests, cache = tmp_path / "manifests", tmp_path / "cache"
    monkeypatch.setenv(PACKS_ENV, str(manifests))
    monkeypatch.setenv("TIDE_BENCH_CACHE", str(cache))
    return {"root": tmp_path, "manifests": manifests, "cache": cache}


def _sized_annomi(env: dict[str, Path]) -> Path:
    """The fixture AnnoMI pack, its manifest pinning each file's size too."""
    upstream = env["root"] / "upstream"
    annomi(upstream, env["manifests"])
    path = env["manifests"] / "fx-annomi.yaml"
    manifest = yaml.safe_load(path.read_text())
    for f in manifest["files"]:
        f["size"] = (upstream / f["path"]).stat().st_size
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return upstream


def _outside(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if "cache" not in p.relative_to(root).parts)


# ------------------------------------------------------------------ R3-4: manifest fields used in paths

PATHLIKE = st.one_of(
    st.sampled_from(["../../escape", "..", ".", "a/b", "/abs", "x\x00y", "C:\\x", "a\\..\\b", " main", "main/..", ""]),
    st.text(max_size=40),
)


@FUZZ
@given(field=st.sampled_from(["revision", "repo"]), value=PATHLIKE)
def test_a_manifest_field_used_in_a_path_is_refused_or_stays_in_the_cache(
    tmp_path_factory: pytest.TempPathFactory, field: str, value: str
) -> None:
    raw = yaml.safe_load((SHIPPED / "epitome.yaml").read_text())
    raw["source"][field] = value
    manifest = tmp_path_factory.mktemp("m") / "epitome.yaml"
    try:
        pack = parse_pack(raw, manifest)
    except ConfigError as exc:
        assert exc.path == str(manifest) and exc.field == f"source.{field}", str(exc)
        return
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIDE_BENCH_CACHE", str(cache))
        root = pack_root(pack).resolve()
    assert root.is_relative_to(cache.resolve() / "validation") and root != cache.resolve() / "validation"
    assert "/" not in pack.revision and ".." not in pack.revision


@FUZZ
@given(value=PATHLIKE)
def test_a_pack_file_path_stays_inside_the_pack(tmp_path_factory: pytest.TempPathFactory, value: str) -> None:
    raw = yaml.safe_load((SHIPPED / "epitome.yaml").read_text())
    raw["files"][1]["path"] = value
    manifest = tmp_path_factory.mktemp("m") / "epitome.yaml"
    try:
        pack = parse_pack(raw, manifest)
    except ConfigError as exc:
        assert exc.field == "files[1].path", str(exc)
        return
    base = Path("/cache/pack")
    assert os.path.normpath(base / pack.files[1].path).startswith(str(base) + "/")


def test_a_local_pack_whose_revision_climbs_out_is_refused_and_writes_nothing(env: dict[str, Path]) -> None:
    upstream = _sized_annomi(env)
    path = env["manifests"] / "fx-annomi.yaml"
    manifest = yaml.safe_load(path.read_text())
    manifest["source"]["revision"] = "../../../escaped"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    before = _outside(env["root"])
    with pytest.raises(ConfigError) as refused:
        fetch_pack("fx-annomi", accept_licence=True, source=upstream)
    assert "fx-annomi.yaml" in str(refused.value) and "source.revision" in str(refused.value)
    assert _outside(env["root"]) == before


def test_a_link_in_the_cache_does_not_carry_a_fetch_outside(env: dict[str, Path]) -> None:
    upstream = _sized_annomi(env)
    elsewhere = env["root"] / "elsewhere"
    elsewhere.mkdir()
    (env["cache"] / "validation").mkdir(parents=True)
    (env["cache"] / "validation" / "fx-annomi").symlink_to(elsewhere)
    with pytest.raises(DataError, match="resolves outside"):
        fetch_pack("fx-annomi", accept_licence=True, source=upstream)
    assert list(elsewhere.iterdir()) == []


# ------------------------------------------------------------------ R3-6, R3S-6: stop at the pinned size


@FUZZ
@given(extra=st.one_of(st.integers(1, 3), st.integers(4, 30_000_000)), zipped=st.booleans())
def test_a_copy_stops_at_the_pinned_size_plus_one_byte(
    tmp_path_factory: pytest.TempPathFactory, extra: int, zipped: bool
) -> None:
    root = tmp_path_factory.mktemp("copy")
    env = {"root": root, "manifests": root / "manifests", "cache": root / "cache"}
    upstream = _sized_annomi(env)
    csv = upstream / "AnnoMI-full.csv"
    pinned = csv.stat().st_size
    with csv.open("ab") as handle:
        handle.truncate(pinned + extra)  # sparse: no disk used for the padding
    source: Path = upstream
    if zipped:
        source = root / "copy.zip"
        with zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED) as z:  # a small archive, a large member
            z.write(upstream / "README.md", "README.md")
            z.write(csv, "AnnoMI-full.csv")
    seen: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(PACKS_ENV, str(env["manifests"]))
        mp.setenv("TIDE_BENCH_CACHE", str(env["cache"]))
        with pytest.raises(DataError, match="too long: more than") as refused:
            fetch_pack("fx-annomi", accept_licence=True, source=source, progress=lambda _, done, __: seen.append(done))
    assert "AnnoMI-full.csv" in str(refused.value)
    assert max(seen, default=0) <= pinned  # nothing past the pinned size was ever written
    assert not (env["cache"] / "validation" / "fx-annomi").exists() or not any(
        (env["cache"] / "validation" / "fx-annomi").iterdir()
    )


@pytest.mark.parametrize("mode", ["long", "long-unannounced"])
def test_a_download_stops_at_the_pinned_size(env: dict[str, Path], mode: str) -> None:
    upstream = _sized_annomi(env)
    pinned = (upstream / "AnnoMI-full.csv").stat().st_size
    seen: list[int] = []
    with file_server(upstream, {"AnnoMI-full.csv": mode}) as (url, _), pytest.raises(DataError, match="too long"):
        fetch_pack("fx-annomi", accept_licence=True, base_url=url, progress=lambda _, d, __: seen.append(d))
    assert max(seen, default=0) <= pinned


# ------------------------------------------------------------------ a poisoned cache


def _fetched(env: dict[str, Path]) -> Path:
    upstream = _sized_annomi(env)
    fetch_pack("fx-annomi", accept_licence=True, source=upstream)
    return pack_root(load_pack("fx-annomi"))


def _edit_record(root: Path, change: Any) -> None:
    record = json.loads((root / PACK_RECORD).read_text())
    change(record)
    (root / PACK_RECORD).write_text(json.dumps(record))


@pytest.mark.parametrize(
    ("poison", "field"),
    [
        (lambda r: r["files"].update({"../../../../etc/hostname": "0" * 64}), "files"),
        (lambda r: r["files"].update({"AnnoMI-full.csv": 7}), "files.AnnoMI-full.csv"),
        (lambda r: r.update(missing=["../x"]), "missing"),
        (lambda r: r.update(missing="AnnoMI-full.csv"), "missing"),
    ],
)
def test_a_pack_record_naming_other_files_is_refused(env: dict[str, Path], poison: Any, field: str) -> None:
    root = _fetched(env)
    _edit_record(root, poison)
    with pytest.raises(DataError) as refused:
        load_fetched("fx-annomi")
    assert refused.value.field == field and PACK_RECORD in str(refused.value)


@pytest.mark.parametrize("kind", ["link-out", "fifo", "record-link"])
def test_a_link_or_fifo_in_the_cache_is_refused_without_being_read(env: dict[str, Path], kind: str) -> None:
    root = _fetched(env)
    target = root / ("AnnoMI-full.csv" if kind != "record-link" else PACK_RECORD)
    outside = env["root"] / "outside"
    shutil.copyfile(target, outside)
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)  # a read would block for ever
    else:
        target.symlink_to(outside)
    with pytest.raises(DataError):
        load_fetched("fx-annomi")


# ------------------------------------------------------------------ R3S-3: reports read by the judges board


@pytest.fixture(scope="module")
def ma_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("ma")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(PACKS_ENV, str(root / "manifests"))
        mp.setenv("TIDE_BENCH_CACHE", str(root / "cache"))
        mentalalign(root / "ma", root / "manifests")
        fetch_pack("fx-mentalalign", accept_licence=True, source=root / "ma")
        return report_pack("fx-mentalalign", mode="authors", resamples=50)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for k, item in enumerate(value[:3]):
            yield (*prefix, k)
            yield from _paths(item, (*prefix, k))


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


HOSTILE = st.one_of(
    st.just(MARKUP),
    st.text(max_size=20).map(lambda t: t + MARKUP),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.one_of(st.just(MARKUP), st.integers()), max_size=3),
    st.dictionaries(st.just(MARKUP), st.just(MARKUP), max_size=1),
)


@settings(max_examples=60, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), value=HOSTILE)
def test_fuzz_a_report_edited_anywhere_is_refused_by_field_or_shown_escaped(
    ma_report: dict[str, Any], tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, value: Any
) -> None:
    report = copy.deepcopy(ma_report)
    path = data.draw(st.sampled_from(sorted(_paths(report), key=repr)))
    _set(report, path, value)
    root = tmp_path_factory.mktemp("board")
    (root / "r.json").write_text(json.dumps(report))
    try:
        build_board([root / "r.json"], root / "board")
    except DataError as exc:
        assert "r.json" in str(exc) and "Traceback" not in str(exc)
        return
    page = (root / "board" / "index.html").read_text()
    assert "<img" not in page and "onerror=alert(1)>" not in page


def test_markup_in_every_name_of_a_report_is_escaped(ma_report: dict[str, Any], tmp_path: Path) -> None:
    report = copy.deepcopy(ma_report)
    (judge, block), *_ = report["judges"].items()
    report["judges"] = {judge + MARKUP: block}
    dim = next(iter(block["dimensions"]))
    block["dimensions"][dim + MARKUP] = block["dimensions"].pop(dim)
    report["dimensions"][dim + MARKUP] = report["dimensions"].pop(dim) | {"judge_factor": MARKUP}
    block["excluded_responders"] = [MARKUP]
    block["n_unscored"], block["n_judged"] = 1, 2
    (tmp_path / "r.json").write_text(json.dumps(report))
    build_board([tmp_path / "r.json"], tmp_path / "board")
    page = (tmp_path / "board" / "index.html").read_text()
    assert "<img" not in page and "&lt;img" in page


# ------------------------------------------------------------------ R3S-4: judge runs read by the report


@pytest.fixture(scope="module")
def annomi_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("am")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(PACKS_ENV, str(root / "manifests"))
        mp.setenv("TIDE_BENCH_CACHE", str(root / "cache"))
        annomi(root / "am", root / "manifests", turns=30)
        fetch_pack("fx-annomi", accept_licence=True, source=root / "am")
        server = FakeLLMServer().start()
        try:
            server.rater = lambda reply: {"scores": [3, 3, 4 if "so" in reply else 2], "category": None, "risk": None}
            config = load_judge("local", model="fake-judge", base_url=server.url + "/v1", overrides={"family": "x"})
            run_pack("fx-annomi", config, root / "run", JudgeOptions())
        finally:
            server.stop()
        yield {"root": root, "run": root / "run"}


def _edited_run(base: Path, dest: Path, edit_lines: Any = None, edit_record: Any = None) -> Path:
    shutil.copytree(base, dest)
    lines = [json.loads(x) for x in (dest / "judgments.jsonl").read_text().splitlines()]
    if edit_lines:
        edit_lines(lines)
    (dest / "judgments.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    if edit_record:
        record = json.loads((dest / "validation_run.json").read_text())
        edit_record(record)
        (dest / "validation_run.json").write_text(json.dumps(record))
    return dest


SCORE = st.one_of(
    st.integers(-3, 9),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.lists(st.integers(1, 5), max_size=2),
)


@FUZZ
@given(
    value=SCORE, line=st.integers(0, 29), factor=st.sampled_from(["supportive_reflection", "collaborative_exploration"])
)
def test_fuzz_a_judge_score_off_the_rubric_is_refused_naming_line_and_field(
    annomi_run: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, value: Any, line: int, factor: str
) -> None:
    root = annomi_run["root"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(PACKS_ENV, str(root / "manifests"))
        mp.setenv("TIDE_BENCH_CACHE", str(root / "cache"))
        compared = {d.judge_factor for d in load_pack("fx-annomi").dimensions if d.judge_factor}
        run = _edited_run(
            annomi_run["run"],
            tmp_path_factory.mktemp("run") / "run",
            lambda rows: rows[line]["scores"].update({factor: value}),
        )
        valid = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5
        if valid or factor not in compared:
            report_pack("fx-annomi", [run], resamples=20, baseline=False)
            return
        with pytest.raises(DataError) as refused:
            report_pack("fx-annomi", [run], resamples=20, baseline=False)
    assert refused.value.line == line + 1 and refused.value.field == f"scores.{factor}"
    assert refused.value.path is not None and refused.value.path.endswith("judgments.jsonl")


@pytest.mark.parametrize(
    ("edit_lines", "edit_record", "line", "field"),
    [
        (lambda rows: rows.append(dict(rows[0])), None, 31, "item_id"),
        (lambda rows: rows[3]["judge"].update(version="0000000000000000"), None, 4, "judge.version"),
        (lambda rows: rows[3]["judge"].update(model="another-model"), None, 4, "judge.model"),
        (lambda rows: rows[2].update(judge="local"), None, 3, "judge.name"),
        (lambda rows: rows[5].update(scores=[3, 3, 3]), None, 6, "scores"),
        (None, lambda rec: rec.update(judge="local"), None, "judge"),
        (None, lambda rec: rec.update(judge=[1]), None, "judge"),
        (None, lambda rec: rec["judge"].update(rubric="made-up@v9"), None, "judge.rubric"),
        (None, lambda rec: rec["judge"].update(model=5), None, "judge.model"),
    ],
)
def test_a_run_with_two_judges_an_item_twice_or_no_judge_object_is_refused(
    annomi_run: dict[str, Path], tmp_path: Path, edit_lines: Any, edit_record: Any, line: int | None, field: str
) -> None:
    root = annomi_run["root"]
    run = _edited_run(annomi_run["run"], tmp_path / "run", edit_lines, edit_record)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(PACKS_ENV, str(root / "manifests"))
        mp.setenv("TIDE_BENCH_CACHE", str(root / "cache"))
        with pytest.raises(DataError) as refused:
            report_pack("fx-annomi", [run], resamples=20, baseline=False)
    assert refused.value.field == field and refused.value.line == line, str(refused.value)


def test_an_unknown_status_is_counted_as_unscored_not_dropped(annomi_run: dict[str, Path], tmp_path: Path) -> None:
    root = annomi_run["root"]
    run = _edited_run(annomi_run["run"], tmp_path / "run", lambda rows: rows[0].update(status="great"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(PACKS_ENV, str(root / "manifests"))
        mp.setenv("TIDE_BENCH_CACHE", str(root / "cache"))
        report = report_pack("fx-annomi", [run], resamples=20, baseline=False)
        write_report(report, json_path=tmp_path / "r.json")
    (block,) = report["judges"].values()
    assert block["n_unscored"] == 1 and block["n_judged"] == 30
    build_board([tmp_path / "r.json"], tmp_path / "board")
    assert "unscored: 1 of 30" in (tmp_path / "board" / "index.html").read_text()


# ------------------------------------------------------------------ the pack readers (item 7)


def _counselbench(root: Path, payload: Any) -> None:
    import hashlib

    (root / "up").mkdir(parents=True)
    (root / "up" / "counselbench_eval.json").write_text(json.dumps(payload))
    raw = yaml.safe_load((SHIPPED / "counselbench.yaml").read_text())
    digest = hashlib.sha256((root / "up" / "counselbench_eval.json").read_bytes()).hexdigest()
    raw |= {"name": "fx-counselbench", "source": {"repo": "f/c", "revision": "a" * 40}}
    raw["files"] = [{"path": "counselbench_eval.json", "role": "human_ratings", "sha256": digest}]
    (root / "manifests").mkdir()
    (root / "manifests" / "fx-counselbench.yaml").write_text(yaml.safe_dump(raw))


def test_a_ratings_file_that_gives_every_rating_its_own_rater_is_refused(env: dict[str, Path]) -> None:
    """Found attacking the CounselBench reader: 400 KB of questions each rated by a new rater id asked
    for a 6,000 x 6,000 matrix per dimension (1.1 GB); 20,000 of them would take 13 GB."""
    from tide_bench.validation.adapters import load_data

    n = 3_000
    _counselbench(env["root"], {f"q{i}": {"human": {"survey_id": [f"r{i}"], "empathy_score": [3]}} for i in range(n)})
    with pytest.raises(DataError, match="ratings per dimension"):
        load_data(fetch_pack("fx-counselbench", accept_licence=True, source=env["root"] / "up"))


def test_an_annomi_file_of_single_coded_turns_by_new_annotators_is_refused(env: dict[str, Path]) -> None:
    """The same bomb through the AnnoMI reader: each utterance coded once, by an annotator of its own."""
    from tide_bench.validation.adapters import load_data

    upstream = _sized_annomi(env)
    csv_path = upstream / "AnnoMI-full.csv"
    header = csv_path.read_text().splitlines()[0]
    columns = header.split(",")
    rows = []
    for t in range(2_500):
        row = dict.fromkeys(columns, "")
        row |= {"transcript_id": "0", "utterance_id": str(t), "interlocutor": "therapist", "annotator_id": str(t)}
        row |= {"utterance_text": "ok", "reflection_exists": "True", "question_exists": "False"}
        rows.append(",".join(row[c] for c in columns))
    csv_path.write_text("\n".join([header, *rows]) + "\n")
    manifest = env["manifests"] / "fx-annomi.yaml"
    raw = yaml.safe_load(manifest.read_text())
    for f in raw["files"]:
        if f["path"] == "AnnoMI-full.csv":
            f["size"], f["sha256"] = (
                csv_path.stat().st_size,
                __import__("hashlib").sha256(csv_path.read_bytes()).hexdigest(),
            )
    manifest.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(DataError, match="ratings per dimension"):
        load_data(fetch_pack("fx-annomi", accept_licence=True, source=upstream))


def test_an_archive_of_a_million_headers_is_refused_at_once(
    env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import tarfile

    from tide_bench.validation import sources

    _sized_annomi(env)
    monkeypatch.setattr(sources, "MAX_MEMBERS", 2_000)  # the shipped bound is 200,000: the same code path
    path = env["root"] / "bomb.tar.gz"
    info = tarfile.TarInfo("x")
    with tarfile.open(path, "w:gz") as tar:
        for i in range(5_000):
            info.name = f"x{i}"
            tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(DataError, match="more than 2,000 members"):
        fetch_pack("fx-annomi", accept_licence=True, source=path)
