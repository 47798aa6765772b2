"""A submission folder, and ``tide-bench submit`` which makes one from a run directory.

Layout of ``leaderboard/submissions/<id>/``::

    submission.yaml          metadata (schema: leaderboard/schema/submission.schema.json)
    run/run.json             the run manifest, unchanged
    run/lm_eval/...          lm-eval's results and samples files, unchanged
    judge/judgments.jsonl    the per-item judgments (scored or unscored)
    judge/judge_config.json  the judge configuration and its version
    judge/judge_summary.json the judge's own summary (checked against the recomputation)
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.jsonio import atomic_write_text, read_json
from tide_bench.generation.run_dir import MANIFEST_NAME, Generation

META = "submission.yaml"
RUN = "run"
JUDGE = "judge"
JUDGE_FILES = ("judgments.jsonl", "judge_config.json", "judge_summary.json")


@dataclass
class Submission:
    """What the leaderboard reads from one folder (after validation)."""

    id: str
    root: Path
    meta: dict[str, Any]
    manifest: dict[str, Any]
    generations: list[Generation]
    judgments: dict[str, dict[str, Any]] = field(default_factory=dict)
    judge: dict[str, Any] | None = None


def read_meta(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError("file not found", path=path, hint=f"every submission needs a {META}") from None
    except UnicodeDecodeError:
        raise DataError("not valid UTF-8", path=path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DataError(f"malformed YAML: {getattr(exc, 'problem', exc)}", path=path, line=(mark.line + 1) if mark else None) from None


def create_submission(run_dir: str | Path, meta_path: str | Path, out: str | Path, *, judge_dir: str | Path | None = None, overwrite: bool = False) -> Path:
    """Copy a run (and its judge directory) with its metadata into ``out/<id>/``."""
    run_dir = Path(run_dir)
    meta = read_meta(Path(meta_path))
    if not isinstance(meta, dict) or not isinstance(meta.get("id"), str):
        raise DataError("needs an 'id' (the submission folder name)", path=meta_path, field="id")
    if not (run_dir / MANIFEST_NAME).is_file():
        raise DataError(f"no {MANIFEST_NAME}: not a finished tide-bench run", path=run_dir)
    manifest = read_json(run_dir / MANIFEST_NAME, DataError)
    target = Path(out) / meta["id"]
    if target.exists():
        if not overwrite:
            raise ConfigError(f"submission {meta['id']!r} already exists in {out}", hint="choose another id, or pass --overwrite to replace your own entry")
        shutil.rmtree(target)
    staging = Path(out) / f".{meta['id']}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / RUN).mkdir(parents=True)
    shutil.copy2(run_dir / MANIFEST_NAME, staging / RUN / MANIFEST_NAME)
    files = manifest.get("files") or {}
    for rel in [files.get("results"), *(files.get("samples") or {}).values()]:
        if rel:
            dest = staging / RUN / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(run_dir / rel, dest)
    judge_src = Path(judge_dir) if judge_dir else run_dir / JUDGE
    if judge_src.is_dir() and (judge_src / "judgments.jsonl").is_file():
        (staging / JUDGE).mkdir()
        for name in JUDGE_FILES:
            if (judge_src / name).is_file():
                shutil.copy2(judge_src / name, staging / JUDGE / name)
    elif judge_dir:
        raise DataError("no judgments.jsonl in the judge directory", path=judge_src)
    atomic_write_text(staging / META, yaml.safe_dump(meta, sort_keys=False, allow_unicode=True))
    staging.rename(target)
    return target
