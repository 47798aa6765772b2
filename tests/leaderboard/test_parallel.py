"""A board built by worker processes is the board built in one process, file for file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from tests.leaderboard_helpers import board, fake_judge, judged_submission, site_files
from tide_bench.leaderboard import build_site
from tide_bench.leaderboard import entries as entries_module
from tide_bench.leaderboard.entries import can_fork

pytestmark = pytest.mark.skipif(not can_fork(), reason="worker processes are forked; serial elsewhere")


@pytest.fixture(scope="module")
def submissions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two good entries, a refused folder, and two entries with the same replies (both refused
    only once the entries are compared, after their workers wrote their per-item files)."""
    tmp = tmp_path_factory.mktemp("parallel")
    with fake_judge() as server:
        judged_submission(tmp, server, "good", lambda i: f"Good [[SCORES:5,4,4]] {i.item_id}")
        judged_submission(tmp, server, "fair", lambda i: f"Fair [[SCORES:3,3,2]] {i.item_id}")
        twin = judged_submission(tmp, server, "twin-a", lambda i: f"Twin [[SCORES:2,2,2]] {i.item_id}")
    subs = tmp / "submissions"
    shutil.copytree(twin, subs / "twin-b")
    meta = yaml.safe_load((subs / "twin-b" / "submission.yaml").read_text())
    (subs / "twin-b" / "submission.yaml").write_text(yaml.safe_dump(meta | {"id": "twin-b", "model_name": "Twin B"}))
    shutil.copytree(subs / "good", subs / "broken")
    (subs / "broken" / "run" / "run.json").unlink()
    return subs


def test_workers_build_the_same_site_as_one_process(
    submissions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = build_site(submissions, tmp_path / "serial", board(), workers=1, allow_risk_gate_off=True)
    assert serial.accepted == ["good", "fair"] and set(serial.refused) == {"broken", "twin-a", "twin-b"}
    pids = tmp_path / "pids"
    validate = entries_module.validate_folder

    def spy(*args, **kwargs):  # inherited by the forked workers: records where each entry was prepared
        with pids.open("a") as handle:
            handle.write(f"{os.getpid()}\n")
        return validate(*args, **kwargs)

    monkeypatch.setattr(entries_module, "validate_folder", spy)
    seen: list[tuple[int, int]] = []
    parallel = build_site(
        submissions,
        tmp_path / "parallel",
        board(),
        workers=3,
        progress=lambda d, t: seen.append((d, t)),
        allow_risk_gate_off=True,
    )
    workers = set(pids.read_text().split())
    assert len(workers) >= 2 and str(os.getpid()) not in workers  # the entries were prepared in other processes
    assert seen[0] == (0, 5) and seen[-1] == (5, 5)
    assert parallel.accepted == serial.accepted and parallel.refused == serial.refused
    one, many = site_files(tmp_path / "serial"), site_files(tmp_path / "parallel")
    assert sorted(one) == sorted(many) and one == many
    # the refused entries' per-item files, written by their workers before the entries were compared, are gone
    assert not [f for f in many if "twin" in f or "broken" in f or "/.items-" in f]
    assert {"instances/items.js", "instances/good.js", "downloads/fair/items.csv"} <= set(many)


def test_a_board_without_accepted_entries_or_instances(submissions: Path, tmp_path: Path) -> None:
    only_refused = tmp_path / "refused"
    only_refused.mkdir()
    for name in ("twin-a", "twin-b", "broken"):
        shutil.copytree(submissions / name, only_refused / name)
    result = build_site(only_refused, tmp_path / "site", board(), workers=2, allow_risk_gate_off=True)
    assert result.accepted == [] and len(result.refused) == 3
    assert sorted(p.name for p in (tmp_path / "site" / "instances").iterdir()) == ["items.js"]
    assert not (tmp_path / "site" / "downloads").exists()
    plain = build_site(submissions, tmp_path / "plain", board(), workers=2, instances=False, allow_risk_gate_off=True)
    assert plain.accepted == ["good", "fair"]
    assert not (tmp_path / "plain" / "instances").exists() and not (tmp_path / "plain" / "downloads").exists()
