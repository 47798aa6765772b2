"""The leaderboard's file safety (issue 11, items 1, 5 and 8; issue 18, item 1): no command
deletes what it did not write, flagged files are never opened, outputs are readable by
others, and a public submission carries no local path of its author's machine."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.fakes.llm_server import FakeLLMServer
from tests.leaderboard_helpers import (
    board,
    edit_json,
    fake_judge,
    judged_submission,
    meta,
    record_opens,
    stand_in_dataset,
    tide_run,
)
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError
from tide_bench.judging import judge_run, load_judge
from tide_bench.leaderboard import SubmissionRefused, build_site, create_submission, validate_folder


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("files")
    with fake_judge("sk-test-files-000") as server:
        judged_submission(tmp, server, "model-a", lambda i: f"Steady reply [[SCORES:4,4,4]] {i.item_id}")
        judged_submission(tmp, server, "model-b", lambda i: f"Other reply [[SCORES:3,3,3]] {i.item_id}")
    yield tmp


@pytest.fixture
def subs(honest: Path, tmp_path: Path) -> Path:
    target = tmp_path / "leaderboard" / "submissions"
    shutil.copytree(honest / "submissions", target)
    return target


@pytest.fixture
def board_file(tmp_path: Path) -> Path:
    path = tmp_path / "leaderboard" / "board.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"spot_check_items": 4, "conversations_per_persona": None}))
    return path


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _build(*args: str) -> tuple[int, str]:
    """`tide-bench leaderboard build` of a TIDE-like board without risk labels (a banner, not a refusal)."""
    return _cli("leaderboard", "build", "--allow-risk-gate-off", *args)


def _submit(honest: Path, meta_path: Path, out: Path, *extra: str) -> tuple[int, str]:
    """`tide-bench submit` of the honest model-a run with the given metadata."""
    return _cli("submit", str(honest / "run-model-a"), "--meta", str(meta_path), "--out", str(out), *extra)


# --- 1. no command deletes what it did not write -------------------------------------------


def test_build_refuses_a_folder_it_did_not_write(subs: Path, tmp_path: Path, board_file: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("my precious notes")
    code, out = _build("--submissions", str(subs), "--out", str(docs), "--board", str(board_file))
    assert (
        code == 2
        and "not empty and was not written by `tide-bench leaderboard build`" in out
        and "Traceback" not in out
    )
    assert (docs / "notes.md").read_text() == "my precious notes" and sorted(p.name for p in docs.iterdir()) == [
        "notes.md"
    ]


@pytest.mark.parametrize("where", ["parent", "same", "dot", "board", "root"])
def test_build_refuses_an_out_that_holds_the_inputs(
    subs: Path, tmp_path: Path, board_file: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(subs.parent)
    out = {"parent": str(subs.parent), "same": str(subs), "dot": ".", "board": str(board_file.parent), "root": "/"}[
        where
    ]
    before = sorted(str(p) for p in subs.parent.rglob("*"))
    code, text = _build("--submissions", str(subs), "--out", out, "--board", str(board_file))
    assert code == 2 and "Traceback" not in text, text
    assert "contains the submissions folder" in text or "contains the board file" in text or "file-system root" in text
    assert sorted(str(p) for p in subs.parent.rglob("*")) == before


def test_build_replaces_its_own_site_atomically_and_only_its_own(subs: Path, tmp_path: Path, board_file: Path) -> None:
    site = tmp_path / "site"
    assert _build("--submissions", str(subs), "--out", str(site), "--board", str(board_file))[0] == 0
    assert (site / ".tide-bench-site").is_file()
    (site / "index.html").write_text("stale page")
    code, _ = _build("--submissions", str(subs), "--out", str(site), "--board", str(board_file))
    assert code == 0 and "stale page" not in (site / "index.html").read_text()  # replaced
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".site")]  # no staging left behind
    (site / "mine.txt").write_text("a user's file dropped into the site")
    code, text = _build("--submissions", str(subs), "--out", str(site), "--board", str(board_file))
    assert code == 2 and "holds files the previous build did not write (mine.txt)" in text
    assert (site / "mine.txt").is_file()


@pytest.mark.parametrize("bad_id", ["", ".", "..", "../x", "a/b"])
def test_submit_overwrite_with_a_bad_id_touches_nothing(subs: Path, tmp_path: Path, honest: Path, bad_id: str) -> None:
    before = sorted(str(p) for p in subs.parent.rglob("*"))
    meta_path = tmp_path / "bad.yaml"
    meta_path.write_text(yaml.safe_dump(meta("model-a") | {"id": bad_id}))
    code, text = _submit(honest, meta_path, subs, "--overwrite", "--no-embedding-check")
    assert code == 2 and "field 'id': must be a safe id" in text and "Traceback" not in text
    assert sorted(str(p) for p in subs.parent.rglob("*")) == before


def test_a_refused_submit_leaves_nothing_behind(subs: Path, tmp_path: Path, honest: Path, board_file: Path) -> None:
    before = sorted(str(p) for p in subs.parent.rglob("*") if "board.yaml" not in str(p))
    meta_path = tmp_path / "bad.yaml"
    meta_path.write_text(yaml.safe_dump(meta("brand-new") | {"license": 7}))
    code, text = _submit(honest, meta_path, subs, "--board", str(board_file), "--no-embedding-check")
    # the error names the file the user passed (issue 34.9), not the name it is stored under
    assert code == 2 and "REFUSED  brand-new" in text and "bad.yaml:4" in text and "nothing was written" in text
    assert sorted(str(p) for p in subs.parent.rglob("*") if "board.yaml" not in str(p)) == before


def test_overwrite_replaces_an_entry_only_after_the_new_one_validates(
    subs: Path, tmp_path: Path, honest: Path, board_file: Path
) -> None:
    meta_path = tmp_path / "a.yaml"
    meta_path.write_text(yaml.safe_dump(meta("model-a") | {"model_name": "Model A, second try"}))
    code, text = _submit(honest, meta_path, subs, "--board", str(board_file), "--overwrite", "--no-embedding-check")
    assert code == 0, text
    assert "second try" in (subs / "model-a" / "submission.yaml").read_text()
    assert sorted(p.name for p in subs.iterdir()) == ["model-a", "model-b"]


def test_submit_confines_the_runs_sample_paths(tmp_path: Path, honest: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(honest / "run-model-a", run)
    outside = tmp_path / "outside.jsonl"
    shutil.copy(samples_files_of_run(run)[0], outside)
    edit_json(
        run / "run.json",
        lambda m: m["files"]["samples"].update({next(iter(m["files"]["samples"])): "../outside.jsonl"}),
    )
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(meta("model-a")))
    with pytest.raises(Exception, match=r"must be a path inside the run directory"):
        create_submission(run, tmp_path / "m.yaml", tmp_path / "out", board=board(), spot_checks=False)
    assert not (tmp_path / "out" / "model-a").exists() and not list((tmp_path / "out").glob(".*"))


def samples_files_of_run(run: Path) -> list[Path]:
    manifest = json.loads((run / "run.json").read_text())
    return [run / rel for rel in manifest["files"]["samples"].values()]


# --- 5. never open what was flagged ----------------------------------------------------------


def test_symlinked_metadata_is_refused_unread_and_never_published(subs: Path, tmp_path: Path) -> None:
    secret = tmp_path / "credentials"
    secret.write_text("https://ci-bot:ghp_FAKETOKEN0123456789@github.com\n")
    meta_file = subs / "model-b" / "submission.yaml"
    meta_file.unlink()
    meta_file.symlink_to(secret)
    with record_opens() as opened:
        check = validate_folder(subs / "model-b", board(), spot_checks=False)
    assert check.errors == ["submission.yaml is a symbolic link: submit regular files only (nothing was read)"]
    assert str(secret) not in opened and not any(o.endswith("submission.yaml") for o in opened)
    result = build_site(subs, tmp_path / "site", board(), allow_risk_gate_off=True)
    assert result.accepted == ["model-a"]
    for path in (tmp_path / "site").rglob("*"):
        assert path.is_dir() or "ghp_FAKETOKEN" not in path.read_text()


@pytest.mark.parametrize("kind", ["char-device", "fifo", "dev-zero-link"])
def test_device_or_pipe_is_refused_without_reading(subs: Path, kind: str) -> None:
    target = subs / "model-b" / "run" / "run.json"
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero-link":
        target.symlink_to("/dev/zero")
    else:
        try:
            os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers
        except PermissionError:
            pytest.skip("creating a device node needs CAP_MKNOD")
    with record_opens() as opened:
        check = validate_folder(subs / "model-b", board(), spot_checks=False)
    assert not check.ok and (
        "is a device, pipe or socket" in check.errors[0] or "is a symbolic link" in check.errors[0]
    )
    assert "/dev/zero" not in opened and str(target) not in opened


def test_oversize_file_is_refused_before_it_is_parsed(subs: Path) -> None:
    judgments = subs / "model-b" / "judge" / "judgments.jsonl"
    with judgments.open("a") as handle:
        handle.write(" " * 2_000_000 + "\n")
    with record_opens() as opened:
        check = validate_folder(subs / "model-b", board(max_submission_mb=1), spot_checks=False)
    assert check.errors and "over the 1 MB size limit" in check.errors[0]
    assert opened == []


def test_too_many_files_are_refused_unread(subs: Path) -> None:
    for k in range(30):
        (subs / "model-b" / f"extra-{k}.txt").write_text("x")
    with record_opens() as opened:
        check = validate_folder(subs / "model-b", board(max_files=20), spot_checks=False)
    assert "more than 20 files" in check.errors[0] and opened == []


# --- 8. readable outputs ----------------------------------------------------------------------


def test_outputs_get_the_usual_mode(subs: Path, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        build_site(subs, tmp_path / "site", board(), allow_risk_gate_off=True)
        from tide_bench.core.jsonio import write_json

        write_json(tmp_path / "x.json", {"a": 1})
    finally:
        os.umask(old)
    for path in [tmp_path / "x.json", tmp_path / "site", *(tmp_path / "site").rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o755 if path.is_dir() else 0o644), (path, oct(mode))
    for path in (subs / "model-a").rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) in (0o644, 0o755), path


# --- issue 18, item 1: no local paths in public files -----------------------------------------


def test_submission_from_a_temporary_home_holds_no_local_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-files-001")
    run = tide_run(
        home / "runs" / "my-model",
        lambda i: f"Reply [[SCORES:3,3,3]] {i.item_id}",
        stand_in_dataset(home),
        model_name="org/my-model",
    )
    # what a real run records: absolute paths in the command, the model args and lm-eval's folder name
    lm_dir = run / "lm_eval" / "fake"
    sanitized = run / "lm_eval" / f"__home__alice__models__{'my-model'}"
    lm_dir.rename(sanitized)
    edit_json(
        run / "run.json",
        lambda m: (
            m["files"].update(
                samples={
                    t: p.replace("lm_eval/fake", sanitized.relative_to(run).as_posix())
                    for t, p in m["files"]["samples"].items()
                }
            ),
            m.update(
                command=[
                    str(home / ".venv/bin/tide-bench"),
                    "eval",
                    "--data",
                    str(home / "TIDE"),
                    "--output-dir",
                    str(run),
                ]
            ),
            m["model"].update(args=f"pretrained=org/my-model,peft={home}/adapters/x"),
        ),
    )
    server = FakeLLMServer().start()
    try:
        judge_run(run, run / "judge", load_judge("claude-sonnet", base_url=server.url))
    finally:
        server.stop()
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(meta("my-model")))
    folder = create_submission(run, tmp_path / "m.yaml", tmp_path / "subs", board=board(), spot_checks=False).folder
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert str(tmp_path) not in text and "/home/alice" not in text and "__home__" not in text, path
    assert "<local>/tide-bench" in (folder / "run" / "run.json").read_text()


def test_validation_refuses_a_submission_that_still_holds_a_local_path(subs: Path) -> None:
    edit_json(
        subs / "model-b" / "run" / "run.json",
        lambda m: m.update(command=["tide-bench", "eval", "--output-dir", "/home/bob/runs/x"]),
    )
    errors = validate_folder(subs / "model-b", board(), spot_checks=False).errors
    assert any(
        "run/run.json, field 'command[3]': holds a local path of the submitter's machine" in e for e in errors
    ), errors


# --- CLI --------------------------------------------------------------------------------------


def test_validate_recognises_a_run_folder(honest: Path) -> None:
    code, text = _cli("leaderboard", "validate", str(honest / "run-model-a"))
    assert code == 2 and "is a run directory, not a submission" in text and "tide-bench submit" in text


def test_validate_reports_times_and_the_embedding_cost_separately(subs: Path, board_file: Path) -> None:
    code, text = _cli("leaderboard", "validate", str(subs), "--board", str(board_file), "--no-embedding-check")
    assert code == 0, text
    assert re.search(
        r"OK       model-a  \(\d+ items; checked in \d+\.\d s, of which 0\.0 s embedding; embedding spot check: not "
        r"run\)",
        text,
    ), text
    assert re.search(r"2 submission\(s\) in \d+\.\d s \(embedding spot checks: 0\.0 s of it\)", text), text


def test_unloadable_board_embedder_fails_loudly(subs: Path) -> None:
    with pytest.raises(ConfigError, match="could not be loaded, so the embedding spot check cannot run"):
        validate_folder(subs / "model-a", board(embedding_model="/nonexistent/embedder"))


def test_submit_refusal_is_an_exception_with_the_check(tmp_path: Path, honest: Path) -> None:
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(meta("model-a") | {"parameters": 7}))
    with pytest.raises(SubmissionRefused) as refused:
        create_submission(
            honest / "run-model-a", tmp_path / "m.yaml", tmp_path / "out", board=board(), spot_checks=False
        )
    assert any("field 'parameters': says 7" in e for e in refused.value.check.errors)
    assert not (tmp_path / "out" / "model-a").exists()


def test_validate_without_the_embedding_check_loads_no_model_library(subs: Path, board_file: Path) -> None:
    """Issue 18: torch and sentence-transformers load only for the embedding check; nltk (the
    stemmer of ROUGE-L) loads without dragging in scipy, scikit-learn or pandas."""
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom tide_bench.cli.main import cli\n"
        f"r = CliRunner().invoke(cli, ['leaderboard', 'validate', {str(subs)!r}, '--board', {str(board_file)!r}, "
        "'--no-embedding-check'])\n"
        "print(r.exit_code, sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'scipy', 'sklearn', "
        "'pandas') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=False,
    )
    assert done.stdout.strip() == "0 []", done.stdout + done.stderr


def test_validate_without_a_board_picks_the_demo_board_for_demo_entries_as_submit_does(tmp_path: Path) -> None:
    """U9 (new-user round 3): `submit` checked a `demo: true` entry against the demo board, and the
    README's next line, `leaderboard validate`, refused it against the TIDE board with no hint."""
    from click.testing import CliRunner

    from tide_bench.cli.main import cli
    from tide_bench.leaderboard.submission.submit import default_board_for

    for sid, demo in (("a", True), ("b", True), ("c", False)):
        (tmp_path / sid).mkdir()
        (tmp_path / sid / "submission.yaml").write_text(f"id: {sid}\ndemo: {str(demo).lower()}\n")
    assert default_board_for([tmp_path / "a", tmp_path / "b"]).demo
    assert not default_board_for([tmp_path / "a", tmp_path / "c"]).demo  # mixed: the TIDE board
    (tmp_path / "b" / "submission.yaml").write_text("id: [unclosed\n")
    assert not default_board_for([tmp_path / "a", tmp_path / "b"]).demo  # unreadable: validation names it
    out = CliRunner().invoke(cli, ["leaderboard", "validate", str(tmp_path / "a"), "--no-embedding-check"])
    assert "board: tide-bench demo leaderboard" in out.output and "Traceback" not in out.output
