"""Submissions for the leaderboard tests: judged runs on a TIDE stand-in, packaged by `submit`.

The only data here is tide-bench's synthetic sample, which a TIDE board refuses (as it
should). The stand-in is a copy of the sample with its persona metadata marked, so its
content (and split hash) differs from the sample's and it loads as a local snapshot, like
a real TIDE release would.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
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


def record_template(folder: Path, template: str) -> None:
    """Record ``template`` as the chat template of a submission's run: an lm-eval results file naming
    it, named in run.json (what `tide-bench eval` and `import` keep of an hf run)."""
    run = folder / "run"
    results = run / "lm_eval" / "fake" / "results_2026-01-01T00-00-00.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps({"results": {"tide_empathy": {}}, "chat_template": template}))
    edit_json(run / "run.json", lambda m: m["files"].update(results=str(results.relative_to(run))))


PINNED_TEMPLATES = Path(__file__).parent / "fixtures" / "chat_templates" / "pinned.yaml"


def board(**kw: Any) -> BoardConfig:
    """A TIDE-like board (not a demo) for the stand-in: small spot check, no conversation count, the
    fixture chat templates pinned."""
    defaults = {"spot_check_items": 4, "conversations_per_persona": None, "chat_templates": str(PINNED_TEMPLATES)}
    return BoardConfig(**(defaults | kw))


def tide_run(
    root: Path,
    reply: Reply,
    data_dir: Path,
    *,
    model_name: str = "org/model",
    num_parameters: int | None = 500_000_000,
    **run_kw: Any,
) -> Path:
    """A finished run on the stand-in: make_run's files with the stand-in's provenance and the
    real text metrics (cosine similarity stays make_run's placeholder 0.5); ``run_kw`` go to
    make_run (``condition``, ``prompt``)."""
    dataset = load_dataset(str(data_dir))
    run = make_run(
        root, reply, items=dataset.items_for("test"), model_name=model_name, num_parameters=num_parameters, **run_kw
    )
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
    base = {
        "schema_version": 1,
        "id": sid,
        "model_name": f"Model {sid}",
        "model": {"hub_id": f"org/{sid}", "revision": "main"},
        "parameters": 500_000_000,
        "condition": "zero-shot",
        "license": "apache-2.0",
        "contact": "dev@example.org",
    }
    return base | kw


def supplement_run(
    tmp: Path,
    server: FakeLLMServer,
    sid: str,
    reply: Reply,
    *,
    severe_samples: int = 3,
    run_kw: dict[str, Any] | None = None,
    judge_kw: dict[str, Any] | None = None,
) -> Path:
    """The same model's run on the built-in risk supplement (every item, ``--split all``), judged by the
    fake server with ``severe_samples`` calls per severe item (``judge_kw``: to load_judge, e.g. another
    model): what ``submit --risk-supplement`` takes."""
    from tide_bench.judging import JudgeOptions

    kw = {"model_name": f"org/{sid}", "num_parameters": 500_000_000} | (run_kw or {})
    run = make_run(tmp / f"risk-{sid}", reply, split="all", data="risk-supplement", **kw)
    config = load_judge("claude-sonnet", base_url=server.url, overrides={"backoff_base_s": 0.01}, **(judge_kw or {}))
    judge_run(run, run / "judge", config, JudgeOptions(severe_samples=severe_samples))
    return run


def judged_submission(
    tmp: Path,
    server: FakeLLMServer,
    sid: str,
    reply: Reply,
    *,
    out: Path | None = None,
    the_board: BoardConfig | None = None,
    params: int = 500_000_000,
    data: Path | None = None,
    run_kw: dict[str, Any] | None = None,
    risk_supplement: Reply | Path | None = None,
    seeker: bool = False,
    samples: int = 0,
    **meta_kw: Any,
) -> Path:
    """Run (on ``data``, default the sample's stand-in; ``run_kw`` for make_run), judge (fake
    server) and `submit` one entry; returns its submission folder. ``risk_supplement``: the replies
    of the same model to the risk supplement (judged and packaged with it), or a judged run; ``seeker``:
    the seeker's view judged and packaged too; ``samples``: K sampled runs judged and packaged too."""
    run = tide_run(
        tmp / f"run-{sid}",
        reply,
        data or stand_in_dataset(tmp),
        model_name=f"org/{sid}",
        num_parameters=params,
        **(run_kw or {}),
    )
    judge_run(run, run / "judge", load_judge("claude-sonnet", base_url=server.url, overrides={"backoff_base_s": 0.01}))
    if seeker:  # the seeker's view too (--rubric perceived), packaged as seeker_judge/
        judge_run(run, run / "judge-seeker", load_judge("claude-sonnet", base_url=server.url, rubric="perceived"))
    meta_path = tmp / f"{sid}.yaml"
    meta_path.write_text(yaml.safe_dump(meta(sid, parameters=params, **meta_kw)))
    sampled = sampled_set(tmp / f"set-{sid}", server, sid, reply, data or stand_in_dataset(tmp), samples, params)
    supplement = (
        risk_supplement
        if risk_supplement is None or isinstance(risk_supplement, Path)
        else supplement_run(tmp, server, sid, risk_supplement, run_kw={"num_parameters": params, **(run_kw or {})})
    )
    return create_submission(
        run,
        meta_path,
        out or tmp / "submissions",
        board=the_board or board(),
        spot_checks=False,
        risk_supplement=supplement,
        seeker_judge=run / "judge-seeker" if seeker else None,
        samples=sampled,
    ).folder


def sampled_set(
    folder: Path, server: FakeLLMServer, sid: str, reply: Reply, data: Path, k: int, params: int
) -> Path | None:
    """``k`` judged samples of one model (as `eval --samples k` records them: sampling on, a seed
    each) and their listing; None for k = 0. Sample s answers ``reply`` with `` [sample s]`` added."""
    if k == 0:
        return None
    from tide_bench.generation.runner import EvalConfig
    from tide_bench.generation.sampled import sample_configs, sample_dir, write_samples_listing

    for s in range(1, k + 1):
        text = reply if callable(reply) else (lambda _i, r=reply: r)
        run = tide_run(sample_dir(folder, s), lambda i, t=text, s=s: f"{t(i)} [sample {s}]", data,
                       model_name=f"org/{sid}", num_parameters=params)  # fmt: skip
        edit_json(run / "run.json", lambda m, s=s: m["generation"].update(
            gen_kwargs_override={"do_sample": True, "temperature": 0.7}, seed=[s] * 4))  # fmt: skip
        judge_run(run, run / "judge", load_judge("claude-sonnet", base_url=server.url))
    write_samples_listing(folder, sample_configs(EvalConfig(output_dir=folder), k))
    return folder


def reference_submission(
    tmp: Path,
    server: FakeLLMServer,
    sid: str = "tide-reference",
    *,
    reply: Reply | None = None,
    out: Path | None = None,
    the_board: BoardConfig | None = None,
    data: Path | None = None,
    submit: bool = True,
) -> Path:
    """The reference run as `tide-bench eval --model reference` makes it (every reply the item's
    reference, condition ``reference``, ``model.is_reference``), judged (fake server, which
    scores a reference 5, 5, 5) and submitted; ``reply`` forges other replies, and ``submit=False``
    copies the judged run into ``out/<sid>`` as a submission folder without validating it (a
    forged one would be refused)."""
    from tide_bench.generation.reference import reference_label

    run = tide_run(tmp / f"run-{sid}", reply or (lambda i: i.reference_reply), data or stand_in_dataset(tmp))
    manifest = json.loads((run / "run.json").read_text())
    name = reference_label(manifest["data"]["source"], is_sample=manifest["data"]["is_synthetic_sample"])
    edit_json(
        run / "run.json",
        lambda m: (
            m["prompt"].update(condition="reference", prompt_sha256="f" * 64),
            m["model"].update(
                is_reference=True, name=name, backend="tide-reference", args="", num_parameters=None, revision=None
            ),
        ),
    )
    references = {i.reference_reply for i in load_dataset(str(data or stand_in_dataset(tmp))).items}
    previous = server.rater
    server.rater = lambda text: {"scores": [5, 5, 5]} if text in references else None
    try:
        judge_run(
            run, run / "judge", load_judge("claude-sonnet", base_url=server.url, overrides={"backoff_base_s": 0.01})
        )
    finally:
        server.rater = previous
    meta_path = tmp / f"{sid}.yaml"
    meta_path.write_text(
        yaml.safe_dump(meta(sid, model={"api_model_id": name}, parameters=None, condition="reference"))
    )
    out = out or tmp / "submissions"
    if not submit:
        target = out / sid
        shutil.copytree(run, target / "run", ignore=shutil.ignore_patterns("judge"))
        shutil.copytree(run / "judge", target / "judge")
        shutil.copy(meta_path, target / "submission.yaml")
        return target
    return create_submission(run, meta_path, out, board=the_board or board(), spot_checks=False).folder


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def edit_json(path: Path, edit: Callable[[Any], Any]) -> None:
    """Apply ``edit`` (which mutates in place) to a JSON file's value."""
    value = json.loads(path.read_text())
    edit(value)
    path.write_text(json.dumps(value, indent=2))


def edit_jsonl(path: Path, edit: Callable[[list[dict[str, Any]]], Any]) -> None:
    rows = read_jsonl(path)
    edit(rows)
    write_jsonl(path, rows)


def samples_files(folder: Path) -> list[Path]:
    """The samples files of a submission folder (or of a run directory)."""
    run = folder if (folder / "run.json").is_file() else folder / "run"
    manifest = json.loads((run / "run.json").read_text())
    return [run / rel for _, rel in sorted(manifest["files"]["samples"].items())]


def resummarize(folder: Path) -> None:
    """Rewrite judge_summary.json's compared numbers to match the (edited) judgments, as a
    careful cheater would."""
    from statistics import fmean

    records = read_jsonl(folder / "judge" / "judgments.jsonl")
    scored = [r for r in records if r["status"] == "scored"]
    reasons: dict[str, int] = {}
    for r in records:
        if r["status"] == "unscored":
            reasons[r["unscored_kind"]] = reasons.get(r["unscored_kind"], 0) + 1

    def edit(s: dict[str, Any]) -> None:
        s.update(
            n_items=len(records),
            n_scored=len(scored),
            n_unscored=len(records) - len(scored),
            unscored_reasons=reasons,
            n_safety_flagged=sum(1 for r in scored if r["safety"]["flagged"]),
        )
        s["empathy"]["mean"] = fmean(fmean(r["scores"].values()) for r in scored) if scored else None
        for f in s["factors"]:
            s["factors"][f]["mean"] = fmean(r["scores"][f] for r in scored) if scored else None

    edit_json(folder / "judge" / "judge_summary.json", edit)


def rekey(folder: Path) -> None:
    """Recompute every judgment's key from the (edited) samples, as a cheater who controls the
    judge would: the key check then passes and only the recomputed items can catch the edit."""
    from tide_bench.generation.run_dir import read_generations
    from tide_bench.judging.cache import judgment_key

    manifest = json.loads((folder / "run" / "run.json").read_text())
    gens = {g.item_id: g for g in read_generations(folder / "run", manifest["files"]["samples"])}
    edit_jsonl(
        folder / "judge" / "judgments.jsonl",
        lambda rows: [
            r.update(key=judgment_key(r["judge"]["version"], gens[r["item_id"]])) for r in rows if r["item_id"] in gens
        ],
    )


_OPENED: list[list[str]] = []
_HOOKED = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _OPENED and args and isinstance(args[0], str | bytes | os.PathLike):
        _OPENED[-1].append(os.fsdecode(args[0]))


@contextlib.contextmanager
def record_opens() -> Iterator[list[str]]:
    """The paths every ``open``/``os.open`` in the block asked for (a process-wide audit hook;
    audit hooks cannot be removed, so one is installed once and switched on here)."""
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    opened: list[str] = []
    _OPENED.append(opened)
    try:
        yield opened
    finally:
        _OPENED.pop()


@contextlib.contextmanager
def fake_judge(key: str = "sk-test-leaderboard-000") -> Iterator[FakeLLMServer]:
    """A fake judge server and an API key in the environment, for module-scoped fixtures
    (which cannot use monkeypatch); both are undone afterwards."""
    old = os.environ.get("ANTHROPIC_API_KEY")
    os.environ["ANTHROPIC_API_KEY"] = key
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()
        if old is None:
            os.environ.pop("ANTHROPIC_API_KEY", None)
        else:
            os.environ["ANTHROPIC_API_KEY"] = old


def synthetic_snapshot(
    root: Path,
    n_personas: int,
    per_persona: int,
    persona_meta: Callable[[int], dict[str, Any]] | None = None,
    name: str = "",
) -> Path:
    """A TIDE-shaped local snapshot of ``n_personas`` test-split personas with ``per_persona``
    single-exchange conversations each: as many items as a statistics test needs, all of which
    a board's item checks accept (persona ids chosen so the persona hash puts them in test).
    ``persona_meta(k)``: the k-th persona's metadata fields (age group, gender...), in a folder of
    its own ``name``."""
    from tide_bench.data.splits import split_of

    target = root / f"synthetic-{n_personas}x{per_persona}{name}"
    if target.exists():
        return target
    (target / "conversations").mkdir(parents=True)
    (target / "metadata").mkdir()
    personas = (f"s{n}" for n in range(100_000) if split_of(f"s{n}") == "test")
    for k, pid in enumerate(itertools.islice(personas, n_personas)):
        conversations = {
            f"c{c}": {
                "scenario": f"scenario_{c % 3}",
                "person": f"Client {pid} in conversation {c}: it keeps coming back.",
                "chatbot": f"That sounds hard, {pid}; it can come back like that ({c}).",
            }
            for c in range(per_persona)
        }
        (target / "conversations" / f"{pid}_conversations.json").write_text(
            json.dumps({"conversations": conversations})
        )
        fields = persona_meta(k) if persona_meta else {}
        (target / "metadata" / f"{pid}_metadata.json").write_text(json.dumps({"synthetic": True} | fields))
    return target


def scripted_submission(
    tmp: Path,
    server: FakeLLMServer,
    sid: str,
    data_dir: Path,
    judged: Callable[[int], tuple[str, str | None, Any]],
    *,
    the_board: BoardConfig | None = None,
) -> Path:
    """A submission whose k-th item (by id) is judged as ``judged(k) -> (status, kind, scores)``,
    through the fake judge: scores by marker, ``empty_reply`` as an empty reply, and
    ``transient_failure`` as a server error that outlasts every retry."""
    order = {
        i.item_id: k
        for k, i in enumerate(sorted(load_dataset(str(data_dir)).items_for("test"), key=lambda i: i.item_id))
    }

    def reply(item: TideItem) -> str:
        status, kind, scores = judged(order[item.item_id])
        if status == "scored":
            return f"Reply of {sid} [[SCORES:{','.join(map(str, scores))}]] {item.item_id}"
        if kind == "empty_reply":
            return ""
        if kind == "transient_failure":
            return f"Reply of {sid} [[500:99]] {item.item_id}"
        raise ValueError(f"cannot script {kind!r}")

    run = tide_run(tmp / f"run-{sid}", reply, data_dir, model_name=f"org/{sid}")
    judge = load_judge(
        "claude-sonnet",
        base_url=server.url,
        overrides={"backoff_base_s": 0.001, "backoff_cap_s": 0.002, "max_retries": 1, "concurrency": 16},
    )
    judge_run(run, run / "judge", judge)
    meta_path = tmp / f"{sid}.yaml"
    meta_path.write_text(yaml.safe_dump(meta(sid)))
    return create_submission(run, meta_path, tmp / "submissions", board=the_board or board(), spot_checks=False).folder


def write_judgments(
    run: Path,
    rubric: Any,
    scores: Callable[[int, Any], dict[str, int]],
    *,
    version: str = "benchbenchbench0",
    rationale: Callable[[int, str], str] = lambda k, f: "r",
    flagged: Callable[[int], bool] = lambda k: False,
) -> None:
    """Judgments written directly (no judge call) for every reply of ``run``, with correct keys
    and a matching judge summary: ``scores(k, gen)`` gives the k-th item's factor scores (any
    rubric, so a test can add a factor), ``rationale(k, factor)`` its rationales."""
    from tide_bench.generation.run_dir import load_run
    from tide_bench.judging.cache import judgment_key
    from tide_bench.judging.judgment import parse_judgment
    from tide_bench.judging.summary import recompute

    gens = load_run(run).generations
    records = []
    for k, g in enumerate(gens):
        flag = flagged(k)
        records.append(
            {
                "item_id": g.item_id,
                "status": "scored",
                "scores": scores(k, g),
                "rationales": {f: rationale(k, f) for f in rubric.factor_keys},
                "safety": {"flagged": flag, "reason": "r" if flag else ""},
                "unscored_kind": None,
                "unscored_reason": None,
                "key": judgment_key(version, g),
                "judge": {
                    "name": "bench",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "family": "claude",
                    "version": version,
                    "rubric": f"{rubric.id}@v{rubric.version}",
                },
            }
        )
    (run / "judge").mkdir(exist_ok=True)
    write_jsonl(run / "judge" / "judgments.jsonl", records)
    numbers = recompute(
        [parse_judgment(r, rubric, Path("x"), k + 1) for k, r in enumerate(records)], rubric.factor_keys
    )
    summary = {k: numbers[k] for k in ("n_items", "n_scored", "n_unscored", "unscored_reasons", "n_safety_flagged")}
    summary |= {
        "factors": {f: {"mean": m} for f, m in numbers["factors"].items()},
        "empathy": {"mean": numbers["empathy"]},
        "judge": {"version": version},
    }
    (run / "judge" / "judge_summary.json").write_text(json.dumps(summary, indent=2))


def site_files(site: Path) -> dict[str, bytes]:
    """Every file of a built site, with the build time taken out (the only thing two builds of
    the same submissions differ in)."""
    built_at = json.loads((site / "leaderboard.json").read_text())["built_at"]
    return {
        str(p.relative_to(site)): p.read_bytes().replace(built_at.encode(), b"BUILT_AT")
        for p in sorted(site.rglob("*"))
        if p.is_file()
    }
