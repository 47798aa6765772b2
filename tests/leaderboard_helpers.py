"""Submissions for the leaderboard tests: judged runs on a TIDE stand-in, packaged by `submit`.

The only data here is tide-bench's synthetic sample, which a TIDE board refuses (as it
should). The stand-in is a copy of the sample with its persona metadata marked, so its
content (and split hash) differs from the sample's and it loads as a local snapshot, like
a real TIDE release would.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.data import TideItem, load_dataset
from tide_bench.data.sources import SAMPLE_DIR
from tide_bench.judging import judge_run, load_judge
from tide_bench.leaderboard import create_submission
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.metrics.reference import text_metrics

Reply = Callable[[TideItem], str] | str


def stand_in_dataset(root: Path) -> Path:
    """A local snapshot that is not the built-in sample (personas carry a 'release' field)."""
    target = root / "tide-stand-in"
    if not target.exists():
        shutil.copytree(SAMPLE_DIR, target)
        for path in (target / "metadata").glob("*.json"):
            meta = json.loads(path.read_text())
            meta.pop("_notice", None)
            path.write_text(json.dumps(meta | {"release": "test stand-in"}, indent=2))
    return target


def board(**kw: Any) -> BoardConfig:
    """A TIDE-like board (not a demo) for the stand-in: small spot check, no conversation count."""
    return BoardConfig(**({"spot_check_items": 4, "conversations_per_persona": None} | kw))


def tide_run(root: Path, reply: Reply, data_dir: Path, *, model_name: str = "org/model", num_parameters: int | None = 500_000_000) -> Path:
    """A finished run on the stand-in: make_run's files with the stand-in's provenance and the
    real text metrics (cosine similarity stays make_run's placeholder 0.5)."""
    dataset = load_dataset(str(data_dir))
    run = make_run(root, reply, items=dataset.items_for("test"), model_name=model_name, num_parameters=num_parameters)
    provenance = dataset.provenance("test")
    manifest = json.loads((run / "run.json").read_text())
    manifest["data"] = provenance
    (run / "run.json").write_text(json.dumps(manifest, indent=2))
    for rel in manifest["files"]["samples"].values():
        path = run / rel
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            row["doc"] |= {"split_sha256": provenance["split_sha256"], "tide_source": provenance["source"]}
            row |= text_metrics(row["filtered_resps"][0], row["doc"]["reference_reply"])
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def meta(sid: str, **kw: Any) -> dict[str, Any]:
    base = {"schema_version": 1, "id": sid, "model_name": f"Model {sid}", "model": {"hub_id": f"org/{sid}", "revision": "main"},
            "parameters": 500_000_000, "condition": "zero-shot", "license": "apache-2.0", "contact": "dev@example.org"}
    return base | kw


def judged_submission(tmp: Path, server: FakeLLMServer, sid: str, reply: Reply, *, out: Path | None = None, the_board: BoardConfig | None = None,
                      params: int = 500_000_000, **meta_kw: Any) -> Path:
    """Run, judge (fake server) and `submit` one entry; returns its submission folder."""
    run = tide_run(tmp / f"run-{sid}", reply, stand_in_dataset(tmp), model_name=f"org/{sid}", num_parameters=params)
    judge_run(run, run / "judge", load_judge("claude-sonnet", base_url=server.url, overrides={"backoff_base_s": 0.01}))
    meta_path = tmp / f"{sid}.yaml"
    meta_path.write_text(yaml.safe_dump(meta(sid, parameters=params, **meta_kw)))
    return create_submission(run, meta_path, out or tmp / "submissions", board=the_board or board(), spot_checks=False).folder
