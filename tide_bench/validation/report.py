"""``tide-bench validation report PACK...``: how each judge agrees with the pack's experts.

Per pack x judge x dimension (dimension names as upstream): n, human mean, judge mean, signed
bias, MSE, RMSE, quadratic-weighted kappa, Spearman, each with a 95 % bootstrap interval over
the pack's cluster (:mod:`.metrics`), and the length-bias slope where the replies' texts are
at hand. For a multi-rater pack, the alternative annotator test (epsilon and q stated; the
authors' combined-annotator mode and Wilcoxon fallback where raters rate fewer than 30 items,
:mod:`.alt_modes`), and the human baseline (each expert as the judge; a randomised control).
Over several packs, Benjamini-Yekutieli across all their alt-test p-values and "passes in X
of Y packs".

Judges come from ``published`` (the judge ratings a pack ships) and from validation run folders
(``tide-bench validation run``); a pack whose adapter reads local models (EPITOME) also takes a
model folder (the local scorer: its grouped cross-validation predictions, scored like a judge's).
A categorical pack adds accuracy, macro-F1 and the confusion matrix per dimension; a pack with
annotated spans adds the judge's rationale agreement (:mod:`.evidence`); a pack's
``published_figures`` (classifiers published without per-item ratings) are reported beside the
judges, as published, with how far each was confirmed. A judge is never scored on replies of its own model family:
``mode="tide"`` excludes every reply whose responder shares the judge's family; ``mode="authors"``
(MentalAlign) applies the dataset authors' own exclusion list and value handling, so that their
published table can be reproduced; reports say which.
"""

from __future__ import annotations

import csv
import functools
import io
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.agreement.ratings import judge_rater_id
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.hashing import sha256_file
from tide_bench.core.jsonio import atomic_write_text, write_json
from tide_bench.core.provenance import package_versions, utc_now
from tide_bench.core.spreadsheet import spreadsheet_safe
from tide_bench.core.stats import DEFAULT_SEED
from tide_bench.judging.families import family_of
from tide_bench.judging.files import JUDGMENTS_FILE
from tide_bench.judging.rubric import RUBRIC_VERSIONS, load_rubric, rubric_path
from tide_bench.validation.adapters import PackData, load_data, local_model
from tide_bench.validation.alt_modes import across_packs, human_baseline, verdicts
from tide_bench.validation.evidence import COUNTS_FIELD, has_spans, rationale_agreement
from tide_bench.validation.items import OUT_OF_DOMAIN, item_id
from tide_bench.validation.manifest import Pack, load_pack
from tide_bench.validation.metrics import CATEGORICAL, DEFAULT_RESAMPLES, STATISTICS, agreement, length_slope
from tide_bench.validation.run import RUN_RECORD, read_run
from tide_bench.validation.store import load_fetched

SCHEMA_VERSION = 1
CSV_COLUMNS = ("pack", "judge", "dimension", "n", "human_mean", "judge_mean", "bias", "mse", "rmse", "qwk", "spearman")
PUBLISHED = "published"
NO_JUDGES = "no judge ratings: this pack ships none; pass --judge-ratings RUN_DIR (a validation run)"


@dataclass
class JudgeRatings:
    """One judge's scores on a pack's items, per dimension (NaN = not rated or excluded)."""

    judge: str
    source: str  # "published" or the run folder
    family: str | None
    model: str | None
    scores: dict[str, np.ndarray]
    excluded: list[str] = field(default_factory=list)  # responders left out (own family)
    exclusion_rule: str = ""
    unscored: Counter[str] = field(default_factory=Counter)
    handling: Counter[str] = field(default_factory=Counter)
    identity: dict[str, Any] | None = None
    cost_usd: float | None = None
    n_judged: int = 0
    inputs: list[dict[str, str]] = field(default_factory=list)
    kind: str = "judge"  # "judge" | "published" | "local model"
    evidence: list[dict[str, Any] | None] | None = None  # per item: rationale counts (.evidence)


def _exclude(data: PackData, ratings: JudgeRatings, responders: set[str], rule: str) -> None:
    ratings.excluded = sorted(responders)
    ratings.exclusion_rule = rule
    if not responders:
        return
    drop = np.array([r in responders for r in data.responders])
    for dim in ratings.scores:
        ratings.scores[dim] = np.where(drop, np.nan, ratings.scores[dim])


def _own_family(data: PackData, family: str | None) -> set[str]:
    if not family:
        return set()
    return {k for k in set(filter(None, data.responders)) if family in data.pack.families_of(k)}


def published_ratings(data: PackData) -> list[JudgeRatings]:
    out = []
    for judge, scores in data.published.items():
        info = data.pack.published_judges.get(judge, {})
        ratings = JudgeRatings(
            judge=judge,
            source=PUBLISHED,
            family=info.get("family"),
            model=info.get("model"),
            scores={d: v.copy() for d, v in scores.items()},
            handling=data.judge_handling.get(judge, Counter()),
            n_judged=len(data.item_ids),
            kind="published",
        )
        if data.mode == "authors":
            own = set(info.get("authors_exclude") or [])
            _exclude(data, ratings, own, "the dataset authors' list (JUDGE_EXCLUSIONS in their analysis code)")
        else:
            _exclude(data, ratings, _own_family(data, ratings.family), "every reply of the judge's model family")
        out.append(ratings)
    return out


JUDGE_KEYS = ("name", "provider", "model", "version", "rubric")  # a judgment line's judge must be the run's


@functools.cache
def _rubric_levels() -> dict[str, tuple[int, int]]:
    """``<rubric id>@v<version>`` -> (lowest, highest) score, for every rubric tide-bench ships."""
    out = {}
    for name in RUBRIC_VERSIONS:
        rubric = load_rubric(rubric_path(name))
        out[f"{rubric.id}@v{rubric.version}"] = (rubric.scale_min, rubric.scale_max)
    return out


def _run_judge(record: dict[str, Any], record_path: Path) -> tuple[dict[str, Any], tuple[int, int]]:
    """The run's judge identity and the scores its rubric can give, or a clear error."""
    judge = record.get("judge")
    if not isinstance(judge, dict):
        raise DataError("must be an object naming the judge configuration", path=record_path, field="judge")
    for key in (*JUDGE_KEYS, "family"):
        if not isinstance(judge.get(key), str | None):
            raise DataError("must be a text or null", path=record_path, field=f"judge.{key}")
    levels = _rubric_levels().get(judge.get("rubric"))  # type: ignore[arg-type]
    if levels is None:
        raise DataError(
            f"the run's rubric {judge.get('rubric')!r} is not one tide-bench ships "
            f"({', '.join(_rubric_levels())}): the scale of its scores cannot be checked",
            path=record_path,
            field="judge.rubric",
        )
    return judge, levels


def _check_line(
    rec: Any, k: int, path: Path, judge: dict[str, Any], seen: dict[str, int], index: dict[str, int]
) -> int:
    """The pack row of judgment line ``k``, after checking it is one of the pack's items, judged
    once, by the run's own judge (R3S-4)."""
    if not isinstance(rec, dict) or rec.get("item_id") not in index:
        raise DataError("a judgment of an item this pack does not have", path=path, line=k, field="item_id")
    item = rec["item_id"]
    if item in seen:
        raise DataError(f"item {item} is judged twice (lines {seen[item]} and {k})", path=path, line=k, field="item_id")
    seen[item] = k
    own = rec.get("judge")
    for key in JUDGE_KEYS:
        if key in judge and (not isinstance(own, dict) or own.get(key) != judge[key]):
            theirs = own.get(key) if isinstance(own, dict) else own
            raise DataError(
                f"judged by {theirs!r}, but the run's record names {judge[key]!r}: one run holds one judge",
                path=path,
                line=k,
                field=f"judge.{key}",
            )
    return index[item]


def _score(value: Any, factor: str, levels: tuple[int, int], path: Path, k: int) -> float:
    """A judge score the run's rubric can give: a whole number on its scale."""
    low, high = levels
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise DataError(
            f"{value!r} is not a score of the run's rubric (a whole number {low}-{high})",
            path=path,
            line=k,
            field=f"scores.{factor}",
        )
    return float(value)


def run_ratings(data: PackData, folder: str | Path) -> JudgeRatings:
    """A validation run's judgments as ratings on the pack's dimensions (via ``judge_factor``)."""
    record, judgments, summary = read_run(folder)
    if record.get("pack") != data.pack.name:
        raise DataError(
            f"{folder} holds judgments of pack {record.get('pack')!r}, not {data.pack.name!r}",
            hint=f"report it with: tide-bench validation report {record.get('pack')} --judge-ratings {folder}",
        )
    index = {item_id(data.pack.name, item): i for i, item in enumerate(data.item_ids)}
    judge, levels = _run_judge(record, Path(folder) / RUN_RECORD)
    for d in data.pack.dimensions:
        if why := d.check_rubric(judge.get("rubric")):
            raise DataError(
                why,
                path=Path(folder) / RUN_RECORD,
                field="judge.rubric",
                hint=f"run `tide-bench validation run {data.pack.name}` again with --rubric "
                + (d.judge_rubrics or ("v3",))[-1],
            )
    dims = [d for d in data.pack.dimensions if d.judge_factor]
    scores = {d.name: np.full(len(index), np.nan) for d in dims}
    evidence: list[dict[str, Any] | None] = [None] * len(index)
    unscored: Counter[str] = Counter()
    path = Path(folder) / JUDGMENTS_FILE
    seen: dict[str, int] = {}
    for k, rec in enumerate(judgments, start=1):
        i = _check_line(rec, k, path, judge, seen, index)
        if rec.get("status") != "scored":
            unscored[str(rec.get("unscored_kind"))] += 1
            continue
        given = rec.get("scores")
        if not isinstance(given, dict):
            raise DataError("a scored judgment needs its scores as an object", path=path, line=k, field="scores")
        for d in dims:
            value = _score(given.get(d.judge_factor), str(d.judge_factor), levels, path, k)
            scores[d.name][i] = float(value >= d.judge_threshold) if d.judge_threshold is not None else value
        counts = rec.get(COUNTS_FIELD)
        if counts is not None and not isinstance(counts, dict):
            raise DataError("evidence counts must be an object", path=path, line=k, field=COUNTS_FIELD)
        evidence[i] = counts
    return _run_judge_ratings(data, folder, judge, scores, unscored, summary, judgments, evidence)


def _run_judge_ratings(
    data: PackData,
    folder: str | Path,
    judge: dict[str, Any],
    scores: dict[str, np.ndarray],
    unscored: Counter[str],
    summary: dict[str, Any] | None,
    judgments: list[dict[str, Any]],
    evidence: list[dict[str, Any] | None],
) -> JudgeRatings:
    path = Path(folder) / JUDGMENTS_FILE
    family = judge.get("family") or family_of(judge.get("model"))
    cost = (summary or {}).get("cost_usd") if isinstance(summary, dict) else None
    cost_all = cost.get("all_judgments") if isinstance(cost, dict) else None
    ratings = JudgeRatings(
        judge=judge_rater_id(judge).removeprefix("judge:"),
        source=str(folder),
        family=family,
        model=judge.get("model"),
        scores=scores,
        unscored=unscored,
        identity=judge,
        cost_usd=cost_all if isinstance(cost_all, int | float) and not isinstance(cost_all, bool) else None,
        n_judged=len(judgments),
        inputs=[{"path": str(path), "sha256": sha256_file(path)}],
        evidence=evidence if has_spans(data) else None,
    )
    _exclude(data, ratings, _own_family(data, family), "every reply of the judge's model family")
    return ratings


def local_ratings(data: PackData, folder: str | Path) -> list[JudgeRatings]:
    """A local model folder's ratings (the pack's adapter reads it), or a clear error."""
    reader = local_model(data.pack, folder)
    if reader is None:
        raise DataError(
            f"{folder} is neither a validation run folder (no {RUN_RECORD}) nor a model folder pack "
            f"{data.pack.name} can read",
            hint="make a run with: tide-bench validation run PACK --judge NAME --out DIR",
        )
    out = []
    for model in reader(data, folder):
        n = int(np.isfinite(np.vstack(list(model.scores.values()))).any(axis=0).sum())
        out.append(
            JudgeRatings(
                judge=model.name,
                source=str(folder),
                family=None,
                model=model.identity.get("encoder"),
                scores=model.scores,
                identity=model.identity,
                n_judged=n,
                inputs=model.inputs,
                kind="local model",
                exclusion_rule="none (not a language-model judge)",
            )
        )
    return out


def _ratings(data: PackData, source: str | Path) -> list[JudgeRatings]:
    if str(source) == PUBLISHED:
        return published_ratings(data)
    if (Path(source) / RUN_RECORD).is_file() or local_model(data.pack, source) is None:
        return [run_ratings(data, source)]
    return local_ratings(data, source)


def _dimension_block(
    data: PackData, ratings: JudgeRatings, dim: str, words: np.ndarray | None, resamples: int, seed: int
) -> dict[str, Any]:
    humans = data.human[dim]
    with np.errstate(all="ignore"):
        consensus = np.nanmean(humans, axis=0) if humans.shape[0] > 1 else humans[0]
    judge = ratings.scores[dim]
    categorical = data.pack.categorical
    block = agreement(consensus, judge, data.clusters, resamples=resamples, seed=seed, categorical=categorical)
    block["length_bias_per_100_words"] = length_slope(
        consensus, judge, words, data.clusters, resamples=resamples, seed=seed
    )
    if ratings.evidence is not None and any(d.name == dim and d.evidence_code for d in data.pack.dimensions):
        block["rationales"] = rationale_agreement(data, ratings.evidence, dim, resamples=resamples, seed=seed)
    if data.pack.multi_rater:
        epsilon = data.pack.epsilon or 0.2
        block["alt_test"] = verdicts(humans, judge, data.raters, epsilon=epsilon, min_items=data.pack.min_items)
    return block


def _dimension_info(pack: Pack, dim: str) -> dict[str, Any]:
    d = pack.dimension(dim)
    return {
        "meaning": d.meaning,
        "proxy_for": d.proxy_for,
        "judge_factor": d.judge_factor,
        "judge_threshold": d.judge_threshold,
        "strength": d.strength,
        "map": d.mapping_line(),
    }


def report_pack(
    name: str,
    judge_ratings: list[str | Path] | tuple[str | Path, ...] = (PUBLISHED,),
    *,
    mode: str = "tide",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    baseline: bool = True,
) -> dict[str, Any]:
    """The report of one pack (see the module docstring)."""
    pack = load_pack(name)
    fetched = load_fetched(pack)
    data = load_data(fetched, mode)
    judges: list[JudgeRatings] = []
    for source in judge_ratings:
        judges += _ratings(data, source)
    words = data.reply_words()
    report_judges: dict[str, Any] = {}
    for ratings in judges:
        dims = [d for d in data.human if d in ratings.scores]
        report_judges[ratings.judge] = {
            "kind": ratings.kind,
            "source": ratings.source,
            "model": ratings.model,
            "family": ratings.family,
            "identity": ratings.identity,
            "excluded_responders": ratings.excluded,
            "exclusion_rule": ratings.exclusion_rule,
            "n_judged": ratings.n_judged,
            "n_unscored": sum(ratings.unscored.values()),
            "unscored_reasons": dict(sorted(ratings.unscored.items())),
            "handling": dict(sorted(ratings.handling.items())),
            "cost_usd": ratings.cost_usd,
            "usd_per_1000_items": None
            if ratings.cost_usd is None or not ratings.n_judged
            else 1000 * ratings.cost_usd / ratings.n_judged,
            "inputs": ratings.inputs,
            "dimensions": {d: _dimension_block(data, ratings, d, words, resamples, seed) for d in dims},
        }
    result: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": utc_now(),
        "pack": pack.name,
        "title": pack.title,
        "citation": pack.citation,
        "mode": mode,
        "mode_description": pack.modes.get(mode),
        "out_of_domain": pack.domain or OUT_OF_DOMAIN,
        "design": pack.design,
        "statistics": [*STATISTICS, *(CATEGORICAL if pack.categorical else ())],
        "raters": len(data.raters) if pack.multi_rater else "one expert score per reply",
        "n_items": len(data.item_ids),
        "dimensions": {d: _dimension_info(pack, d) for d in data.human},
        "handling": dict(sorted(data.handling.items())),
        "notes": data.notes + ([] if judges else [NO_JUDGES]),
        "bootstrap": {
            "resamples": resamples,
            "seed": seed,
            "unit": "context (all replies to one message)" if pack.cluster == "context" else "item",
            "interval": "percentile 95%",
        },
        "alt_test": {"epsilon": pack.epsilon, "q": 0.05, "min_items": pack.min_items} if pack.multi_rater else None,
        "judges": report_judges,
        "published_figures": [
            {"name": f.name, "status": f.status, "values": f.values, "intervals": None} for f in pack.published_figures
        ],
        "provenance": fetched.provenance(),
        "packages": package_versions(("tide-bench", "numpy", "scipy", "openpyxl")),
    }
    if pack.multi_rater and baseline:
        result["human_baseline"] = {
            d: human_baseline(m, data.raters, epsilon=pack.epsilon or 0.2, min_items=pack.min_items, seed=seed)
            for d, m in data.human.items()
        }
    return result


def report_packs(
    names: list[str],
    judge_ratings: list[str | Path] | tuple[str | Path, ...] = (PUBLISHED,),
    step: Callable[[int], None] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """Several packs; each judge's alt-tests corrected together (FDR) and counted. ``step(1)``
    is called as each pack is done (a progress bar)."""
    sources = list(judge_ratings)
    reports = {}
    for name in names:
        pack = load_pack(name)
        mine = [
            s for s in sources if str(s) == PUBLISHED or _run_pack_name(s) == name or local_model(pack, s) is not None
        ]
        if not mine:
            raise ConfigError(f"no judge ratings given for pack {name}", hint="--judge-ratings published or RUN_DIR")
        reports[name] = report_pack(name, mine, **kw)
        if step:
            step(1)
    return {"packs": reports, "across_packs": cross_pack_summary(reports)}


def _run_pack_name(source: str | Path) -> str | None:
    try:
        return read_run(source)[0].get("pack")
    except DataError:
        return None


def cross_pack_summary(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per judge: FDR over all its alt-test p-values across packs (and dimensions)."""
    tests: dict[str, dict[str, dict[str, Any]]] = {}
    for pack, rep in reports.items():
        for judge, block in rep["judges"].items():
            for dim, stats_ in block["dimensions"].items():
                result = (stats_.get("alt_test") or {}).get("result")
                if isinstance(result, dict):
                    tests.setdefault(judge, {})[f"{pack}/{dim}"] = result
    return {judge: across_packs(results) for judge, results in tests.items()}


def csv_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per pack x judge x dimension, the CSV's exact columns (point estimates)."""
    packs = report["packs"] if "packs" in report else {report["pack"]: report}
    rows = []
    for pack, rep in packs.items():
        for judge, block in rep["judges"].items():
            for dim, s in block["dimensions"].items():
                row: dict[str, Any] = {"pack": pack, "judge": judge, "dimension": dim, "n": s["n"]}
                for name in CSV_COLUMNS[4:]:
                    row[name] = s[name]["value"]
                rows.append(row)
    return rows


def write_csv(report: dict[str, Any], path: str | Path) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in csv_rows(report):
        writer.writerow(
            {k: "" if v is None else (spreadsheet_safe(v) if isinstance(v, str) else v) for k, v in row.items()}
        )
    atomic_write_text(path, buffer.getvalue())


def write_report(report: dict[str, Any], *, json_path: str | Path | None = None, csv_path: str | Path | None = None):
    if json_path:
        write_json(json_path, report)
    if csv_path:
        write_csv(report, csv_path)
