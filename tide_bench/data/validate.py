"""``tide-bench data validate``: counts, schema problems, splits, expected sizes and risk labels.

Risk labels (:mod:`.risk_labels`) are checked against the data they describe: the built-in
sample and the risk supplement ship theirs and must fit them (an error otherwise); a snapshot
uses ``risk_labels.json`` beside it or the file given, and without one the report says that the
board's risk gate cannot run on it (a warning: the data itself may be fine).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.data.context_check import format_leaks, persona_leaks
from tide_bench.data.risk_labels import find_labels, label_problems, read_risk_labels
from tide_bench.data.sources import LoadedDataset, choose_spec, read_source, resolve

EXPECTED_PERSONAS = 500
EXPECTED_CONVERSATIONS = 10_000


def risk_label_report(dataset: LoadedDataset, path: str | Path | None = None) -> dict[str, Any]:
    """The risk-label check of ``dataset``: the labels' summary and every problem (``severity``, ``message``)."""
    found = Path(path) if path else find_labels(dataset.source.path)
    if found is None:
        severity = "error" if dataset.source.is_sample else "warning"
        return {
            "path": None,
            "problems": [
                {
                    "severity": severity,
                    "message": "no risk labels (risk_labels.json): every board's risk-handling gate needs them; "
                    "make them with `tide-bench data label-risk` or by hand (docs/data.md, 'Risk labels')",
                }
            ],
        }
    try:
        labels = read_risk_labels(found)
    except DataError as exc:
        return {"path": found.name, "problems": [{"severity": "error", "message": str(exc)}]}
    errors = [p for p in dataset.problems if p.severity == "error"]
    digest = dataset.content_hash("all") if not errors else None
    problems = label_problems(labels, [i.item_id for i in dataset.items], digest)
    return {
        "path": found.name,
        **labels.summary(),
        "problems": [{"severity": sev, "message": msg} for sev, msg in problems],
    }


def validate(spec: str | None = None, risk_labels: str | Path | None = None) -> dict:
    """Return a report: counts per split/scenario/turn, problems, size checks and risk labels.

    ``report["ok"]`` is false when any error was found; warnings do not fail validation.
    """
    dataset: LoadedDataset = read_source(resolve(choose_spec(spec)))
    counts = dataset.counts()
    notes: list[str] = []
    if dataset.source.is_sample:
        notes.append("built-in synthetic sample: not TIDE data; the full-set size checks do not apply")
    elif dataset.release is not None:
        release = dataset.release
        notes.append(
            f"EmpatheticDialogues release: {sum(release['rows'].values())} rows read, {release['broken_rows']} broken "
            f"row(s) left out, {release['skipped_conversations']} conversation(s) without an item (listed below)"
        )
    else:
        for what, expected in (("personas", EXPECTED_PERSONAS), ("conversations", EXPECTED_CONVERSATIONS)):
            if counts[what] != expected:
                notes.append(f"expected {expected} {what} on the full TIDE set, found {counts[what]}")
    errors = [p for p in dataset.problems if p.severity == "error"]
    risk = risk_label_report(dataset, risk_labels)
    risk_errors = [p for p in risk["problems"] if p["severity"] == "error"]
    return {
        "ok": not errors and not risk_errors,
        "source": dataset.source.label,
        "counts": counts,
        "n_errors": len(errors),
        "n_warnings": len(dataset.problems) - len(errors),
        "problems": [asdict(p) | {"text": str(p)} for p in dataset.problems],
        "notes": notes,
        "shape": dataset.shape.to_dict() | {"summary": dataset.shape.summary()},
        # TIDE's persona metadata is hidden from model and judge; ED's "persona" is its own labels
        "persona_facts_in_references": persona_leaks(dataset.items if dataset.release is None else []),
        "dataset_sha256": dataset.content_hash("all") if not errors else None,
        "risk_labels": risk,
    }


def format_report(report: dict) -> str:
    """Readable text for the terminal."""
    c = report["counts"]
    shape = report["shape"]
    lines = [
        f"source: {report['source']}",
        f"personas: {c['personas']}   conversations: {c['conversations']}   generation items: {c['items']}",
        "",
        "shape the loader found:",
        f"  exchanges:      {shape['summary']}",
        *(f"  files:          {name} ({n})" for name, n in shape["file_patterns"].items()),
        *(f"  file content:   {name} ({n} files)" for name, n in shape["containers"].items()),
        *(f"  conversation:   {name} ({n})" for name, n in shape["conversation_forms"].items()),
        "",
        f"{'split':<12}{'personas':>10}{'conversations':>15}{'items':>8}",
    ]
    for split, row in c["by_split"].items():
        lines.append(f"{split:<12}{row['personas']:>10}{row['conversations']:>15}{row['items']:>8}")
    lines += ["", "items per scenario:"]
    lines += [f"  {name:<28}{n:>6}" for name, n in c["by_scenario"].items()]
    lines += ["items per turn:"] + [f"  turn {t:<23}{n:>6}" for t, n in c["by_turn"].items()]
    lines = format_leaks(report["persona_facts_in_references"], [*lines, ""])
    if report["dataset_sha256"]:
        lines.append(f"\ndataset sha256: {report['dataset_sha256']}")
    lines += _risk_lines(report.get("risk_labels") or {})
    for note in report["notes"]:
        lines.append(f"note: {note}")
    if report["problems"]:
        lines.append(f"\n{report['n_errors']} error(s), {report['n_warnings']} warning(s):")
        lines += [f"  {p['text']}" for p in report["problems"]]
    lines.append("\nOK" if report["ok"] else "\nFAILED: fix the errors above")
    return "\n".join(lines)


def _risk_lines(risk: dict[str, Any]) -> list[str]:
    lines = ["", f"risk labels: {risk.get('path') or 'none found'}"]
    if "n_labelled" in risk:
        by = risk["labelled_by"]
        kinds = ", ".join(f"{k} {n}" for k, n in risk["by_kind"].items()) or "none"
        ladder = ", ".join(f"{k} {n}" for k, n in risk["by_severity"].items()) or "none"
        lines += [
            f"  {risk['n_labelled']} items labelled; {risk['n_risk_items']} risk items ({kinds}); "
            f"severity: {ladder}; {risk['n_severe_items']} severe ({', '.join(risk['severe_rungs'])})",
            f"  labelled by: {by.get('kind')} ({by.get('who') or (by.get('judge') or {}).get('model', '?')})",
            f"  review: {risk['review']['status']}",
        ]
    lines += [f"  {p['severity']}: {p['message']}" for p in risk.get("problems") or []]
    return lines
