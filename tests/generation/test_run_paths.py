"""Paths named in run records stay inside the run folder (issue 32, N11), and `tide-bench view`
refuses anything that is not a regular file or folder at once (N15).

Every command that reads a run (judge, view, annotate, audit) goes through
``tide_bench.generation.run_dir.load_run``: a ``files.samples`` or ``files.results`` path that is
absolute, climbs out with ``..`` or leads out through a link is refused, naming the field, and
the file outside is never opened (an audit hook records every open)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import make_run
from tests.leaderboard_helpers import record_opens
from tide_bench.core.errors import DataError, TideBenchError
from tide_bench.generation.run_dir import load_run


def _point_samples_at(run: Path, rel: str) -> None:
    manifest = json.loads((run / "run.json").read_text())
    manifest["files"]["samples"] = {"tide_empathy": rel}
    (run / "run.json").write_text(json.dumps(manifest))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A samples file outside the run folder (a copy of the run's own, so it would parse)."""
    run = make_run(tmp_path / "donor", "a reply")
    secret = tmp_path / "elsewhere" / "samples.jsonl"
    secret.parent.mkdir()
    secret.write_text(next((run / "lm_eval" / "fake").glob("*.jsonl")).read_text())
    return secret


@pytest.mark.parametrize("shape", ["absolute", "dotdot", "link", "backslash", "drive"])
def test_a_samples_path_outside_the_run_is_refused_unread(tmp_path: Path, outside: Path, shape: str) -> None:
    run = make_run(tmp_path / "run", "a reply")
    rel = {
        "absolute": str(outside),
        "dotdot": "../elsewhere/samples.jsonl",
        "link": "lm_eval/link.jsonl",
        "backslash": "..\\elsewhere\\samples.jsonl",
        "drive": "C:/elsewhere/samples.jsonl",
    }[shape]
    if shape == "link":
        (run / "lm_eval" / "link.jsonl").symlink_to(outside)
    _point_samples_at(run, rel)
    with record_opens() as opened, pytest.raises(DataError, match=r"files\.samples\.tide_empathy"):
        load_run(run)
    assert str(outside) not in opened and not any("elsewhere" in p for p in opened)


_PARTS = st.sampled_from(
    ["..", "../elsewhere", ".", "", "C:", "~", "lm_eval", "fake", "elsewhere", "samples.jsonl", "%2e"]
)


@settings(max_examples=80, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(parts=st.lists(_PARTS, min_size=1, max_size=5), sep=st.sampled_from(["/", "\\"]), lead=st.booleans())
def test_fuzzed_record_paths_never_read_outside(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str], sep: str, lead: bool
) -> None:
    root = tmp_path_factory.mktemp("paths")
    run = make_run(root / "run", "a reply")
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "samples.jsonl").write_text("{}\n")
    _point_samples_at(run, (sep if lead else "") + sep.join([*parts, "samples.jsonl"]))
    with record_opens() as opened, contextlib.suppress(TideBenchError):
        load_run(run)
    assert not any(Path(p).resolve().is_relative_to(root / "elsewhere") for p in opened if os.path.isabs(p))


def _within(seconds: float, fn, *args) -> BaseException | None:
    """Run ``fn`` in a thread; fail the test if it is still blocked after ``seconds``."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            fn(*args)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn.__name__} is still blocked after {seconds} s"
    return outcome[0]


@pytest.mark.parametrize("where", ["run_dir", "out", "view.html", "run.json", "samples", "judgments"])
def test_view_refuses_a_fifo_at_once(tmp_path: Path, where: str) -> None:
    from tide_bench.leaderboard.site.run_view import write_run_view

    run = make_run(tmp_path / "run", "a reply")
    out = None
    fifo = {
        "run_dir": tmp_path / "fifo-run",
        "out": tmp_path / "page.html",
        "view.html": run / "view.html",
        "run.json": run / "run.json",
        "samples": next((run / "lm_eval" / "fake").glob("*.jsonl")),
        "judgments": run / "judge" / "judgments.jsonl",
    }[where]
    fifo.parent.mkdir(parents=True, exist_ok=True)
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    target = fifo if where == "run_dir" else run
    if where == "out":
        out = fifo
    try:
        error = _within(10.0, write_run_view, target, out)
    finally:
        # unblock anything still waiting on the pipe (a writer end opened and closed)
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        os.close(fd)
    if where == "judgments":  # a judge folder without a regular judgments file: the view shows replies only
        assert error is None or isinstance(error, TideBenchError)
    else:
        assert isinstance(error, TideBenchError), error


def test_an_adapter_run_is_named_with_its_adapter_and_shows_no_local_path(tmp_path: Path) -> None:
    """U10 (new-user round 3): an adapter run looked exactly like its base model (eval's table
    header, the view's title), and the view's provenance showed the base model's absolute path."""
    from tide_bench.generation.results_table import results_table
    from tide_bench.leaderboard.site.run_view import write_run_view

    run = make_run(tmp_path / "run", "a reply", model_name="/home/me/.cache/tide-bench/models/SmolLM2-135M-Instruct")
    manifest = json.loads((run / "run.json").read_text())
    manifest["model"]["adapter"] = {
        "path": "/home/me/adapters/demo-lora",
        "sha256": "0123456789abcdef" * 4,
        "loaded_via": "peft",
        "card": {"base_model": "/home/me/.cache/tide-bench/models/SmolLM2-135M-Instruct", "data": {}, "training": {}},
    }
    (run / "run.json").write_text(json.dumps(manifest))
    label = "SmolLM2-135M-Instruct + adapter demo-lora (sha256 01234567)"
    assert results_table(manifest).startswith(label)
    page = write_run_view(run).read_text()
    assert f"<title>Run view: {label}</title>" in page and "/home/me" not in page
