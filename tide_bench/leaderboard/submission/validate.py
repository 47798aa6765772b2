"""Validation a maintainer can trust: every check names what is wrong, where, and what to fix.

Each submission is validated in isolation (a malformed one is refused; it never stops the
others), in this order, reading nothing it has not first checked:

1. The folder, with ``lstat`` only: a symbolic link, a device, too many files or bytes stop
   the check before any file is opened (:mod:`.folder`).
2. ``submission.yaml``: schema, id, honest display name (:mod:`.metadata`).
3. ``run.json`` and the samples through the typed readers (every field's type; paths
   confined to the folder): the board's split, no ``--limit``, not the synthetic sample; a
   prompt condition the board ranks, with the board's prompt hash for it, and every item's
   recorded prompt read back and compared with that prompt (:mod:`.prompt_check`); the
   reference run (condition ``reference``) is the anchor only if its replies are the data's
   references (:mod:`.reference_row`).
4. **The items themselves**: every persona hashes into the board's split (the persona-hash
   definition, recomputed), item ids are built from their parts, conversations are whole,
   and the split hash is *recomputed* from the submitted items and compared with the run's
   claim and the board's pin (rewritten client turns, histories or references are refused).
5. Reference metrics: ROUGE-L, distinct-n and length recomputed on every item; cosine
   similarity re-embedded on a random sample with the board's embedder (:mod:`.recompute`).
6. Judgments through the typed reader: one per item, one judge configuration (the board's),
   keys that match the submitted replies, and ``judge_summary.json`` compared field by field.
7. Metadata against the run (generation settings, parameters, hub id and revision), and no
   local path of the submitter's machine anywhere in the public files.

What validation cannot prove is that scores were not fabricated together with a consistent
summary: only re-judging can (docs/leaderboard.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from tide_bench.core.errors import ConfigError, DataError, TideBenchError
from tide_bench.core.hashing import sha256_json
from tide_bench.core.jsonio import read_bytes, read_json
from tide_bench.data.schema import make_item_id
from tide_bench.data.sources import load_dataset
from tide_bench.data.splits import split_of
from tide_bench.generation.reference import reference_label
from tide_bench.generation.run_manifest import MANIFEST_NAME, RunManifest, read_manifest
from tide_bench.generation.samples import TASK_PATTERN, TASK_PREFIX, DocMemo, Generation, read_generations
from tide_bench.judging.cache import judgment_key
from tide_bench.judging.judgment import Judgment, read_judgments
from tide_bench.judging.rubric import load_rubric
from tide_bench.judging.summary import is_model_failure, read_summary, summary_mismatches, unscored_reasons
from tide_bench.leaderboard.config import META_MAX_BYTES, REFERENCE_CONDITION, BoardConfig
from tide_bench.leaderboard.submission.admission import admission_errors
from tide_bench.leaderboard.submission.folder import FolderListing, FolderRefused, scan_folder
from tide_bench.leaderboard.submission.layout import (
    JUDGE_CONFIG,
    JUDGE_SUMMARY,
    JUDGMENTS,
    META,
    RUN,
    SAFE_ID,
    Submission,
    parse_meta,
    yaml_line,
)
from tide_bench.leaderboard.submission.local_paths import holds_local_path, local_path_fields
from tide_bench.leaderboard.submission.metadata import name_problem, run_problems, schema_problems, shown_generation
from tide_bench.leaderboard.submission.problems import Problem, relative
from tide_bench.leaderboard.submission.prompt_check import board_prompt_hash, prompt_problems
from tide_bench.leaderboard.submission.recompute import (
    SpotCheck,
    cosine_problems,
    embedding_spot_check,
    has_cosine,
    recompute_text_metrics,
)
from tide_bench.leaderboard.submission.reference_row import declares_reference, disguised_reference, reference_problems

MANIFEST = f"{RUN}/{MANIFEST_NAME}"
MAX_LISTED = 5
# The checked items of the submission read last: the next one (a board's entries answer the same items) reuses
# them where its doc blocks are equal (generation.samples.DocMemo). One per process: each build worker has its own.
_DOCS = DocMemo()


class _Stop(Exception):
    """A problem after which the remaining checks of this submission cannot run."""


@dataclass
class CheckResult:
    id: str
    folder: Path
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    submission: Submission | None = None
    spot_check: SpotCheck | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def errors(self) -> list[str]:
        return [str(p) for p in self.problems]

    def as_dict(self) -> dict[str, Any]:
        """The outcome as plain data (``leaderboard validate --json``): problems located by
        file, line and field inside the submission, as on the page."""
        return {
            "id": self.id,
            "ok": self.ok,
            "n_items": self.submission.n_items if self.submission else None,
            "problems": [dataclasses.asdict(p) for p in self.problems],
            "warnings": list(self.warnings),
            "spot_check": self.spot_check.as_dict() if self.spot_check else None,
            "seconds": round(self.seconds, 3),
        }

    def refuse(self, message: str, path: str | None = None, line: int | None = None, field: str | None = None) -> None:
        self.problems.append(Problem(message, path, line, field))
        self.submission = None

    def stop(self, message: str, path: str | None = None, line: int | None = None, field: str | None = None) -> None:
        self.refuse(message, path, line, field)
        raise _Stop


@lru_cache(maxsize=4)
def sample_split_hash(split: str) -> str:
    """The split hash of tide-bench's built-in synthetic sample (never a TIDE board's items)."""
    return load_dataset("sample").content_hash(split)


def item_ids_hash(ids: list[str]) -> str:
    return sha256_json(sorted(ids))


@lru_cache(maxsize=4)
def _data_pins(spec: str, split: str) -> tuple[str, int, str]:
    dataset = load_dataset(spec)
    items = dataset.items_for(split)
    return dataset.content_hash(split), len(items), item_ids_hash([i.item_id for i in items])


def effective_board(board: BoardConfig) -> BoardConfig:
    """The board with the item pins its ``data_source`` implies (as ``pin`` would write them):
    a board that can load its data is pinned to it. A pin that contradicts the data is a
    misconfigured board, refused loudly."""
    if not board.data_source:
        return board
    split_hash, n_items, ids_hash = _data_pins(board.data_source, board.split)
    for key, value in (("split_sha256", split_hash), ("n_items", n_items), ("item_ids_sha256", ids_hash)):
        pinned = getattr(board, key)
        if pinned is not None and pinned != value:
            raise ConfigError(
                f"pins {key} {str(pinned)[:16]}, but the board's data_source {board.data_source!r} gives "
                f"{str(value)[:16]}",
                path=board.source or None,
                field=key,
                hint="re-pin the board (tide-bench leaderboard pin) or correct data_source",
            )
    return dataclasses.replace(board, split_sha256=split_hash, n_items=n_items, item_ids_sha256=ids_hash)


def _confined(rel: str, listing: FolderListing, base: str) -> str | None:
    """The folder-relative path of ``rel`` (relative to ``base``) if it names a regular file
    of the submission (as listed by the scan), else None: absolute paths, ``..`` and links
    never reach a reader."""
    if not rel or rel.startswith(("/", "\\")) or "\\" in rel or ":" in rel:
        return None
    parts = PurePosixPath(rel).parts
    if not parts or ".." in parts:
        return None
    joined = PurePosixPath(base, *parts).as_posix()
    return joined if listing.has(joined) else None


def _meta(folder: Path, sid: str, result: CheckResult) -> tuple[dict[str, Any] | None, bool]:
    """The parsed metadata (None when unreadable) and whether it satisfies the schema."""
    path = folder / META
    try:
        meta, text = parse_meta(read_bytes(path, DataError, max_bytes=META_MAX_BYTES, follow_symlinks=False), path)
    except DataError as exc:
        problem = Problem.from_error(exc, folder)
        result.refuse(problem.message, problem.path, problem.line, problem.field)
        return None, False
    invalid = schema_problems(meta)
    for where, message in invalid:
        result.refuse(message, META, yaml_line(text, where), where)
    if not isinstance(meta, dict):
        return None, False
    if meta.get("id") != sid:
        result.refuse(f"must equal the folder name {sid!r}", META, yaml_line(text, "id"), "id")
    if isinstance(meta.get("model_name"), str) and (why := name_problem(meta["model_name"])):
        result.refuse(why, META, yaml_line(text, "model_name"), "model_name")
    return meta, not invalid


def _prompt_string(run: RunManifest, key: str) -> str | None:
    """A string field of run.json's ``prompt`` block, or None (absent, or not a string)."""
    prompt = run.raw.get("prompt") if isinstance(run.raw, dict) else None
    value = prompt.get(key) if isinstance(prompt, dict) else None
    return value if isinstance(value, str) else None


def _placement(run: RunManifest) -> str:
    """Where the run's system prompt went (``prompt.system_prompt_placement``; ``system`` when not recorded)."""
    value = _prompt_string(run, "system_prompt_placement")
    return "system" if value is None else value


def _prompt_checks(run: RunManifest, board: BoardConfig, result: CheckResult) -> None:
    """One prompt condition per board (unless the board lists several), with the board's prompt."""
    condition = run.prompt_condition
    if declares_reference(run):
        if condition != REFERENCE_CONDITION or run.model.is_reference is not True:
            result.refuse(
                "prompt.condition 'reference' and model.is_reference must go together (the reference run is made with "
                "`tide-bench eval --model reference`)",
                MANIFEST,
                field="prompt.condition",
            )
        return  # the board's anchor row, whatever its prompt: its replies are checked against the data instead
    listed = ", ".join(board.prompt_conditions)
    if condition is None:
        result.refuse(
            "run.json records no prompt condition: runs made before prompt conditions existed used the rubric-aware "
            "prompt (today's 'guided' condition); evaluate again with this tide-bench",
            MANIFEST,
            field="prompt.condition",
        )
    elif condition not in board.prompt_conditions:
        result.refuse(
            f"the run used the {condition!r} prompt condition; this board ranks {listed} runs only (prompt_conditions "
            "in the board file): runs of different conditions are not ranked together",
            MANIFEST,
            field="prompt.condition",
        )
    elif (placement := _placement(run)) not in ("system", "first_user_turn"):
        result.refuse(
            "the model never saw the task's system prompt (prompt.system_prompt_placement "
            f"{placement[:40]!r}): its chat template renders no system prompt, not even folded into the first user "
            "turn; such a run is not the board's prompt condition",
            MANIFEST,
            field="prompt.system_prompt_placement",
        )
    elif run.prompt_sha256 != (expected := board_prompt_hash(board, condition, placement)):
        shown = (run.prompt_sha256 or "none")[:12]
        result.refuse(
            f"the prompt hash {shown}... is not this board's {condition!r} prompt ({expected[:12]}...): the system "
            "prompt "
            "differs, or a --system-instruction was added; evaluate with the board's prompt and no extra instruction",
            MANIFEST,
            field="prompt.prompt_sha256",
        )


def _run_checks(run: RunManifest, meta: dict[str, Any] | None, board: BoardConfig, result: CheckResult) -> None:
    _prompt_checks(run, board, result)
    data = run.data
    if data.split != board.split:
        result.refuse(
            f"the run used split {data.split!r}; this leaderboard uses {board.split!r}: re-run with --split "
            f"{board.split}",
            MANIFEST,
            field="data.split",
        )
    if board.split_version and data.split_version != board.split_version:
        result.refuse(
            f"the run's split definition is {data.split_version!r}, the board's {board.split_version!r}",
            MANIFEST,
            field="data.split_version",
        )
    if run.generation.limit is not None:
        result.refuse("the run used --limit: submit a run over the whole split", MANIFEST, field="generation.limit")
    if not board.demo:
        if data.is_synthetic_sample is not False or data.source_kind == "sample":
            said = (
                "does not say whether the run used the synthetic sample"
                if data.is_synthetic_sample is None
                else "records a run on the built-in synthetic sample"
            )
            result.refuse(
                f"{MANIFEST_NAME} {said}: only runs on TIDE itself join this leaderboard",
                MANIFEST,
                field="data.is_synthetic_sample",
            )
        if meta and meta.get("demo") is True:
            result.refuse("demo entries (synthetic sample) cannot join this leaderboard", META, field="demo")


def _samples(
    folder: Path, run: RunManifest, listing: FolderListing, board: BoardConfig, result: CheckResult
) -> list[Generation]:
    confined = {}
    for task, rel in run.samples.items():
        if not task.startswith(TASK_PREFIX):
            result.stop(
                f"lists samples of a task that is not tide-bench's ({TASK_PATTERN})", MANIFEST, field="files.samples"
            )
        path = _confined(rel, listing, RUN)
        if path is None:
            result.stop(
                "names a file that is not a regular file inside the submission (absolute, '..', a link or missing)",
                MANIFEST,
                field=f"files.samples.{task}",
            )
        confined[task] = path
    gens = read_generations(folder, confined, max_bytes=board.max_bytes, follow_symlinks=False, memo=_DOCS)
    if not gens:
        result.stop("the run holds no replies", MANIFEST, field="files.samples")
    return gens


def _listed(result: CheckResult, problems: list[Problem], what: str) -> None:
    for p in problems[:MAX_LISTED]:
        result.refuse(p.message, p.path, p.line, p.field)
    if len(problems) > MAX_LISTED:
        result.refuse(f"{len(problems) - MAX_LISTED} more {what} (first {MAX_LISTED} listed)")


def _item_checks(
    gens: list[Generation], run: RunManifest, board: BoardConfig, folder: Path, result: CheckResult
) -> str:
    """Check the items against the split definition and the pins; return the recomputed split hash."""
    bad: list[Problem] = []
    conversations: dict[str, set[str]] = defaultdict(set)
    turns: dict[tuple[str, str], list[int]] = defaultdict(list)
    first: dict[str, Generation] = {}
    persona_split: dict[str, str] = {}
    for g in gens:
        first.setdefault(g.persona_id, g)
        first.setdefault(f"{g.persona_id}/{g.conversation_id}", g)
        if g.split != board.split:
            bad.append(
                Problem(
                    f"is {g.split!r}; this leaderboard uses {board.split!r}",
                    relative(g.file, folder),
                    g.line,
                    "doc.split",
                )
            )
        elif (
            board.split_version
            and (persona_split.get(g.persona_id) or persona_split.setdefault(g.persona_id, split_of(g.persona_id)))
            != board.split
        ):
            bad.append(
                Problem(
                    f"this persona belongs to the {persona_split[g.persona_id]} split by the persona-hash definition "
                    f"({board.split_version}), "
                    f"not {board.split}",
                    relative(g.file, folder),
                    g.line,
                    "doc.persona_id",
                )
            )
        if g.item_id != make_item_id(g.persona_id, g.conversation_id, g.turn):
            bad.append(
                Problem(
                    "is not <persona_id>/<conversation_id>/turn<turn> of the item's own fields",
                    relative(g.file, folder),
                    g.line,
                    "doc.item_id",
                )
            )
        if g.split_sha256 and g.split_sha256 != run.data.split_sha256:
            bad.append(
                Problem(
                    "differs from run.json's data.split_sha256: the samples and the manifest come from different runs",
                    relative(g.file, folder),
                    g.line,
                    "doc.split_sha256",
                )
            )
        conversations[g.persona_id].add(g.conversation_id)
        turns[(g.persona_id, g.conversation_id)].append(g.turn)
    _listed(result, bad, "item problems")
    for (persona, conversation), ks in sorted(turns.items()):
        if sorted(ks) != list(range(1, len(ks) + 1)):
            g = first[f"{persona}/{conversation}"]
            result.refuse(
                f"this item's conversation has turns {sorted(ks)}: every turn up to the last must be answered",
                relative(g.file, folder),
                g.line,
                "doc.conversation_id",
            )
            break
    if board.conversations_per_persona is not None:
        short = sorted(p for p, convs in conversations.items() if len(convs) != board.conversations_per_persona)
        if short:
            g = first[short[0]]
            result.refuse(
                f"{len(short)} persona(s) do not have the dataset's {board.conversations_per_persona} conversations "
                "(this item's "
                f"persona has {len(conversations[short[0]])}): evaluate every conversation of the split",
                relative(g.file, folder),
                g.line,
                "doc.persona_id",
            )
    n = len(gens)
    if run.data.n_items is not None and n != run.data.n_items:
        result.refuse(
            f"{n} replies for a split of {run.data.n_items} items: every item needs a reply",
            MANIFEST,
            field="data.n_items",
        )
    recomputed = _DOCS.split_hash(gens, run.data.split)  # split_content_hash, not again for the same items
    if recomputed != run.data.split_sha256:
        result.refuse(
            f"the submitted items hash to {recomputed[:16]}..., not to the run's {run.data.split_sha256[:16]}...: "
            "client turns, histories, "
            "references or personas differ from the data the run was made on",
            MANIFEST,
            field="data.split_sha256",
        )
    if board.split_sha256 and recomputed != board.split_sha256:
        result.refuse(
            f"the submitted items are not the board's dataset (recomputed split hash {recomputed[:16]}..., the board's "
            f"{board.split_sha256[:16]}...): evaluate on the pinned TIDE "
            f"release{f' ({board.dataset_release})' if board.dataset_release else ''}"
        )
    if board.n_items is not None and n != board.n_items:
        result.refuse(f"{n} items; the leaderboard's split has {board.n_items}")
    if board.item_ids_sha256 and item_ids_hash([g.item_id for g in gens]) != board.item_ids_sha256:
        result.refuse("the set of item ids differs from the leaderboard's split: evaluate on the pinned TIDE release")
    if not board.demo and recomputed == sample_split_hash(board.split):
        result.refuse(
            "these are the items of tide-bench's built-in synthetic sample, not TIDE: only runs on TIDE join this "
            "leaderboard"
        )
    return recomputed


def _reference_checks(
    gens: list[Generation], run: RunManifest, board: BoardConfig, folder: Path, result: CheckResult
) -> None:
    """The reference row is derived: a declared one must hold the data's references item for
    item, and replies that are all the references must be declared as the reference row."""
    if declares_reference(run):
        _listed(result, reference_problems(gens, board, folder), "reference problems")
    elif problem := disguised_reference(gens, folder):
        result.refuse(problem.message, problem.path, problem.line, problem.field)


def _judgments(
    folder: Path, listing: FolderListing, gens: list[Generation], board: BoardConfig, result: CheckResult
) -> list[Judgment]:
    if not listing.has(JUDGMENTS):
        if board.require_judgments:
            result.refuse(
                "is missing: run `tide-bench judge` on the run and submit with its judge directory", JUDGMENTS
            )
        return []
    rubric = load_rubric()
    judgments = read_judgments(folder / JUDGMENTS, rubric, max_bytes=board.max_bytes, follow_symlinks=False)
    gens_by_id = {g.item_id: g for g in gens}
    judged = {j.item_id: j for j in judgments}
    missing, extra = sorted(set(gens_by_id) - set(judged)), [j for j in judgments if j.item_id not in gens_by_id]
    if missing:
        result.refuse(
            f"{len(missing)} item(s) have a reply but no judgment (scored or unscored), e.g. {missing[:3]}: judge "
            "every item",
            JUDGMENTS,
        )
    if extra:
        result.refuse(
            "judges an item that is not in the run: submit the run that was judged", JUDGMENTS, extra[0].line, "item_id"
        )
    versions = Counter(j.judge.version for j in judgments)
    if len(versions) > 1:
        result.refuse(
            f"judgments from {len(versions)} judge configurations ({', '.join(sorted(versions))}): judge the whole "
            "run with one",
            JUDGMENTS,
            field="judge.version",
        )
    version = judgments[0].judge.version if judgments else None
    rubrics = sorted({str(j.judge.rubric) for j in judgments})
    if board.judge_rubric and judgments and rubrics != [board.judge_rubric]:
        result.refuse(
            f"judged with rubric {', '.join(rubrics)}, but this leaderboard uses {board.judge_rubric} (judge_rubric): "
            "re-judge with the board's rubric",
            JUDGMENTS,
            judgments[0].line,
            "judge.rubric",
        )
    if board.judge_version and version and version != board.judge_version:
        result.refuse(
            f"judged with configuration {version}, but this leaderboard uses {board.judge_version}: mixing judges is "
            "refused; "
            "re-judge with the board's judge",
            JUDGMENTS,
            judgments[0].line,
            "judge.version",
        )
    matched = [j for j in judgments if j.item_id in gens_by_id]
    stale = [j for j in matched if j.key != judgment_key(j.judge.version, gens_by_id[j.item_id])]
    if stale and len(stale) == len(matched):
        result.refuse(
            "none of the judgments match the submitted replies: these judgments were made for other replies (another "
            "run?)",
            JUDGMENTS,
            stale[0].line,
            "key",
        )
    elif stale:
        result.refuse(
            f"{len(stale)} judgment(s) do not match the submitted reply or context (first: {stale[0].item_id}): these "
            "judgments were made for other replies (another run, or replies changed after judging); re-judge this run",
            JUDGMENTS,
            stale[0].line,
            "key",
        )
    if not listing.has(JUDGE_SUMMARY):
        result.refuse(
            "is missing: submit the judge directory `tide-bench judge` wrote, with its summary", JUDGE_SUMMARY
        )
    else:
        summary = read_summary(
            folder / JUDGE_SUMMARY, rubric.factor_keys, max_bytes=board.max_bytes, follow_symlinks=False
        )
        for mismatch in summary_mismatches(summary, judgments, rubric.factor_keys, rubric.scale_min):
            name, _, detail = mismatch.partition(": ")
            result.refuse(f"{detail}: submit the files `tide-bench judge` wrote, unedited", JUDGE_SUMMARY, field=name)
    return judgments


def _admission(judgments: list[Judgment], n_items: int, board: BoardConfig, result: CheckResult) -> None:
    """Items unscored for reasons that are not the model's are left out of the means, so they
    could hide its weakest replies: above the board's share the entry is refused."""
    unscored = [j.as_record() for j in judgments if j.status == "unscored"]
    n_infrastructure = sum(1 for r in unscored if not is_model_failure(r))
    row = {
        "n_items": n_items,
        "n_infrastructure_unscored": n_infrastructure,
        "infrastructure_unscored_rate": n_infrastructure / n_items if n_items else None,
        "unscored_reasons": unscored_reasons(unscored),
    }
    for message in admission_errors(row, max_infrastructure_unscored=board.max_infrastructure_unscored):
        result.refuse(message, JUDGMENTS, field="unscored_kind")


def _judge_config(
    folder: Path, listing: FolderListing, version: str | None, board: BoardConfig, result: CheckResult
) -> Any:
    if not listing.has(JUDGE_CONFIG):
        return None
    config = read_json(folder / JUDGE_CONFIG, DataError, max_bytes=board.max_bytes, follow_symlinks=False)
    if not isinstance(config, dict):
        result.refuse("must be a JSON object", JUDGE_CONFIG, field="(top level)")
        return None
    if version and config.get("version") != version:
        result.refuse(f"names another configuration than the judgments ({version})", JUDGE_CONFIG, field="version")
    return config


def _local_paths(
    folder: Path, listing: FolderListing, documents: dict[str, Any], gens: list[Generation], result: CheckResult
) -> None:
    found = [
        Problem("is named after a local path of the submitter's machine", rel)
        for rel in listing.files
        if holds_local_path(rel)
    ]
    for name, doc in documents.items():
        found += [
            Problem("holds a local path of the submitter's machine", name, field=f) for f in local_path_fields(doc)
        ]
    g = next((g for g in gens if holds_local_path(g.tide_source)), None)
    if g is not None:
        found.append(
            Problem(
                "holds a local path of the submitter's machine", relative(g.file, folder), g.line, "doc.tide_source"
            )
        )
    for p in found[:MAX_LISTED]:
        result.refuse(
            f"{p.message}: submissions are public; package the run with `tide-bench submit`, which redacts such paths",
            p.path,
            p.line,
            p.field,
        )


def _results_file(
    folder: Path, run: RunManifest, listing: FolderListing, board: BoardConfig, result: CheckResult
) -> tuple[str, Any] | None:
    if not run.results_file:
        return None
    rel = _confined(run.results_file, listing, RUN)
    if rel is None:
        result.refuse("names a file that is not a regular file inside the submission", MANIFEST, field="files.results")
        return None
    return rel, read_json(folder / rel, DataError, max_bytes=board.max_bytes, follow_symlinks=False)


def _validate(
    folder: Path,
    sid: str,
    board: BoardConfig,
    result: CheckResult,
    spot_checks: bool,
    seed: int | None,
    text_metrics: bool,
) -> None:
    if not SAFE_ID.match(sid):
        result.refuse(f"folder name {sid!r} is not a safe id: use lowercase letters, digits, '.', '_', '-' (max 64)")
    listing = scan_folder(folder, max_bytes=board.max_bytes, max_files=board.max_files)
    meta, meta_valid = _meta(folder, sid, result)
    if not listing.has(MANIFEST):
        result.stop(f"file not found: a submission holds the run's {MANIFEST_NAME}", MANIFEST)
    run = read_manifest(folder / MANIFEST, max_bytes=board.max_bytes, follow_symlinks=False)
    _run_checks(run, meta, board, result)
    gens = _samples(folder, run, listing, board, result)
    split_hash = _item_checks(gens, run, board, folder, result)
    _reference_checks(gens, run, board, folder, result)
    results = _results_file(folder, run, listing, board, result)
    if not declares_reference(run) and run.prompt_condition in board.prompt_conditions:
        template = results[1].get("chat_template") if results and isinstance(results[1], dict) else None
        problems = prompt_problems(
            gens,
            run.prompt_condition,
            board,
            folder,
            template if isinstance(template, str) else None,
            _prompt_string(run, "system_instruction"),
            placement=_placement(run),
        )
        _listed(result, problems, "prompt problems")
    metric_problems: list[Problem] = []
    if text_metrics:
        gens, metric_problems = recompute_text_metrics(gens, folder)
    _listed(result, metric_problems + cosine_problems(gens, folder), "metric problems")
    if run.embedding_model and run.embedding_model != board.embedding_model and has_cosine(gens):
        result.refuse(
            f"the run's cosine similarity used another embedding model than the board's ({board.embedding_model})",
            MANIFEST,
            field="reference_metrics.method.embedding_model",
        )
    judgments = _judgments(folder, listing, gens, board, result)
    _admission(judgments, len(gens), board, result)
    config = _judge_config(folder, listing, judgments[0].judge.version if judgments else None, board, result)
    documents = {META: meta, MANIFEST: run.raw}
    if results:
        documents[results[0]] = results[1]
    if config is not None:
        documents[JUDGE_CONFIG] = config
    _local_paths(folder, listing, documents, gens, result)
    if meta is not None and meta_valid:  # the comparison with the run needs the schema's types
        problems, warnings = run_problems(meta, run, demo_board=board.demo)
        for where, message in problems:
            result.refuse(message, META, field=where)
        result.warnings += warnings
    if result.problems:
        return
    if spot_checks:
        result.spot_check, problems = embedding_spot_check(
            gens, board.spot_check_items, board.embedding_model, folder, seed
        )
        _listed(result, problems, "cosine mismatches")
        if result.problems:
            return
    assert meta is not None
    shown = dict(meta) | {"generation": shown_generation(run)}
    if declares_reference(run):  # the anchor is named after its data, whatever submission.yaml says
        shown["model_name"] = reference_label(
            run.data.source, is_sample=run.data.is_synthetic_sample, release=board.dataset_release
        )
    result.submission = Submission(
        sid,
        folder,
        shown,
        run.raw,
        gens,
        judgments={j.item_id: j.as_record() for j in judgments},
        judge=judgments[0].judge.as_dict() if judgments else None,
        run=run,
        records={j.item_id: j for j in judgments},
        split_hash=split_hash,
        served_models=tuple(sorted({j.served_model for j in judgments if j.served_model})),
    )


def validate_folder(
    folder: str | Path,
    board: BoardConfig,
    *,
    spot_checks: bool = True,
    seed: int | None = None,
    folder_id: str | None = None,
    text_metrics: bool = True,
) -> CheckResult:
    """Validate one submission folder on its own.

    ``text_metrics`` recomputes ROUGE-L, distinct-n and length on every item (about 0.2 ms an
    item; ``build`` leaves it to ``validate``, which CI runs on the same files);
    ``spot_checks`` runs the embedding spot check, and ``seed`` repeats a previous draw.
    ``folder_id`` is the id the folder will have (``submit`` validates a staging copy).
    """
    folder = Path(folder)
    board = effective_board(board)
    sid = folder_id or folder.name
    result = CheckResult(sid, folder)
    t0 = time.perf_counter()
    try:
        _validate(folder, sid, board, result, spot_checks, seed, text_metrics)
    except _Stop:
        pass
    except FolderRefused as exc:
        result.refuse(exc.detail)
    except DataError as exc:
        problem = Problem.from_error(exc, folder)
        result.refuse(problem.message, problem.path, problem.line, problem.field)
    result.seconds = time.perf_counter() - t0
    return result


def looks_like_run(folder: Path) -> bool:
    return (folder / MANIFEST_NAME).is_file() and not (folder / META).exists()


def submission_folders(folder: str | Path) -> list[Path]:
    """The submission folders ``folder`` holds, in name order: itself when it is one submission,
    else its sub-folders (hidden ones left out). A run directory or a file is refused."""
    folder = Path(folder)
    if looks_like_run(folder):
        raise TideBenchError(
            f"{folder} is a run directory, not a submission",
            hint=f"package it first: tide-bench submit {folder} --meta submission.yaml --out leaderboard/submissions/",
        )
    if (folder / META).exists() or (folder / META).is_symlink():
        return [folder]
    if not folder.is_dir():
        raise TideBenchError(f"not a folder: {folder}")
    return [p for p in sorted(folder.iterdir()) if (p.is_dir() or p.is_symlink()) and not p.name.startswith(".")]


@contextlib.contextmanager
def no_gc_pauses() -> Iterator[None]:
    """Keep the cyclic garbage collector out of a batch load.

    Every accepted submission stays in memory until the site is built (a few hundred
    thousand small objects for 50 entries), and the collector re-scans all of them again
    and again while more arrive: a quarter of the build's validation time, measured (and
    1.5 s of a 50-entry build when left on for the scoring, diagnostics and site). The loaded
    objects form no reference cycles; the few cycles made meanwhile (a matplotlib figure) are
    collected when the collector runs again as usual afterwards. Also a decorator.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
