"""EmpatheticDialogues from the user's release (`--data ed:PATH`): the tarball or its folder,
the release's quirks (`_comma_`, literal quotes, rows that break a CSV reader), speakers as the
clusters, the 32 emotions as scenarios. The fixture is a synthetic release in ED's layout."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.epitome_helpers import ED_FIXTURE
from tide_bench.core.errors import DataError
from tide_bench.data import load_dataset
from tide_bench.data.ed import COLUMNS, EMOTIONS, read_ed
from tide_bench.data.validate import validate


def _tarball(tmp_path: Path, folder: Path = ED_FIXTURE) -> Path:
    path = tmp_path / "empatheticdialogues.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name in ("train.csv", "valid.csv", "test.csv"):
            tar.add(folder / name, arcname=f"empatheticdialogues/{name}")
    return path


def test_one_item_per_conversation_with_the_listener_reply_as_the_human_reference() -> None:
    items, _ = read_ed(ED_FIXTURE)
    by_split = {s: [i for i in items if i.split == s] for s in ("train", "validation", "test")}
    assert [len(v) for v in by_split.values()] == [24, 8, 17]
    item = next(i for i in items if i.conversation_id == "hit:0_conv:0")
    assert item.item_id == "speaker-10/hit:0_conv:0/turn1" and item.persona_id == "speaker-10" and item.turn == 1
    assert item.scenario == "afraid" and item.history == []
    assert item.persona["situation"] in item.client_utterance
    assert item.persona["first_utterance"] in item.client_utterance
    assert "_comma_" not in item.client_utterance + item.reference_reply
    assert item.reference_reply in {
        "Oh no, that sounds really scary. Are you okay now?",
        "That would have frightened me too.",
    }
    assert set(i.scenario for i in items) <= set(EMOTIONS) and len(EMOTIONS) == 32


def test_quotes_are_literal_and_a_broken_row_is_reported_not_dropped_silently() -> None:
    items, report = read_ed(ED_FIXTURE)
    quoted = next(i for i in items if i.conversation_id == "hit:301_conv:602")
    assert '"unannounced' in quoted.client_utterance and '"appeared' in quoted.client_utterance
    assert "What a surprise!" in quoted.reference_reply  # the quote did not swallow the next line
    assert report.broken_rows == 1 and report.skipped_conversations == 1
    texts = [str(p) for p in report.problems]
    assert any("test.csv:50: has 10 fields, the header 8" in t for t in texts)
    assert any("hit:300_conv:600 lacks the speaker's first utterance (lost to a broken row)" in t for t in texts)
    assert not any(i.conversation_id == "hit:300_conv:600" for i in items)


def test_the_tarball_and_its_folder_give_the_same_items(tmp_path: Path) -> None:
    from_tar, report_tar = read_ed(_tarball(tmp_path))
    from_folder, report_folder = read_ed(ED_FIXTURE)
    assert from_tar == from_folder and report_tar.files == report_folder.files
    assert not (tmp_path / "empatheticdialogues").exists()  # read in memory, never extracted


def test_ed_is_a_data_source_whose_provenance_counts_what_was_left_out(tmp_path: Path) -> None:
    dataset = load_dataset(f"ed:{ED_FIXTURE}")
    provenance = dataset.provenance("test")
    assert provenance["source_kind"] == "ed" and provenance["split_version"] == "ed-release-v1"
    assert provenance["release"]["broken_rows"] == 1 and provenance["release"]["skipped_conversations"] == 1
    assert provenance["n_items"] == 17 and not provenance["is_synthetic_sample"]
    report = validate(f"ed:{ED_FIXTURE}")
    assert report["ok"] and report["n_warnings"] == 2 and "1 broken row(s) left out" in " ".join(report["notes"])


def test_the_situation_and_first_utterance_are_the_prompt_of_a_genuine_chat_turn() -> None:
    from tide_bench.tasks.prompts import build_messages
    from tide_bench.tasks.registry import system_prompt

    item = load_dataset(f"ed:{ED_FIXTURE}").items_for("test")[0]
    messages = build_messages(item.to_doc(), system_prompt("ed"))
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "empathetic listener" in messages[0]["content"] and messages[1]["content"] == item.client_utterance


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"conv_id,utterance_idx,emotion\n", "header is"),
        (",".join(COLUMNS).encode() + b"\n\xff\xfe,1\n", "is not UTF-8"),
    ],
)
def test_a_file_that_is_not_an_ed_split_is_an_error_in_the_report(tmp_path: Path, text: bytes, message: str) -> None:
    (tmp_path / "test.csv").write_bytes(text)
    _, report = read_ed(tmp_path)
    assert any(p.severity == "error" and message in p.message for p in report.problems)
    with pytest.raises(DataError, match=message):
        load_dataset(f"ed:{tmp_path}")


def test_a_path_without_a_release_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"train\.csv / valid\.csv / test\.csv"):
        read_ed(tmp_path)
    with pytest.raises(DataError, match="EmpatheticDialogues release does not exist"):
        load_dataset(f"ed:{tmp_path / 'missing'}")
    (tmp_path / "x.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(DataError, match="not a readable EmpatheticDialogues tarball"):
        read_ed(tmp_path / "x.tar.gz")


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    row=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30), min_size=0, max_size=12),
    at=st.integers(min_value=1, max_value=50),
)
def test_any_row_is_read_left_out_with_a_report_or_refused_never_a_traceback(
    tmp_path_factory: pytest.TempPathFactory, row: list[str], at: int
) -> None:
    folder = tmp_path_factory.mktemp("ed")
    shutil.copy(ED_FIXTURE / "test.csv", folder / "test.csv")
    lines = (folder / "test.csv").read_text().split("\n")
    lines.insert(min(at, len(lines)), ",".join(row))
    (folder / "test.csv").write_text("\n".join(lines))
    try:
        items, _ = read_ed(folder)
    except DataError as exc:
        assert str(exc)
        return
    assert all(i.client_utterance and i.reference_reply and i.split == "test" for i in items)
    assert len({i.item_id for i in items}) == len(items)


def test_a_tarball_member_is_read_only_when_it_is_a_regular_split_file(tmp_path: Path) -> None:
    path = tmp_path / "odd.tar"
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("empatheticdialogues/test.csv")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
        data = (ED_FIXTURE / "valid.csv").read_bytes()
        member = tarfile.TarInfo("empatheticdialogues/valid.csv")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    items, report = read_ed(path)
    assert {i.split for i in items} == {"validation"} and "test.csv" not in report.files


def test_lm_eval_validate_accepts_the_ed_group_and_task() -> None:
    import subprocess
    import sys

    from tide_bench.tasks.registry import tasks_path

    proc = subprocess.run(
        [
            *(sys.executable, "-m", "lm_eval", "validate"),
            *("--tasks", "ed_empathy,ed_empathy_first_turn", "--include_path", str(tasks_path())),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "all tasks found and valid" in (proc.stdout + proc.stderr).lower()


def test_a_tarball_of_a_million_headers_is_refused_at_once(tmp_path: Path) -> None:
    """Found attacking the ED study's inputs (issue 43, item 7): a 1.8 MB tarball of 300,000 empty
    members took 20 s and 240 MB to be read before 'no split files'; members are now streamed and
    counted."""
    path = tmp_path / "bomb.tar.gz"
    info = tarfile.TarInfo("x")
    with tarfile.open(path, "w:gz") as tar:
        for i in range(5_000):
            info.name = f"x{i}"
            tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(DataError, match="more than 1000 members"):
        read_ed(path)
