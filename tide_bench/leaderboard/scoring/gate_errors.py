"""The safety gate's measured error rates, shown beside its verdict (issue 44, clinical re-check V3).

Why: a zero-tolerance gate is only as good as the judge's flag. The page states, for the board's
judge, how often its safety flag was wrong where the right answer is known, from evidence the
maintainer attaches to the build; where there is none it says **not yet measured**, never a
number it did not measure:

* **probes** (``build --probes-report probes_report.json`` from ``tide-bench judge --probes``):
  replies written with a known flag expectation. *False-positive rate*: flagged among the probes
  that must not be flagged; *false-negative rate*: not flagged among those that must be. Probes
  nest in their contexts, so the Wilson intervals use the contexts as clusters; unscored
  (inconclusive) probes are left out and counted.
* **gold set** (``build --audit agreement.json``, its ``safety`` block): the judge against the
  human majority on rated items: 1 - specificity and 1 - sensitivity, with the audit's intervals.

These are rates per judge call; the gate decides a severe item on the majority of k calls, whose
error rate is lower only to the extent that the calls' errors are independent (not assumed here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.jsonio import read_json
from tide_bench.core.stats import proportion_ci
from tide_bench.judging.probes import FLAG_REQUIRED

NOT_MEASURED = "not yet measured"
MAX_BYTES = 50_000_000


def audited_keys(judges: Iterable[Any], version: str) -> list[str]:
    """The keys (``name@version``) of an audit's judges that are the judge configuration ``version``."""
    return [j for j in judges if isinstance(j, str) and "@" in j and version.startswith(j.rsplit("@", 1)[1])]


def _not_measured(why: str) -> dict[str, Any]:
    return {"measured": False, "note": f"{NOT_MEASURED}: {why}"}


def _must_flag(check: Mapping[str, Any]) -> bool | None:
    stated = check.get("must_flag")
    return stated if isinstance(stated, bool) else FLAG_REQUIRED.get(str(check.get("expect")))


def probe_rates(path: Path, version: str | None) -> dict[str, Any]:
    """False-positive and false-negative rates of the judge's flag on a probe report of the board's judge."""
    report = read_json(path, DataError, max_bytes=MAX_BYTES)
    checks = report.get("checks") if isinstance(report, dict) else None
    judge = (report.get("judge") or {}) if isinstance(report, dict) else {}
    if not isinstance(checks, list) or not isinstance(judge, dict):
        raise DataError("not a probes_report.json from `tide-bench judge --probes` (no 'checks')", path=path)
    if version is None or judge.get("version") != version:
        raise ConfigError(
            f"the probe report is of judge configuration {judge.get('version')}, not the board's ({version}): another "
            "judge's error rates would misstate this board's gate",
            path=path,
            field="judge.version",
            hint="run `tide-bench judge --probes` with the board's judge, or build without --probes-report",
        )
    positives: list[tuple[float, str]] = []
    negatives: list[tuple[float, str]] = []
    inconclusive = 0
    for c in checks:
        if not isinstance(c, dict) or (must := _must_flag(c)) is None:
            continue
        if c.get("verdict") == "inconclusive":
            inconclusive += 1
            continue
        flagged = float(bool(c.get("safety_flagged")))
        (positives if must else negatives).append((1.0 - flagged if must else flagged, str(c.get("context"))))
    if not positives and not negatives:
        return _not_measured("the probe report holds no scored probe with a flag expectation")

    def rate(pairs: list[tuple[float, str]]) -> dict[str, Any]:
        return proportion_ci([v for v, _ in pairs], clusters=[c for _, c in pairs]).as_dict()

    return {
        "measured": True,
        "source": path.name,
        "false_positive": rate(negatives),
        "false_negative": rate(positives),
        "n_inconclusive": inconclusive,
        "note": "per judge call, on replies written with a known flag expectation (clusters: contexts)",
    }


def gold_rates(audit: Mapping[str, Any] | None, version: str | None) -> dict[str, Any]:
    """1 - specificity and 1 - sensitivity of the judge's flag against the human majority (an audit's safety block)."""
    safety = (audit or {}).get("safety")
    if not isinstance(safety, dict) or not isinstance(safety.get("judges"), dict) or version is None:
        return _not_measured("no human safety ratings of the board's judge were attached (build --audit)")
    keys = audited_keys(safety["judges"], version)
    if len(keys) != 1:
        return _not_measured("the attached audit has no safety ratings of the board's judge")
    versus = (safety["judges"][keys[0]] or {}).get("vs_majority") or {}

    def flip(block: Any) -> dict[str, Any] | None:
        if not isinstance(block, dict) or block.get("mean") is None:
            return None
        return block | {"mean": 1 - block["mean"], "ci_low": 1 - block["ci_high"], "ci_high": 1 - block["ci_low"]}

    fp, fn = flip(versus.get("specificity")), flip(versus.get("sensitivity"))
    if fp is None and fn is None:
        return _not_measured("the audit's gold items hold no flag the human majority agreed on")
    return {
        "measured": True,
        "source": "audit",
        "false_positive": fp,
        "false_negative": fn,
        "note": "per judge call, against the majority of human raters on the gold items (clusters: personas)",
    }


def gate_error_rates(
    probes_report: str | Path | None, audit: Mapping[str, Any] | None, version: str | None
) -> dict[str, Any]:
    """The block the page shows beside the gate: probe and gold-set error rates, or why not measured."""
    probes = (
        probe_rates(Path(probes_report), version)
        if probes_report
        else _not_measured("no probe report of the board's judge was attached (build --probes-report)")
    )
    return {"probes": probes, "gold": gold_rates(audit, version)}
