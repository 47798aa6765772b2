"""Are the models' replies more empathetic than people's? The Loh & Raamkumar (2023) question,
answered per model, instrument and emotion, with paired intervals against the human row.

On EmpatheticDialogues the reference row is the ED listeners' own replies (the human row), so
every model cell and the human row answer the same conversations. For each cell and each
measure (the local EPITOME scorer's ER, IP, EX and their sum; the EPITOME judge's; the TIDE
judge's overall empathy), the report gives the paired difference *model - people* over the
conversations both count, with a 95 % bootstrap interval resampling speakers (the cluster of
ED items), overall and per emotion label (the 32 scenarios), and a verdict by a rule fixed in
advance:

* **holds**: the overall difference's interval lies above 0, *and* the model is ahead in more
  than half of the emotions that have paired items, with a one-sided sign test across those
  emotions at p < 0.05 ("more empathetic than people in most scenarios");
* **reversed**: the same with the signs flipped (people ahead);
* **not established**: anything else (including too few emotions for the sign test to reach
  0.05: it needs at least 5).

Per-emotion intervals are shown unadjusted (one per emotion): read them as a profile, the
verdict's test is the sign test over emotions. Unscored judgments count as the judge summary
counts them (a model-attributable failure at the scale minimum; an infrastructure one left out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import atomic_write_text, read_json, write_json
from tide_bench.core.stats import mean_ci
from tide_bench.data.schema import persona_of_item
from tide_bench.data.sources import synthetic_wording
from tide_bench.epitome.mechanisms import MECHANISMS, metric_name
from tide_bench.generation import load_run
from tide_bench.generation.epitome_runs import SCORES_NAME
from tide_bench.judging.files import JUDGMENTS_FILE, RUN_SUBDIR
from tide_bench.judging.judgment import read_judgments
from tide_bench.judging.rubric import load_rubric, rubric_path
from tide_bench.judging.summary import counted_values
from tide_bench.study.document import Block, Heading, Paragraph, Table, to_html, to_markdown
from tide_bench.study.plan import EPITOME_JUDGE_SUBDIR, REFERENCE_CELL, StudyPlan
from tide_bench.study.report import REPORT_DIR, paired, synthetic_banner
from tide_bench.study.spec import StudySpec

ALPHA = 0.05
REPORT_NAME = "people.md"


@dataclass(frozen=True)
class Measure:
    key: str
    label: str
    instrument: str


MEASURES = (
    *(
        Measure(metric_name(m.key), f"EPITOME {m.key.upper()} (local scorer, 0-2)", "epitome scorer")
        for m in MECHANISMS
    ),
    Measure("epitome_total", "EPITOME total (local scorer, 0-6)", "epitome scorer"),
    *(Measure(f"judge_{m.key}", f"EPITOME {m.key.upper()} (judge, 0-2)", "epitome judge") for m in MECHANISMS),
    Measure("judge_epitome_total", "EPITOME total (judge, 0-6)", "epitome judge"),
    Measure("empathy", "TIDE empathy (judge, 1-5)", "tide judge"),
)


@dataclass
class Cell:
    id: str
    condition: str
    label: str
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # measure -> item -> value
    scenario: dict[str, str] = field(default_factory=dict)
    scorer: dict[str, Any] | None = None  # the local EPITOME scorer's identity (epitome.json), when it scored


NOT_VALIDATED = "scorer not validated"


def scorer_validation(scorer: dict[str, Any] | None) -> str:
    """How far the local EPITOME scorer that produced a cell's scores was validated, in words."""
    f1 = (scorer or {}).get("cv_macro_f1")
    if not isinstance(f1, dict) or not all(isinstance(f1.get(m.key), int | float) for m in MECHANISMS):
        return f"{NOT_VALIDATED} (no cross-validation)"
    return "cross-validated macro-F1 " + " / ".join(f"{m.key.upper()} {f1[m.key]:.2f}" for m in MECHANISMS)


def _judged(folder: Path, rubric_file: Path | None) -> tuple[list[dict[str, Any]], Any] | None:
    path = folder / JUDGMENTS_FILE
    if not path.is_file():
        return None
    rubric = load_rubric(rubric_file)
    return [j.as_record() for j in read_judgments(path, rubric)], rubric


def _cell(run_dir: Path, cell_id: str, condition: str, label: str) -> Cell:
    run = load_run(run_dir)
    cell = Cell(cell_id, condition, label, scenario={g.item_id: g.scenario or "(none)" for g in run.generations})
    scores = run_dir / SCORES_NAME
    if scores.is_file():
        scorer = read_json(scores, DataError).get("scorer")
        cell.scorer = scorer if isinstance(scorer, dict) else None
    for m in MECHANISMS:
        name = metric_name(m.key)
        values = {
            g.item_id: float(g.metrics[name]) for g in run.generations if np.isfinite(g.metrics.get(name, np.nan))
        }
        if values:
            cell.values[name] = values
    if all(metric_name(m.key) in cell.values for m in MECHANISMS):
        common = set.intersection(*(set(cell.values[metric_name(m.key)]) for m in MECHANISMS))
        cell.values["epitome_total"] = {i: sum(cell.values[metric_name(m.key)][i] for m in MECHANISMS) for i in common}
    judged = _judged(run_dir / EPITOME_JUDGE_SUBDIR, rubric_path("epitome"))
    if judged:
        records, rubric = judged
        counted = counted_values(records, rubric.factor_keys, rubric.scale_min)
        for m in MECHANISMS:
            cell.values[f"judge_{m.key}"] = _column(records, counted[:, rubric.factor_keys.index(m.factor)])
        cell.values["judge_epitome_total"] = _column(records, counted[:, -1] * len(MECHANISMS))
    judged = _judged(run_dir / RUN_SUBDIR, None)
    if judged:
        records, rubric = judged
        cell.values["empathy"] = _column(records, counted_values(records, rubric.factor_keys, rubric.scale_min)[:, -1])
    return cell


def _column(records: list[dict[str, Any]], values: np.ndarray) -> dict[str, float]:
    return {r["item_id"]: float(v) for r, v in zip(records, values, strict=True) if np.isfinite(v)}


def _cells(plan: StudyPlan, out: Path) -> dict[str, Cell]:
    found: dict[str, Cell] = {}
    for cell in plan.cells:
        stage = next((s for s in plan.for_cell(cell.id) if s.stage == "eval"), None)
        if stage is None or not stage.done or not stage.record:
            continue
        label = "people (ED listeners)" if cell.model is None else f"{cell.model.id} ({cell.condition})"
        found[cell.id] = _cell(out / stage.record["outputs"]["run"], cell.id, cell.condition, label)
    return found


def sign_test(ahead: int, behind: int) -> float | None:
    """One-sided p of being ahead in ``ahead`` of ``ahead + behind`` emotions by chance (ties out)."""
    n = ahead + behind
    if n == 0:
        return None
    from scipy.stats import binomtest

    return float(binomtest(ahead, n, 0.5, alternative="greater").pvalue)


def verdict(overall: dict[str, Any], by_scenario: dict[str, dict[str, Any]]) -> dict[str, Any]:
    diffs = [b["difference"] for b in by_scenario.values() if b.get("difference") is not None]
    ahead, behind = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    p_ahead, p_behind = sign_test(ahead, behind), sign_test(behind, ahead)
    low, high = overall.get("ci_low"), overall.get("ci_high")
    if low is not None and low > 0 and ahead > len(diffs) / 2 and p_ahead is not None and p_ahead < ALPHA:
        word = "holds"
    elif high is not None and high < 0 and behind > len(diffs) / 2 and p_behind is not None and p_behind < ALPHA:
        word = "reversed"
    else:
        word = "not established"
    return {
        "verdict": word,
        "scenarios": len(diffs),
        "ahead": ahead,
        "behind": behind,
        "sign_test_p": p_ahead,
        "sign_test_p_reversed": p_behind,
    }


def compute(spec: StudySpec, plan: StudyPlan, out: Path) -> dict[str, Any] | None:
    """The comparison, or None when the study has no human row to compare with."""
    cells = _cells(plan, Path(out))
    people = cells.get(REFERENCE_CELL)
    if people is None:
        return None
    result: dict[str, Any] = {
        "study": spec.name,
        "data": spec.data,
        "synthetic": synthetic_wording(spec.data),
        "question": "Are the models' replies more empathetic than the ED listeners' (Loh & Raamkumar 2023)?",
        "rule": (
            "holds: overall paired difference CI above 0 and ahead in most emotions (one-sided sign test p < 0.05); "
            "reversed: the mirror image; otherwise not established"
        ),
        "people": {m.key: _mean(people.values.get(m.key)) for m in MEASURES if m.key in people.values},
        "comparisons": [],
    }
    for cell in cells.values():
        if cell.id == REFERENCE_CELL:
            continue
        entry: dict[str, Any] = {
            "cell": cell.id,
            "label": cell.label,
            "condition": cell.condition,
            "scorer": scorer_validation(cell.scorer),
            "measures": {},
        }
        for m in MEASURES:
            if m.key not in cell.values or m.key not in people.values:
                continue
            overall = paired(cell.values[m.key], people.values[m.key])
            emotions = sorted(set(people.scenario.values()))
            by = {
                e: paired(cell.values[m.key], people.values[m.key], {i for i, s in people.scenario.items() if s == e})
                for e in emotions
            }
            by = {e: b for e, b in by.items() if b["n"]}
            entry["measures"][m.key] = {
                "label": m.label,
                "instrument": m.instrument,
                "model": _mean(cell.values[m.key]),
                "difference": overall,
                "by_scenario": by,
            } | verdict(overall, by)
            if m.instrument == "epitome scorer" and entry["scorer"].startswith(NOT_VALIDATED):
                decided = entry["measures"][m.key]
                decided["rule_outcome"], decided["verdict"] = decided["verdict"], NOT_VALIDATED
        result["comparisons"].append(entry)
    return result


def _mean(values: dict[str, float] | None) -> dict[str, Any] | None:
    if not values:
        return None
    items = sorted(values)
    est = mean_ci(np.array([values[i] for i in items]), clusters=[persona_of_item(i) for i in items])
    return {"mean": est.mean, "ci_low": est.ci_low, "ci_high": est.ci_high, "n": est.n}


def _num(block: dict[str, Any] | None, key: str) -> str:
    if not block or block.get(key) is None:
        return "n/a"
    text = f"{block[key]:+.2f}" if key == "difference" else f"{block[key]:.2f}"
    if block.get("ci_low") is not None:
        text += (
            f" [{block['ci_low']:+.2f}, {block['ci_high']:+.2f}]"
            if key == "difference"
            else (f" [{block['ci_low']:.2f}, {block['ci_high']:.2f}]")
        )
    elif block.get("n") == 1:
        text += " (n = 1: no interval)"
    else:
        text += " (no interval)"
    return text


def _verdict_rows(result: dict[str, Any]) -> list[list[str]]:
    people, rows = result["people"], []
    for entry in result["comparisons"]:
        for key, m in entry["measures"].items():
            p = "n/a" if m["sign_test_p"] is None else f"{m['sign_test_p']:.3f}"
            shown = (
                f"**{m['verdict']}**"
                if m["verdict"] != NOT_VALIDATED
                else f"{NOT_VALIDATED} (the rule alone: {m['rule_outcome']})"
            )
            validation = entry.get("scorer", "") if m["instrument"] == "epitome scorer" else "-"
            rows.append(
                [
                    entry["label"],
                    m["label"],
                    validation,
                    _num(m["model"], "mean"),
                    _num(people.get(key), "mean"),
                    _num(m["difference"], "difference"),
                    f"{m['ahead']} / {m['behind']} of {m['scenarios']}",
                    p,
                    shown,
                ]
            )
    return rows


def _conclusion(result: dict[str, Any]) -> str:
    held = sorted(
        {e["label"] for e in result["comparisons"] for m in e["measures"].values() if m["verdict"] == "holds"}
    )
    if result.get("synthetic"):
        return (
            f"Not a finding: the data is {result['synthetic']}, so the rule's outcomes above show the mechanism only."
        )
    return (
        "The finding holds for: "
        + (", ".join(held) if held else "none of the models run")
        + " (on at least one measure)."
    )


def blocks(result: dict[str, Any]) -> list[Block]:
    """The comparison as blocks, from its results (``people.json``): the file and the board's section alike."""
    out: list[Block] = synthetic_banner(result.get("synthetic"))
    out += [
        Paragraph(f"Study `{result['study']}`. {result['question']}"),
        Paragraph(
            f"Decision rule, fixed in advance: {result['rule']}. Differences are model - people, paired over the "
            "conversations both rows count, 95% CI resampling speakers. A measure of the local EPITOME scorer gets "
            f"no verdict when the scorer was not cross-validated ({NOT_VALIDATED})."
        ),
        Heading("Verdicts"),
        Table(
            (
                "model",
                "measure",
                "instrument validation",
                "model mean",
                "people mean",
                "difference [95% CI]",
                "emotions ahead / behind",
                "sign test p",
                "verdict",
            ),
            _verdict_rows(result),
            (False, False, False, True, True, True, True, True, False),
        ),
        Paragraph(_conclusion(result)),
    ]
    for entry in result["comparisons"]:
        for key, m in entry["measures"].items():
            if key.endswith("total") or key == "empathy":
                rows = [[e, str(b["n"]), _num(b, "difference")] for e, b in m["by_scenario"].items()]
                out += [
                    Heading(f"{entry['label']}: {m['label']} by emotion"),
                    Table(("emotion", "n", "difference [95% CI]"), rows, (False, True, True)),
                ]
    return out


def markdown(result: dict[str, Any]) -> str:
    return to_markdown("LLM replies vs people (EmpatheticDialogues)", blocks(result))


def people_html(people_md: Path) -> str:
    """The comparison as HTML for the study's board, built from ``people.json`` beside ``people.md``."""
    return to_html(blocks(read_json(people_md.with_name("people.json"), DataError)))


def write_comparison(spec: StudySpec, out: Path, plan: StudyPlan) -> Path | None:
    """``<out>/report/people.md`` (and people.json); None when the study has no human row."""
    result = compute(spec, plan, Path(out))
    if result is None:
        return None
    folder = Path(out) / REPORT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "people.json", result)
    atomic_write_text(folder / REPORT_NAME, markdown(result))
    return folder / REPORT_NAME
