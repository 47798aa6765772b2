"""``tide-bench data validate``: counts, schema problems, splits and expected sizes."""

from __future__ import annotations

from dataclasses import asdict

from tide_bench.data.context_check import format_leaks, persona_leaks
from tide_bench.data.sources import LoadedDataset, choose_spec, read_source, resolve

EXPECTED_PERSONAS = 500
EXPECTED_CONVERSATIONS = 10_000


def validate(spec: str | None = None) -> dict:
    """Return a report: counts per split/scenario/turn, problems, and size checks.

    ``report["ok"]`` is false when any error was found; warnings do not fail validation.
    """
    dataset: LoadedDataset = read_source(resolve(choose_spec(spec)))
    counts = dataset.counts()
    notes: list[str] = []
    if dataset.source.is_sample:
        notes.append("built-in synthetic sample: not TIDE data; the full-set size checks do not apply")
    else:
        for what, expected in (("personas", EXPECTED_PERSONAS), ("conversations", EXPECTED_CONVERSATIONS)):
            if counts[what] != expected:
                notes.append(f"expected {expected} {what} on the full TIDE set, found {counts[what]}")
    errors = [p for p in dataset.problems if p.severity == "error"]
    return {
        "ok": not errors,
        "source": dataset.source.label,
        "counts": counts,
        "n_errors": len(errors),
        "n_warnings": len(dataset.problems) - len(errors),
        "problems": [asdict(p) | {"text": str(p)} for p in dataset.problems],
        "notes": notes,
        "shape": dataset.shape.to_dict() | {"summary": dataset.shape.summary()},
        "persona_facts_in_references": persona_leaks(dataset.items),
        "dataset_sha256": dataset.content_hash("all") if not errors else None,
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
    for note in report["notes"]:
        lines.append(f"note: {note}")
    if report["problems"]:
        lines.append(f"\n{report['n_errors']} error(s), {report['n_warnings']} warning(s):")
        lines += [f"  {p['text']}" for p in report["problems"]]
    lines.append("\nOK" if report["ok"] else "\nFAILED: fix the errors above")
    return "\n".join(lines)
