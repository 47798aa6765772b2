"""The docs a reader reads: no placeholder left anywhere in docs/, and the generated tables of
docs/statistics.md exactly what ``python -m tests.calibration.report`` writes from the committed
measurements (docs/calibration/*.jsonl), with every published number measured."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.calibration import report

ROOT = Path(__file__).resolve().parent.parent
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]

# a line that is one ALL_CAPS_TOKEN (MEASURED_TABLE), a {{template}} field, a TODO-style marker
PLACEHOLDER = re.compile(
    r"^\s*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\s*$|\{\{\s*[\w. -]*\}\}|\b(?:TODO|TBD|FIXME|XXX)\b", re.MULTILINE
)


def placeholders(text: str) -> list[str]:
    return [m.group(0).strip() for m in PLACEHOLDER.finditer(text)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_placeholder_is_left_in_the_docs(doc: Path) -> None:
    found = placeholders(doc.read_text(encoding="utf-8"))
    assert not found, f"{doc.relative_to(ROOT)}: unfilled placeholder(s) {found}"


def test_the_placeholder_check_sees_the_shapes_that_shipped_before() -> None:
    """The tokens docs/statistics.md once shipped instead of its tables, and their kin."""
    shipped = "## The table\n\nMEASURED_TABLE\n\nKIT_TABLE\n\ntext\nHALO_POWER\n"
    assert placeholders(shipped) == ["MEASURED_TABLE", "KIT_TABLE", "HALO_POWER"]
    assert placeholders("the rate is {{ rate }} here; TODO: measure") == ["{{ rate }}", "TODO"]
    assert placeholders('`{"a": {"b": 1}}` and `TIDE_BENCH_CALIBRATION=full`, see MEASURED') == []


def test_the_generated_tables_are_what_the_report_writes_from_the_committed_measurements() -> None:
    page = report.PAGE.read_text(encoding="utf-8")
    assert report.fill(page, report.sections()) == page, (
        "docs/statistics.md differs from its measurements: run python -m tests.calibration.report"
    )
    for name in report.SECTIONS:  # never an empty section
        body = page.split(f"<!-- BEGIN GENERATED {name} -->\n", 1)[1].split(f"<!-- END GENERATED {name} -->", 1)[0]
        assert body.count("\n|") >= 2, name


def test_every_published_number_is_measured_in_both_modes_and_passed() -> None:
    """All 35 rows (the review's 33 and two added) have full-mode measurements; both runs are
    complete (exit status 0) and every assertion recorded in them held."""
    rows = [r["row"] for r in report.rows()]
    assert rows == [str(i) for i in range(1, 36)]
    for mode in report.MODES:
        meta, records = report.load(mode)
        assert meta["exit_status"] == 0 and meta["mode"] == mode, meta
        assert all(r.get("passed", True) for r in records), [r["label"] for r in records if r.get("passed") is False]
    _, full = report.load("full")
    assert {r["row"] for r in full} == set(rows)
    assert {r["mode"] for r in full} == {"full"} and {r["mode"] for r in report.load("fast")[1]} == {"fast"}


def test_the_fast_mode_is_powered_as_the_page_says() -> None:
    """Every fast-mode coverage or level assertion that carries a claim catches a 90 %-coverage
    interval or a 10 %-size test with probability at least 0.8, recomputed from its bounds."""
    from tests.calibration.power import REQUIRED, Bounds

    _, fast = report.load("fast")
    checked = [r for r in fast if r["kind"] in ("coverage", "level")]
    assert len({r["row"] for r in checked}) >= 25
    for r in checked:
        bounds = Bounds.of(r["kind"], r["nominal"], r["reps"], r["cells"], r["ceiling"])
        assert bounds.caught() == pytest.approx(r["caught"], abs=1e-6)
        assert r["unpowered"] or bounds.caught() >= REQUIRED, r["label"]


def test_the_measurements_are_plain_json_lines() -> None:
    """What the report reads is what the suite writes: one object a line, a run line first."""
    for mode in report.MODES:
        lines = (report.DATA / f"{mode}.jsonl").read_text(encoding="utf-8").splitlines()
        first = json.loads(lines[0])
        assert first["kind"] == "run" and {"commit", "date", "wall_s", "cpu_s", "machine", "command"} <= set(first)
        assert all(isinstance(json.loads(line), dict) for line in lines)
