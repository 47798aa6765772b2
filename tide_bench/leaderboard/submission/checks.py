"""The checks of one submission folder, one function per part (the order and what each reads:
:mod:`.validate`). Each records what it finds on the :class:`~.result.CheckResult`, located as
``file:line, field``; :meth:`~.result.CheckResult.stop` ends the folder's checks where the next
ones could not run."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path, PurePosixPath
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import read_bytes, read_json
from tide_bench.data.schema import make_item_id
from tide_bench.data.sources import split_content_hash
from tide_bench.data.splits import split_of
from tide_bench.generation.run_manifest import MANIFEST_NAME, RunManifest
from tide_bench.generation.samples import TASK_PATTERN, TASK_PREFIX, Generation, read_generations
from tide_bench.judging.cache import judgment_key
from tide_bench.judging.judgment import Judgment, read_judgments
from tide_bench.judging.rubric import load_rubric
from tide_bench.judging.summary import is_model_failure, read_summary, summary_mismatches, unscored_reasons
from tide_bench.leaderboard.config import META_MAX_BYTES, REFERENCE_CONDITION, BoardConfig
from tide_bench.leaderboard.submission.admission import admission_errors
from tide_bench.leaderboard.submission.data_pins import item_ids_hash, sample_split_hash
from tide_bench.leaderboard.submission.folder import FolderListing
from tide_bench.leaderboard.submission.layout import (
    JUDGE_CONFIG,
    JUDGE_SUMMARY,
    JUDGMENTS,
    META,
    RUN,
    parse_meta,
    yaml_line,
)
from tide_bench.leaderboard.submission.local_paths import holds_local_path, local_path_fields
from tide_bench.leaderboard.submission.metadata import name_problem, schema_problems
from tide_bench.leaderboard.submission.problems import Problem, relative
from tide_bench.leaderboard.submission.prompt_check import board_prompt_hash
from tide_bench.leaderboard.submission.reference_row import declares_reference, disguised_reference, reference_problems
from tide_bench.leaderboard.submission.result import CheckResult

MANIFEST = f"{RUN}/{MANIFEST_NAME}"

MAX_LISTED = 5
ALL_SPLITS = "all"  # a run over every item of its data (the risk supplement): items keep their own split


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


def check_meta(folder: Path, sid: str, result: CheckResult) -> tuple[dict[str, Any] | None, bool]:
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


def prompt_string(run: RunManifest, key: str) -> str | None:
    """A string field of run.json's ``prompt`` block, or None (absent, or not a string)."""
    prompt = run.raw.get("prompt") if isinstance(run.raw, dict) else None
    value = prompt.get(key) if isinstance(prompt, dict) else None
    return value if isinstance(value, str) else None


def system_prompt_placement(run: RunManifest) -> str:
    """Where the run's system prompt went (``prompt.system_prompt_placement``; ``system`` when not recorded)."""
    value = prompt_string(run, "system_prompt_placement")
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
    elif (placement := system_prompt_placement(run)) not in ("system", "first_user_turn"):
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


def check_prompt(run: RunManifest, board: BoardConfig, result: CheckResult) -> None:
    """The prompt checks of :func:`check_run` alone (a risk-supplement run has data checks of its own)."""
    _prompt_checks(run, board, result)


def check_run(run: RunManifest, meta: dict[str, Any] | None, board: BoardConfig, result: CheckResult) -> None:
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


def read_samples(
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
    gens = read_generations(folder, confined, max_bytes=board.max_bytes, follow_symlinks=False)
    if not gens:
        result.stop("the run holds no replies", MANIFEST, field="files.samples")
    return gens


def refuse_listed(result: CheckResult, problems: list[Problem], what: str) -> None:
    for p in problems[:MAX_LISTED]:
        result.refuse(p.message, p.path, p.line, p.field)
    if len(problems) > MAX_LISTED:
        result.refuse(f"{len(problems) - MAX_LISTED} more {what} (first {MAX_LISTED} listed)")


def _where(g: Generation, folder: Path) -> tuple[str | None, int | None]:
    """An item's ``file, line`` inside the submission: made only for an item with a problem (a
    path computation per item was a seventh of a build's validation)."""
    return relative(g.file, folder), g.line


def _item_problems(
    g: Generation, run: RunManifest, board: BoardConfig, folder: Path, persona_split: dict[str, str]
) -> list[Problem]:
    """One item's own fields against the board: its split (as recorded and by the persona-hash
    definition), its id built from its parts, and the run's split hash."""
    bad: list[Problem] = []
    if board.split != ALL_SPLITS and g.split != board.split:
        bad.append(Problem(f"is {g.split!r}; this leaderboard uses {board.split!r}", *_where(g, folder), "doc.split"))
    elif (
        board.split_version
        and (persona_split.get(g.persona_id) or persona_split.setdefault(g.persona_id, split_of(g.persona_id)))
        != board.split
    ):
        bad.append(
            Problem(
                f"this persona belongs to the {persona_split[g.persona_id]} split by the persona-hash definition "
                f"({board.split_version}), not {board.split}",
                *_where(g, folder),
                "doc.persona_id",
            )
        )
    if g.item_id != make_item_id(g.persona_id, g.conversation_id, g.turn):
        bad.append(
            Problem(
                "is not <persona_id>/<conversation_id>/turn<turn> of the item's own fields",
                *_where(g, folder),
                "doc.item_id",
            )
        )
    if g.split_sha256 and g.split_sha256 != run.data.split_sha256:
        bad.append(
            Problem(
                "differs from run.json's data.split_sha256: the samples and the manifest come from different runs",
                *_where(g, folder),
                "doc.split_sha256",
            )
        )
    return bad


def _whole(turns: list[int]) -> bool:
    """Whether a conversation's answered turns are 1..n, each once."""
    if len(turns) == 1:
        return turns[0] == 1
    return sorted(turns) == list(range(1, len(turns) + 1))


def _conversation_checks(gens: list[Generation], board: BoardConfig, folder: Path, result: CheckResult) -> None:
    """Conversations are whole (every turn up to the last answered) and, where the board says how
    many, every persona has all of its conversations. Each problem is shown on the first item
    (in file order) of the first conversation or persona by name."""
    groups: dict[tuple[str, str], list[Generation]] = defaultdict(list)  # in order of first appearance
    for g in gens:
        groups[(g.persona_id, g.conversation_id)].append(g)
    broken = [key for key, group in groups.items() if not _whole([g.turn for g in group])]
    if broken:
        group = groups[min(broken)]
        result.refuse(
            f"this item's conversation has turns {sorted(g.turn for g in group)}: every turn up to the last must be "
            "answered",
            relative(group[0].file, folder),
            group[0].line,
            "doc.conversation_id",
        )
    if board.conversations_per_persona is not None:
        conversations = Counter(persona for persona, _ in groups)
        short = sorted(p for p, n in conversations.items() if n != board.conversations_per_persona)
        if short:
            g = next(group[0] for (persona, _), group in groups.items() if persona == short[0])
            result.refuse(
                f"{len(short)} persona(s) do not have the dataset's {board.conversations_per_persona} conversations "
                "(this item's "
                f"persona has {conversations[short[0]]}): evaluate every conversation of the split",
                relative(g.file, folder),
                g.line,
                "doc.persona_id",
            )


def _split_hash_checks(gens: list[Generation], run: RunManifest, board: BoardConfig, result: CheckResult) -> str:
    """The split hash recomputed from the submitted items, against the run's claim and the board's
    pins (count, ids, not the built-in sample); returns it."""
    n = len(gens)
    if run.data.n_items is not None and n != run.data.n_items:
        result.refuse(
            f"{n} replies for a split of {run.data.n_items} items: every item needs a reply",
            MANIFEST,
            field="data.n_items",
        )
    recomputed = split_content_hash([g.item() for g in gens], run.data.split)
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


def check_items(gens: list[Generation], run: RunManifest, board: BoardConfig, folder: Path, result: CheckResult) -> str:
    """Check the items against the split definition and the pins; return the recomputed split hash."""
    persona_split: dict[str, str] = {}
    bad = [p for g in gens for p in _item_problems(g, run, board, folder, persona_split)]
    refuse_listed(result, bad, "item problems")
    _conversation_checks(gens, board, folder, result)
    return _split_hash_checks(gens, run, board, result)


def check_reference(
    gens: list[Generation], run: RunManifest, board: BoardConfig, folder: Path, result: CheckResult
) -> None:
    """The reference row is derived: a declared one must hold the data's references item for
    item, and replies that are all the references must be declared as the reference row."""
    if declares_reference(run):
        refuse_listed(result, reference_problems(gens, board, folder), "reference problems")
    elif problem := disguised_reference(gens, folder):
        result.refuse(problem.message, problem.path, problem.line, problem.field)


def _judge_identity_checks(judgments: list[Judgment], board: BoardConfig, result: CheckResult) -> None:
    """One judge configuration for the whole run, and the board's rubric and judge where it pins them."""
    judges = {id(j.judge): j.judge for j in judgments}.values()  # as a rule one identity, shared by every line
    versions = {judge.version for judge in judges}
    if len(versions) > 1:
        result.refuse(
            f"judgments from {len(versions)} judge configurations ({', '.join(sorted(versions))}): judge the whole "
            "run with one",
            JUDGMENTS,
            field="judge.version",
        )
    version = judgments[0].judge.version if judgments else None
    rubrics = sorted({str(judge.rubric) for judge in judges})
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


def check_judgments(
    folder: Path, listing: FolderListing, gens: list[Generation], board: BoardConfig, result: CheckResult
) -> tuple[list[Judgment], list[dict[str, Any]]]:
    """The judgments and their records (:meth:`~tide_bench.judging.judgment.Judgment.as_record`,
    in the same order: made once, for the summary check and the submission), with every check
    of the judgments against the replies, the board and the judge summary."""
    if not listing.has(JUDGMENTS):
        if board.require_judgments:
            result.refuse(
                "is missing: run `tide-bench judge` on the run and submit with its judge directory", JUDGMENTS
            )
        return [], []
    rubric = load_rubric()
    judgments = read_judgments(folder / JUDGMENTS, rubric, max_bytes=board.max_bytes, follow_symlinks=False)
    records = [j.as_record() for j in judgments]
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
    _judge_identity_checks(judgments, board, result)
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
        for mismatch in summary_mismatches(summary, judgments, rubric.factor_keys, rubric.scale_min, records):
            name, _, detail = mismatch.partition(": ")
            result.refuse(f"{detail}: submit the files `tide-bench judge` wrote, unedited", JUDGE_SUMMARY, field=name)
    return judgments, records


def check_admission(judgments: list[Judgment], n_items: int, board: BoardConfig, result: CheckResult) -> None:
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


def check_judge_config(
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


def check_local_paths(
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
    local = {source for source in {g.tide_source for g in gens} if holds_local_path(source)}  # one source, as a rule
    g = next((g for g in gens if g.tide_source in local), None) if local else None
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


def read_results_file(
    folder: Path, run: RunManifest, listing: FolderListing, board: BoardConfig, result: CheckResult
) -> tuple[str, Any] | None:
    if not run.results_file:
        return None
    rel = _confined(run.results_file, listing, RUN)
    if rel is None:
        result.refuse("names a file that is not a regular file inside the submission", MANIFEST, field="files.results")
        return None
    return rel, read_json(folder / rel, DataError, max_bytes=board.max_bytes, follow_symlinks=False)
