"""``tide-bench submit``: package a judged run as a submission folder, validated before it exists.

Order matters, because the target is a folder of other people's submissions:

1. ``submission.yaml`` is read and its ``id`` checked against the safe-id pattern before
   anything on disk is touched (an id of ``""``, ``.`` or ``../x`` can never name the
   submissions folder itself or a folder outside it).
2. The run's files are copied into a private staging folder inside ``--out`` (a dot-folder,
   which ``validate`` and ``build`` skip); only files the manifest names, confined to the
   run directory and read as regular files. Local paths are redacted on the way
   (:mod:`.local_paths`): a submission is public.
3. The staging folder is validated exactly as CI will validate it: the one check list of
   :mod:`.accept`, with the entries already in ``--out``. A refusal removes the staging
   folder: a refused ``submit`` leaves nothing behind.
4. Only then is the folder moved into place; with ``overwrite``, the previous entry of the
   same id is swapped out and removed after the new one is in place.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from tide_bench.core.atomic_dir import make_public, replace_folder
from tide_bench.core.errors import ConfigError, DataError, TideBenchError
from tide_bench.core.jsonio import atomic_write_bytes, atomic_write_text, iter_jsonl, read_bytes, read_json
from tide_bench.core.paths import missing_folders, remove_empty_folders
from tide_bench.core.resources import resource_dir
from tide_bench.core.secrets import redact_record
from tide_bench.core.yaml_io import load_yaml
from tide_bench.generation.run_manifest import MANIFEST_NAME, read_manifest
from tide_bench.judging.files import JUDGMENTS_FILE
from tide_bench.leaderboard.config import META_MAX_BYTES, BoardConfig, load_board
from tide_bench.leaderboard.submission.accept import check_new
from tide_bench.leaderboard.submission.layout import (
    JUDGE,
    JUDGE_FILES,
    META,
    RISK_SUPPLEMENT,
    RUN,
    SAFE_ID,
    SAMPLES_DIR,
    SEEKER_DIR,
    parse_meta,
)
from tide_bench.leaderboard.submission.local_paths import redact, redact_folder_name
from tide_bench.leaderboard.submission.result import CheckResult


class SubmissionRefused(TideBenchError):
    """Validation refused the packaged submission; nothing was written."""

    def __init__(self, check: CheckResult) -> None:
        self.check = check
        listed = "\n".join(f"  - {e}" for e in check.errors)
        super().__init__(
            f"submission {check.id!r} refused; nothing was written:\n{listed}",
            hint="fix the metadata file (or the run) and run `tide-bench submit` again",
        )


def default_board(meta: dict[str, Any]) -> BoardConfig:
    """The shipped demo board for metadata marked ``demo: true``, else the shipped TIDE board."""
    return load_board(resource_dir("leaderboard") / "demo.yaml") if meta.get("demo") is True else load_board()


def default_board_for(folders: list[Path]) -> BoardConfig:
    """The board ``submit`` would have checked these submission folders against: the demo board
    when every one's ``submission.yaml`` says ``demo: true``, else the TIDE board (also when a
    file cannot be read: validation then names the problem)."""
    demo = bool(folders)
    for folder in folders:
        meta_path = folder / META
        try:
            if meta_path.is_symlink() or not meta_path.is_file():
                return load_board()
            meta, _ = parse_meta(read_bytes(meta_path, DataError, max_bytes=META_MAX_BYTES), meta_path)
        except TideBenchError:
            return load_board()
        demo = demo and isinstance(meta, dict) and meta.get("demo") is True
    return default_board({"demo": demo})


def _read_meta(meta_path: Path) -> tuple[dict[str, Any], str]:
    meta, text = parse_meta(read_bytes(meta_path, DataError, max_bytes=META_MAX_BYTES), meta_path)
    if not isinstance(meta, dict):
        raise DataError("must be a YAML mapping of submission fields", path=meta_path, field="(top level)")
    sid = meta.get("id")
    if not isinstance(sid, str) or not SAFE_ID.match(sid):
        raise DataError(
            "must be a safe id (the submission folder name): lowercase letters, digits, '.', '_', '-', at most 64",
            path=meta_path,
            field="id",
        )
    return meta, text


def _inside_run(run_dir: Path, rel: Any, what: str) -> Path:
    if not isinstance(rel, str) or not rel or Path(rel).is_absolute() or ".." in PurePosixPath(rel).parts:
        raise DataError(
            "must be a path inside the run directory (relative, no '..')", path=run_dir / MANIFEST_NAME, field=what
        )
    path = (run_dir / rel).resolve()
    if not path.is_relative_to(run_dir.resolve()):
        raise DataError("leads outside the run directory", path=run_dir / MANIFEST_NAME, field=what)
    return path


def published(value: Any) -> Any:
    """A record as a submission publishes it: credentials masked (:func:`redact_record`) and
    local paths redacted (:func:`.local_paths.redact`)."""
    return redact(redact_record(value))


def _copy_redacted_json(src: Path, dest: Path, max_bytes: int) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        dest, json.dumps(published(read_json(src, DataError, max_bytes=max_bytes)), indent=2, ensure_ascii=False) + "\n"
    )


def _copy_samples(src: Path, dest: Path, max_bytes: int) -> None:
    """Copy a samples file with its ``doc.tide_source`` redacted (the rest is left as written)."""
    lines = []
    for _, obj in iter_jsonl(src, DataError, max_bytes=max_bytes, allow_nan=True):
        doc = obj.get("doc") if isinstance(obj, dict) else None
        if isinstance(doc, dict) and isinstance(doc.get("tide_source"), str):
            doc["tide_source"] = redact(doc["tide_source"])
        lines.append(json.dumps(obj, ensure_ascii=False))
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(dest, "".join(line + "\n" for line in lines))


def _public_rel(rel: str) -> str:
    """A run-relative path with lm-eval's path-derived folder names cleaned."""
    return PurePosixPath(*(redact_folder_name(p) for p in PurePosixPath(rel).parts)).as_posix()


def _stage(run_dir: Path, judge_src: Path, staging: Path, board: BoardConfig) -> None:
    """Copy one judged run into ``staging/run`` and ``staging/judge`` as a submission holds it."""
    info = read_manifest(run_dir / MANIFEST_NAME, max_bytes=board.max_bytes)
    manifest = info.raw
    files = dict(manifest.get("files") or {})
    samples = {}
    for task, rel in info.samples.items():
        public = _public_rel(rel)
        _copy_samples(_inside_run(run_dir, rel, f"files.samples.{task}"), staging / RUN / public, board.max_bytes)
        samples[task] = public
    files["samples"] = samples
    if info.results_file:
        public = _public_rel(info.results_file)
        _copy_redacted_json(
            _inside_run(run_dir, info.results_file, "files.results"), staging / RUN / public, board.max_bytes
        )
        files["results"] = public
    atomic_write_text(
        staging / RUN / MANIFEST_NAME,
        json.dumps(published(manifest | {"files": files}), indent=2, ensure_ascii=False) + "\n",
    )
    if (judge_src / JUDGMENTS_FILE).is_file():
        copy_judge(judge_src, staging / JUDGE, board)


def copy_judge(judge_src: Path, dest: Path, board: BoardConfig) -> None:
    """A judge folder's submitted files into ``dest`` (judgments byte for byte, the JSON redacted)."""
    dest.mkdir()
    for name in JUDGE_FILES:
        if not (judge_src / name).is_file():
            continue
        if name.endswith(".jsonl"):  # judgments are copied byte for byte: their keys must still match
            atomic_write_bytes(dest / name, read_bytes(judge_src / name, DataError, max_bytes=board.max_bytes))
        else:
            _copy_redacted_json(judge_src / name, dest / name, board.max_bytes)


def _given(path: str, run_dir: Path, judge_src: Path) -> str | None:
    """The file the user passed for a staged run's ``run/run.json`` or ``judge/NAME``, else None."""
    if path == f"{RUN}/{MANIFEST_NAME}":
        return str(run_dir / MANIFEST_NAME)
    return str(judge_src / path[len(JUDGE) + 1 :]) if path.startswith(f"{JUDGE}/") else None


def _name_given_files(
    check: CheckResult,
    meta_path: Path,
    meta_text: str,
    runs: dict[str, tuple[Path, Path]],
) -> None:
    """Problems found in the staged copy, located in the files the user passed: ``my-model.yaml:11``,
    not the copy's ``submission.yaml:11`` (the copy's lines are the file's own unless local paths
    had to be redacted from it). ``runs``: the run and judge folders staged under each prefix ("" for
    the main run, ``risk_supplement/`` for the supplement)."""
    meta = str(meta_path) if redact_meta(meta_text) == meta_text else f"{meta_path} (its redacted copy)"
    for index, problem in enumerate(check.problems):
        path = problem.path or ""
        given = meta if path == META else None
        for prefix, (run_dir, judge_src) in sorted(runs.items(), key=lambda kv: -len(kv[0])):
            if given is None and path.startswith(prefix):
                given = _given(path[len(prefix) :], run_dir, judge_src)
        if given is not None:
            check.problems[index] = dataclasses.replace(problem, path=given)


def redact_meta(text: str) -> str:
    """``submission.yaml`` with credentials and local paths redacted (kept as written when it holds none)."""
    meta = load_yaml(text, error=DataError, aliases=False)
    clean = published(meta)
    return text if clean == meta else yaml.safe_dump(clean, sort_keys=False, allow_unicode=True)


def _judge_folder(run_dir: Path, judge_dir: str | Path | None) -> Path:
    """A finished run's judge folder (``judge_dir``, default ``run_dir/judge``), checked to exist."""
    if not (run_dir / MANIFEST_NAME).is_file():
        raise DataError(f"no {MANIFEST_NAME}: not a finished tide-bench run", path=run_dir)
    judge_src = Path(judge_dir) if judge_dir else run_dir / JUDGE
    if judge_dir and not (judge_src / JUDGMENTS_FILE).is_file():
        raise DataError("no judgments.jsonl in the judge directory", path=judge_src)
    return judge_src


def create_submission(
    run_dir: str | Path,
    meta_path: str | Path,
    out: str | Path,
    *,
    judge_dir: str | Path | None = None,
    overwrite: bool = False,
    board: BoardConfig | None = None,
    spot_checks: bool = True,
    seed: int | None = None,
    risk_supplement: str | Path | None = None,
    risk_supplement_judge: str | Path | None = None,
    seeker_judge: str | Path | None = None,
    samples: str | Path | None = None,
) -> CheckResult:
    """Copy a judged run with its metadata into ``out/<id>/`` if, and only if, it validates.

    Returns the accepted check (its ``folder`` is the new submission); raises
    :class:`SubmissionRefused` (nothing written) when validation refuses it. ``board``
    defaults to the shipped board (the demo board for ``demo: true`` metadata).
    ``risk_supplement``: the same model's judged run on the risk supplement (its judge folder
    ``risk_supplement_judge``, default its ``judge/``), staged as ``risk_supplement/``
    (:mod:`.supplement`). ``seeker_judge``: the run's judge folder with the seeker's view
    (``tide-bench judge RUN --rubric perceived``), staged as ``seeker_judge/`` (:mod:`.seeker`).
    ``samples``: a judged set of samples (``eval --samples K``, each sample judged into its
    ``judge/``), staged as ``samples/sample-N/`` (:mod:`.samples`).
    """
    run_dir, meta_path, out = Path(run_dir), Path(meta_path), Path(out)
    meta, text = _read_meta(meta_path)
    sid = meta["id"]
    board = board or default_board(meta)
    judge_src = _judge_folder(run_dir, judge_dir)
    runs = {"": (run_dir, judge_src)}
    if risk_supplement is not None:
        supplement = Path(risk_supplement)
        runs[f"{RISK_SUPPLEMENT}/"] = (supplement, _judge_folder(supplement, risk_supplement_judge))
    elif risk_supplement_judge is not None:
        raise ConfigError("--risk-supplement-judge goes with --risk-supplement")
    if samples is not None:
        from tide_bench.generation.sampled import read_samples_listing

        for sample in read_samples_listing(Path(samples)):
            runs[f"{SAMPLES_DIR}/{sample.name}/"] = (sample, _judge_folder(sample, None))
    target = out / sid
    if (target.exists() or target.is_symlink()) and not overwrite:
        raise ConfigError(
            f"submission {sid!r} already exists in {out}",
            hint="choose another id, or pass --overwrite to replace your own entry",
        )
    created = missing_folders(out)  # removed again if the submission is refused
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out, prefix=f".{sid}.staging-"))
    try:
        for prefix, (source, judged) in runs.items():
            _stage(source, judged, staging / prefix if prefix else staging, board)
        if seeker_judge is not None:
            copy_judge(_judge_folder(run_dir, seeker_judge), staging / SEEKER_DIR, board)
        atomic_write_text(staging / META, redact_meta(text))
        check = check_new(staging, sid, out, board, spot_checks=spot_checks, seed=seed)
        if not check.ok:
            _name_given_files(check, meta_path, text, runs)
            raise SubmissionRefused(check)
        make_public(staging)
        replace_folder(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        remove_empty_folders(created)
        raise
    check.folder = target
    if check.submission is not None:
        check.submission.root = target
    return check
