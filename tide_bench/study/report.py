"""The paper's figures from a study's outputs, with paired, persona-clustered intervals.

The TIDE paper's findings are comparative: fine-tuning helps, gains vary by scenario, the
smallest models hit a "knowledge transfer ceiling", the frontier reference stays on top. Every
comparison here is therefore *paired*: both arms answered the same items, so the difference
is taken item by item (on the items counted in both) and its 95 % interval comes from the
persona-cluster bootstrap of those differences (``core.stats.mean_ci`` with the persona as
cluster: TIDE items nest in personas). Four views:

* gain per model: fine-tuned minus zero-shot, on empathy (judge) and on cosine similarity;
* gain versus model size (the knowledge-transfer-ceiling plot), sizes read from each run;
* gain per emotional scenario, as a heatmap of paired gains with their intervals; a star marks
  a cell whose gain differs from 0 after Holm's correction across *all* the cells of the figure
  (every model and scenario of the metric): without it, 64 % of simulated studies with no gain
  anywhere showed a star (3 models x 6 scenarios). The cell's p-value is a t test on the
  persona-robust (CR1) standard error with P - 1 degrees of freedom;
* distance to the reference row (reference minus model) on judged empathy.

Judged empathy counts each item as the judge summary does (model failures at the scale
minimum, infrastructure failures left out). Without a judge only cosine is reported; cosine
of the reference row against itself is not a result (1 by construction) and is never shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tide_bench.core.jsonio import atomic_write_text, read_json, write_json
from tide_bench.core.stats import (
    cluster_codes,
    cluster_mean_se,
    cluster_totals,
    format_estimate,
    holm,
    mean_ci,
    t_pvalues,
)
from tide_bench.data.personas import ATTRIBUTE_LABELS
from tide_bench.data.schema import persona_of_item
from tide_bench.data.sources import SAMPLE_WORDING, synthetic_wording
from tide_bench.generation import load_run
from tide_bench.generation.reference import LABEL, reference_label
from tide_bench.judging.equity import equity_report, fmt_gap, oriented
from tide_bench.judging.files import JUDGMENTS_FILE, RUN_SUBDIR
from tide_bench.judging.judgment import read_judgments
from tide_bench.judging.risk_handling import harm_value
from tide_bench.judging.rubric import load_rubric
from tide_bench.judging.summary import counted_values, safety_adjusted
from tide_bench.study.document import Banner, Block, Figure, Heading, Paragraph, Table, to_html, to_markdown
from tide_bench.study.figures import LABELS, METRICS, draw, write_figures
from tide_bench.study.plan import REFERENCE_CELL, StudyPlan
from tide_bench.study.spec import StudySpec

REPORT_DIR = "report"


@dataclass
class CellData:
    """Per-item values of one cell, keyed by item id."""

    cell: str
    condition: str
    model: str | None
    parameters: int | None
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # metric -> item -> value
    scenario: dict[str, str] = field(default_factory=dict)
    equity: dict[str, Any] | None = None  # judging.equity's block of a judged cell


def cell_equity(run: Any, records: list[dict[str, Any]], rubric: Any) -> dict[str, Any]:
    """The equity block of a judged run (the board's: safety-adjusted score and flag rate per persona group)."""
    by_item = {r["item_id"]: r for r in records}
    gens = sorted((g for g in run.generations if g.item_id in by_item), key=lambda g: g.item_id)
    ordered = [by_item[g.item_id] for g in gens]
    overall = counted_values(ordered, rubric.factor_keys, rubric.scale_min)[:, -1]
    return equity_report(
        [g.persona_id or persona_of_item(g.item_id) for g in gens],
        [g.persona for g in gens],
        safety_adjusted(ordered, overall, rubric.scale_min),
        np.array([harm_value(r) for r in ordered]),
    )


def _cell_data(plan: StudyPlan, out: Path) -> dict[str, CellData]:
    rubric = load_rubric()
    cells: dict[str, CellData] = {}
    for cell in plan.cells:
        eval_stage = next((s for s in plan.for_cell(cell.id) if s.stage == "eval"), None)
        if eval_stage is None or not eval_stage.done or not eval_stage.record:
            continue
        run = load_run(out / eval_stage.record["outputs"]["run"])
        data = CellData(
            cell.id,
            cell.condition,
            cell.model.id if cell.model else None,
            run.manifest.get("model", {}).get("num_parameters"),
        )
        data.scenario = {g.item_id: g.scenario or "(none)" for g in run.generations}
        if cell.id != REFERENCE_CELL:  # similarity of the references to themselves is no result
            data.values["cosine_sim"] = {
                g.item_id: float(g.metrics["cosine_sim"])
                for g in run.generations
                if np.isfinite(g.metrics.get("cosine_sim", np.nan))
            }
        judgments = run.root / RUN_SUBDIR / JUDGMENTS_FILE
        if judgments.is_file():
            records = [j.as_record() for j in read_judgments(judgments, rubric)]
            overall = counted_values(records, rubric.factor_keys, rubric.scale_min)[:, -1]
            data.values["empathy"] = {
                r["item_id"]: float(v) for r, v in zip(records, overall, strict=True) if np.isfinite(v)
            }
            data.equity = cell_equity(run, records, rubric)
        cells[cell.id] = data
    return cells


def paired(a: dict[str, float], b: dict[str, float], items: set[str] | None = None) -> dict[str, Any]:
    """Mean of ``a - b`` over the items both count (optionally within ``items``), with its
    persona-cluster bootstrap 95 % interval (expanded for few personas), n, the number of
    personas and the two-sided p-value of a t test on the CR1 standard error (P - 1 df)."""
    diffs, personas = paired_differences(a, b, items)
    est = mean_ci(diffs, clusters=personas) if personas else None
    if est is None or est.mean is None:
        return {"difference": None, "ci_low": None, "ci_high": None, "n": 0, "n_personas": 0, "p": None}
    p = paired_p(diffs, personas)
    return {
        "difference": est.mean,
        "ci_low": est.ci_low,
        "ci_high": est.ci_high,
        "n": est.n,
        "n_personas": est.n_clusters,
        "design_effect": est.design_effect,
        "p": p,
    }


def paired_differences(
    a: dict[str, float], b: dict[str, float], items: set[str] | None = None
) -> tuple[np.ndarray, list[str]]:
    """``a - b`` on the items both count (optionally within ``items``), and each item's persona."""
    common = sorted(set(a) & set(b) & (items if items is not None else set(a)))
    return np.array([a[i] - b[i] for i in common], dtype=float), [persona_of_item(i) for i in common]


def paired_p(diffs: np.ndarray, personas: list[str]) -> float | None:
    """The two-sided p-value of the mean difference: its CR1 persona-cluster standard error
    referred to t with P - 1 degrees of freedom (what a heatmap star is decided on)."""
    if not personas:
        return None
    codes, n_clusters = cluster_codes(personas)
    point, se, groups = cluster_mean_se(
        cluster_totals(codes, n_clusters, diffs), cluster_totals(codes, n_clusters, np.ones_like(diffs))
    )
    p = float(t_pvalues(point, se, groups - 1.0)[0])
    return p if np.isfinite(p) else None


def star_cells(models: list[dict[str, Any]], metric: str, alpha: float = 0.05) -> int:
    """Holm across every scenario cell of one metric's figure (all models): each cell gets
    ``p_holm`` and ``star`` (adjusted p <= ``alpha``); returns the number of cells tested."""
    cells = [
        cell
        for m in models
        for cell in ((m.get(metric) or {}).get("gain_by_scenario") or {}).values()
        if cell.get("p") is not None
    ]
    for cell, adjusted in zip(cells, holm([c["p"] for c in cells]), strict=True):
        cell["p_holm"] = adjusted
        cell["star"] = bool(adjusted <= alpha)
    return len(cells)


def _mean(values: dict[str, float]) -> dict[str, Any]:
    items = sorted(values)
    est = mean_ci(np.array([values[i] for i in items]), clusters=[persona_of_item(i) for i in items]) if items else None
    return {
        "mean": None if est is None else est.mean,
        "ci_low": None if est is None else est.ci_low,
        "ci_high": None if est is None else est.ci_high,
        "n": 0 if est is None else est.n,
    }


def compute(spec: StudySpec, plan: StudyPlan, out: Path) -> dict[str, Any]:
    """All numbers of the report (also written as report.json)."""
    cells = _cell_data(plan, out)
    reference = cells.get(REFERENCE_CELL)
    result: dict[str, Any] = {
        "study": spec.name,
        "data": spec.data,
        "split": spec.split,
        "prompt": spec.prompt,
        "synthetic_sample": spec.data == "sample",
        "synthetic": synthetic_wording(spec.data),
        "models": [],
    }
    for model in spec.models:
        zs, ft = cells.get(f"{model.id}-zero-shot"), cells.get(f"{model.id}-fine-tuned")
        entry: dict[str, Any] = {
            "model": model.id,
            "name": model.model,
            "verified": model.verified,
            "parameters": next((c.parameters for c in (zs, ft) if c and c.parameters), None),
        }
        for metric in METRICS:
            block: dict[str, Any] = {}
            for label, cell in (("zero-shot", zs), ("fine-tuned", ft)):
                if cell and metric in cell.values:
                    block[label] = _mean(cell.values[metric])
            if zs and ft and metric in zs.values and metric in ft.values:
                block["gain"] = paired(ft.values[metric], zs.values[metric])
                scenarios = sorted({s for s in zs.scenario.values()})
                block["gain_by_scenario"] = {
                    s: paired(ft.values[metric], zs.values[metric], {i for i, v in zs.scenario.items() if v == s})
                    for s in scenarios
                }
            if metric == "empathy" and reference and "empathy" in reference.values:
                block["reference_minus"] = {
                    label: paired(reference.values["empathy"], cell.values["empathy"])
                    for label, cell in (("zero-shot", zs), ("fine-tuned", ft))
                    if cell and "empathy" in cell.values
                }
            if block:
                entry[metric] = block
        result["models"].append(entry)
    if reference and "empathy" in reference.values:
        # named after the study's data (issue 34.11): TIDE's label only on TIDE
        label = reference_label(spec.data, is_sample=spec.data == "sample")
        result["reference"] = {"empathy": _mean(reference.values["empathy"]), "label": label}
    result["scenario_stars"] = {
        metric: {"cells": star_cells(result["models"], metric), "rule": STAR_RULE} for metric in METRICS
    }
    result["equity"] = {cell_id: c.equity for cell_id, c in cells.items() if c.equity is not None}
    return result


STAR_RULE = (
    "* = the cell's paired gain differs from 0 after Holm's correction across every cell of the figure "
    "(family-wise error 5%); p from a t test on the persona-robust standard error, P - 1 degrees of freedom"
)


def _fmt(block: dict[str, Any] | None, key: str = "difference") -> str:
    return format_estimate(block, key=key, signed=key == "difference") or "n/a"


def synthetic_banner(wording: str | None) -> list[Block]:
    """The banner of a report built on synthetic data, in that data's own words."""
    if not wording:
        return []
    return [Banner(f"Built on {wording} and the demo model: these numbers show the mechanism; they are not results.")]


def _metric_table(result: dict[str, Any], metric: str, rows: list[dict[str, Any]]) -> list[Block]:
    body = []
    for m in rows:
        block, size = m[metric], f"{m['parameters'] / 1e9:.2f}B" if m.get("parameters") else "?"
        gain = block.get("gain") or {}
        body.append(
            [
                f"{m['model']}{'' if m['verified'] else ' (unverified)'}",
                size,
                _fmt(block.get("zero-shot"), "mean"),
                _fmt(block.get("fine-tuned"), "mean"),
                _fmt(gain),
                str(gain.get("n", "")),
                str(gain.get("n_personas", "")),
            ]
        )
    header = ("model", "size", "zero-shot", "fine-tuned", "gain (FT - ZS)", "n items", "personas")
    blocks: list[Block] = [Heading(LABELS[metric].capitalize()), Table(header, body, (False, True, *[True] * 5))]
    if metric == "empathy" and result.get("reference"):
        reference = result["reference"]
        blocks.append(Paragraph(f"{reference.get('label', LABEL)}: {_fmt(reference['empathy'], 'mean')}."))
        rows_minus = []
        for m in rows:
            minus = m[metric].get("reference_minus") or {}
            rows_minus.append([m["model"], _fmt(minus.get("zero-shot")), _fmt(minus.get("fine-tuned"))])
        blocks.append(
            Table(("model", "reference minus zero-shot", "reference minus fine-tuned"), rows_minus, (False, True, True))
        )
    scenario_rows = [m for m in rows if m[metric].get("gain_by_scenario")]
    if scenario_rows:
        scenarios = sorted({s for m in scenario_rows for s in m[metric]["gain_by_scenario"]})
        cells = [
            [m["model"]]
            + [
                _fmt(m[metric]["gain_by_scenario"].get(s))
                + ("*" if (m[metric]["gain_by_scenario"].get(s) or {}).get("star") else "")
                for s in scenarios
            ]
            for m in scenario_rows
        ]
        blocks += [
            Paragraph(
                "Gain per scenario (* marks a cell whose gain differs from 0 after Holm's correction across all "
                "cells of the figure):"
            ),
            Table(("model", *scenarios), cells, (False, *[True] * len(scenarios))),
        ]
    return blocks


def blocks(result: dict[str, Any]) -> list[Block]:
    """The report as blocks, from its results (``report.json``): the file and the board's section alike."""
    out: list[Block] = synthetic_banner(
        result.get("synthetic") or (SAMPLE_WORDING if result["synthetic_sample"] else None)
    )
    out.append(
        Paragraph(
            f"Data `{result['data']}`, split `{result['split']}`, prompt condition `{result['prompt']}`. Every "
            "difference is paired (the same items in both arms) with a 95% persona-cluster bootstrap interval; "
            "`n` counts items, personas are the resampled unit."
        )
    )
    for metric in METRICS:
        rows = [m for m in result["models"] if m.get(metric)]
        if rows:
            out += _metric_table(result, metric, rows)
    out += equity_blocks(result.get("equity") or {})
    out += [Figure(f["name"], f["caption"]) for f in result.get("figures", [])]
    return out


def _largest_gap_text(equity: dict[str, Any], attribute: str) -> str:
    """The largest gap of one attribute in the safety-adjusted score, ``*`` when shown."""
    gaps = [g for g in equity.get("gaps") or [] if g["attribute"] == attribute and g["metric"] == 0]
    if not gaps:
        return "not estimable"
    g = oriented(max(gaps, key=lambda x: abs(x["gap"])))
    return f"{fmt_gap(g, False)}{'*' if g['shown'] else ''} ({g['a']} > {g['b']})"


def equity_blocks(equity: dict[str, dict[str, Any]]) -> list[Block]:
    """Per judged cell: the equity verdict and, per attribute, the largest gap in the safety-adjusted
    score (the board's Equity column and section, :mod:`tide_bench.judging.equity`)."""
    if not equity:
        return []
    attributes = list(next(iter(equity.values())).get("attributes") or [])
    rows = [[cell, e["verdict"]["text"], *(_largest_gap_text(e, a) for a in attributes)] for cell, e in equity.items()]
    first = next(iter(equity.values()))
    notes = sorted({n for e in equity.values() for n in e.get("notes") or []})
    out: list[Block] = [
        Heading("Equity across personas"),
        Paragraph(
            "Per cell, the safety-adjusted score and the safety-flag rate per persona group; the verdict names the "
            "largest gap whose simultaneous 95% interval excludes 0 (family-wise over every gap of the cell), and the "
            f"table the largest score gap per attribute (* shown). Method: {first.get('method')}."
        ),
        Table(
            ("cell", "verdict", *(ATTRIBUTE_LABELS.get(a, a) for a in attributes)),
            rows,
            (False, False, *[True] * len(attributes)),
        ),
    ]
    if notes:
        out.append(Paragraph("Not compared: " + "; ".join(notes[:12]) + ("; ..." if len(notes) > 12 else "") + "."))
    return out


def markdown(result: dict[str, Any]) -> str:
    return to_markdown(f"Study {result['study']}", blocks(result))


def write_report(spec: StudySpec, out: Path, plan: StudyPlan) -> Path:
    """``<out>/report/report.md`` with report.json and the SVG figures; returns the markdown path."""
    folder = Path(out) / REPORT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    result = compute(spec, plan, Path(out))
    result["figures"] = write_figures(result, folder)
    write_json(folder / "report.json", result)
    atomic_write_text(folder / "report.md", markdown(result))
    return folder / "report.md"


def report_html(report_md: Path) -> str:
    """The written report as HTML for the study's board (its own section), built from its results
    (``report.json`` beside ``report.md``), with its figures drawn from them inline (the SVG files
    beside the report are not read back: what the page shows is what the results say)."""
    result = read_json(report_md.with_name("report.json"))
    return to_html(blocks(result), {d.name: d.svg for d in draw(result)})
