"""``leaderboard build --reuse``: an entry kept from an earlier build is used only while its
files, the board and the code are unchanged, and the site is the one a build without the store
writes, file for file; the store is a folder of its own that nobody else can write."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.leaderboard_helpers import board, fake_judge, judged_submission, samples_files, site_files
from tide_bench.core.errors import ConfigError
from tide_bench.leaderboard import build_site
from tide_bench.leaderboard import reuse as reuse_module
from tide_bench.leaderboard.reuse import ENTRY, MARKER


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two good entries and a refused folder."""
    tmp = tmp_path_factory.mktemp("reuse")
    with fake_judge() as server:
        judged_submission(tmp, server, "good", lambda i: f"Good [[SCORES:5,4,4]] {i.item_id}")
        judged_submission(tmp, server, "fair", lambda i: f"Fair [[SCORES:3,3,2]] {i.item_id}")
    subs = tmp / "submissions"
    shutil.copytree(subs / "good", subs / "broken")
    (subs / "broken" / "run" / "run.json").unlink()
    return subs


@pytest.fixture
def submissions(originals: Path, tmp_path: Path) -> Path:
    """A copy each test may change."""
    return Path(shutil.copytree(originals, tmp_path / "submissions"))


def _stored(store: Path) -> list[Path]:
    return [p for p in store.glob("*/*") if (p / ENTRY).is_file()]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_rebuild_takes_every_unchanged_entry_from_the_store_and_writes_the_same_site(
    submissions: Path, tmp_path: Path, workers: int
) -> None:
    store = tmp_path / "store"
    plain = build_site(submissions, tmp_path / "plain", board(), workers=workers, allow_risk_gate_off=True)
    first = build_site(submissions, tmp_path / "first", board(), workers=workers, reuse=store, allow_risk_gate_off=True)
    assert first.reused == [] and len(_stored(store)) == 3  # the refused entry is kept too
    again = build_site(submissions, tmp_path / "again", board(), workers=workers, reuse=store, allow_risk_gate_off=True)
    assert sorted(again.reused) == ["broken", "fair", "good"]
    assert again.accepted == plain.accepted == ["good", "fair"] and again.refused == plain.refused
    expected = site_files(tmp_path / "plain")
    assert site_files(tmp_path / "first") == expected
    assert site_files(tmp_path / "again") == expected


def test_a_changed_file_prepares_that_entry_anew_and_is_checked_again(submissions: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    build_site(submissions, tmp_path / "first", board(), workers=1, reuse=store, allow_risk_gate_off=True)
    meta_file = submissions / "fair" / "submission.yaml"
    meta_file.write_text(yaml.safe_dump(yaml.safe_load(meta_file.read_text()) | {"model_name": "Fair, renamed"}))
    renamed = build_site(submissions, tmp_path / "renamed", board(), workers=1, reuse=store, allow_risk_gate_off=True)
    assert sorted(renamed.reused) == ["broken", "good"]
    assert {r["id"]: r["model_name"] for r in renamed.board["rows"]}["fair"] == "Fair, renamed"
    # one letter of one reply changed after judging (the file's size unchanged): the reused entry
    # must not hide that the judgments' keys no longer match the replies
    samples = samples_files(submissions / "good")[0]
    lines = samples.read_text().splitlines()
    row = json.loads(lines[0])
    reply = row["filtered_resps"][0]
    row["filtered_resps"] = [reply.replace("Good", "Gold", 1)]
    row["resps"] = [[reply.replace("Good", "Gold", 1)]]
    edited_line = json.dumps(row)
    assert len(edited_line) == len(json.dumps(json.loads(lines[0]))) and edited_line != lines[0]
    lines[0] = edited_line
    samples.write_text("\n".join(lines) + "\n")
    edited = build_site(submissions, tmp_path / "edited", board(), workers=1, reuse=store, allow_risk_gate_off=True)
    assert "good" not in edited.reused and "good" in edited.refused
    assert sorted(edited.reused) == ["broken", "fair"]
    assert len(_stored(store)) == 3  # the entries of the build before the last are gone


def test_another_board_or_code_prepares_every_entry_anew(
    submissions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    build_site(submissions, tmp_path / "first", board(), workers=1, reuse=store, allow_risk_gate_off=True)
    assert build_site(submissions, tmp_path / "same", board(), workers=1, reuse=store, allow_risk_gate_off=True).reused
    other_board = build_site(
        submissions, tmp_path / "board", board(min_scored_items=2), workers=1, reuse=store, allow_risk_gate_off=True
    )
    assert other_board.reused == []
    assert len([p for p in store.iterdir() if p.is_dir()]) == 1  # the other board's entries are removed
    monkeypatch.setattr(reuse_module, "code_fingerprint", lambda: "another tide-bench")
    assert (
        build_site(
            submissions, tmp_path / "code", board(min_scored_items=2), workers=1, reuse=store, allow_risk_gate_off=True
        ).reused
        == []
    )


def test_a_damaged_stored_entry_is_prepared_anew(submissions: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    build_site(submissions, tmp_path / "first", board(), workers=1, reuse=store, allow_risk_gate_off=True)
    for entry in _stored(store):
        pickled = entry / ENTRY
        pickled.write_bytes(pickled.read_bytes()[:40])  # a build killed while writing, a full disk
    rebuilt = build_site(submissions, tmp_path / "rebuilt", board(), workers=1, reuse=store, allow_risk_gate_off=True)
    assert rebuilt.reused == [] and rebuilt.accepted == ["good", "fair"]
    assert site_files(tmp_path / "rebuilt") == site_files(tmp_path / "first")
    for entry in _stored(store):  # rewritten whole: used by the next build
        (entry / "files" / "instances" / "good.js").unlink(missing_ok=True)
    again = build_site(submissions, tmp_path / "again", board(), workers=1, reuse=store, allow_risk_gate_off=True)
    assert sorted(again.reused) == ["broken", "fair"]  # good's files were missing: prepared anew
    assert site_files(tmp_path / "again") == site_files(tmp_path / "first")


def test_the_store_must_be_a_private_folder_of_its_own(submissions: Path, tmp_path: Path) -> None:
    def build(store: Path, out: str = "site") -> object:
        return build_site(submissions, tmp_path / out, board(), workers=1, reuse=store, allow_risk_gate_off=True)

    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="new or empty folder"):
        build(foreign)
    assert (foreign / "mine.txt").read_text() == "keep me" and not (foreign / MARKER).exists()
    with pytest.raises(ConfigError, match="submissions folder"):
        build(submissions / "store")
    with pytest.raises(ConfigError, match="reuse store"):
        build(tmp_path / "site" / "store")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(ConfigError, match="writable by other users"):
        build(shared)
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    with pytest.raises(ConfigError, match="not a link"):
        build(tmp_path / "link")
    assert not any((tmp_path / "target").iterdir())


def test_a_group_writable_stored_entry_is_never_unpickled(submissions: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    build_site(submissions, tmp_path / "first", board(), workers=1, reuse=store, allow_risk_gate_off=True)
    for entry in _stored(store):
        os.chmod(entry / ENTRY, 0o666)
    assert (
        build_site(submissions, tmp_path / "again", board(), workers=1, reuse=store, allow_risk_gate_off=True).reused
        == []
    )


def test_the_cli_says_how_many_entries_it_reused(submissions: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tide_bench.cli.main import cli

    board_file = tmp_path / "board.yaml"
    board_file.write_text(yaml.safe_dump({"spot_check_items": 4}))
    args = [
        "leaderboard",
        "build",
        "--submissions",
        str(submissions),
        "--board",
        str(board_file),
        "--allow-risk-gate-off",
    ]
    store = ["--reuse", str(tmp_path / "store"), "--workers", "1"]
    first = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "a"), *store])
    assert first.exit_code == 0, first.output
    assert "reused 0 of 3 entries" in first.output and "prepared 3" in first.output
    second = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "b"), *store])
    assert "reused 3 of 3 entries" in second.output and "prepared 0" in second.output


@settings(max_examples=6, derandomize=True, deadline=None)
@given(flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=3))
def test_a_stored_entry_with_flipped_bytes_is_never_used(
    originals: Path, tmp_path_factory: pytest.TempPathFactory, flips: list[tuple[float, int]]
) -> None:
    """A flipped byte in a pickle may still unpickle, into other numbers: every stored entry
    carries its checksum, so a changed byte anywhere makes the entry be prepared anew."""
    tmp = tmp_path_factory.mktemp("flips")
    subs, store = Path(shutil.copytree(originals, tmp / "submissions")), tmp / "store"
    first = build_site(subs, tmp / "first", board(), workers=1, reuse=store, allow_risk_gate_off=True)
    for entry in _stored(store):
        data = bytearray((entry / ENTRY).read_bytes())
        for where, xor in flips:
            data[int(where * len(data))] ^= xor
        (entry / ENTRY).write_bytes(bytes(data))
    again = build_site(subs, tmp / "again", board(), workers=1, reuse=store, allow_risk_gate_off=True)
    assert again.reused == [] and again.accepted == first.accepted
    assert site_files(tmp / "again") == site_files(tmp / "first")
