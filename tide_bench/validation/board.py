"""``tide-bench validation board``: a static judges leaderboard from validation reports.

AlpacaEval's judges table is the model: one row per judge configuration, and for each the
agreement with people it was checked against. Here a row holds, per pack, the agreement on the
attributes that stand in for TIDE's factors (quadratic-weighted kappa with its interval, signed
bias), the alternative annotator test where a pack has several raters ("passes in X of Y
packs", Benjamini-Yekutieli across packs), the cost per 1,000 items where the run recorded
it, and the length-bias slope (how much more the judge rewards length than the experts do,
per 100 words). Every judge configuration shipped in ``judges/`` that no report covers gets a
row that says "not run", so an unvalidated default is visible as such.

Writes ``index.html`` (self-contained, no script), ``judges.json`` (the rows and the stamps
the model leaderboard shows, :mod:`.stamps`) and ``judges.csv``.
"""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path
from typing import Any

import yaml

from tide_bench.core.atomic_dir import staged_folder
from tide_bench.core.errors import DataError
from tide_bench.core.jsonio import atomic_write_text, read_json, write_json
from tide_bench.core.provenance import utc_now
from tide_bench.core.resources import resource_dir
from tide_bench.core.spreadsheet import spreadsheet_safe
from tide_bench.validation.items import OUT_OF_DOMAIN
from tide_bench.validation.report import cross_pack_summary
from tide_bench.validation.report_check import check_report
from tide_bench.validation.stamps import PAGE, STAMPS_FILE

NOT_RUN = "not run"
REPORT_MAX_BYTES = 100_000_000


def _reports(paths: list[str | Path]) -> dict[str, dict[str, Any]]:
    """Pack name -> report, from single- or multi-pack report files (a pack twice is refused)."""
    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        data = read_json(path, DataError, max_bytes=REPORT_MAX_BYTES)
        packs = data.get("packs") if isinstance(data, dict) and "packs" in data else {None: data}
        if not isinstance(packs, dict):
            raise DataError("'packs' must map pack names to reports", path=path, field="packs")
        for key, rep in packs.items():
            if not isinstance(rep, dict) or "judges" not in rep or "pack" not in rep:
                raise DataError("not a `tide-bench validation report --json` file", path=path)
            check_report(rep, path, "" if key is None else f"packs.{key}.")
            if rep["pack"] in out:
                merged = out[rep["pack"]]
                clash = set(merged["judges"]) & set(rep["judges"])
                if clash or merged.get("mode") != rep.get("mode"):
                    raise DataError(f"pack {rep['pack']} is reported twice (judge {sorted(clash)})", path=path)
                merged["judges"].update(rep["judges"])
            else:
                out[rep["pack"]] = rep
    if not out:
        raise DataError("no report given", hint="tide-bench validation board --report report.json --out DIR")
    return out


def _est(e: dict[str, Any] | None, digits: int = 2, signed: bool = False) -> str:
    if not isinstance(e, dict) or e.get("value") is None:
        return "n/a"
    fmt = f"{{:+.{digits}f}}" if signed else f"{{:.{digits}f}}"
    both = e.get("ci_low") is not None and e.get("ci_high") is not None
    ci = f" [{fmt.format(e['ci_low'])}, {fmt.format(e['ci_high'])}]" if both else ""
    return fmt.format(e["value"]) + ci


def _headline(rep: dict[str, Any], block: dict[str, Any]) -> list[dict[str, Any]]:
    """The attributes of a pack that stand in for a TIDE factor (those a tide-bench judge is compared on)."""
    dims = rep.get("dimensions") or {}
    out = []
    for dim, stats in (block.get("dimensions") or {}).items():
        info = dims.get(dim) or {}
        if not info.get("judge_factor"):
            continue
        alt = (stats.get("alt_test") or {}).get("result")
        out.append(
            {
                "dimension": dim,
                "proxy_for": info.get("proxy_for"),
                "n": stats.get("n"),
                "qwk": stats.get("qwk"),
                "spearman": stats.get("spearman"),
                "bias": stats.get("bias"),
                "length_bias_per_100_words": stats.get("length_bias_per_100_words"),
                "alt_test": None
                if not alt
                else {
                    "passed": alt.get("passed"),
                    "winning_rate": alt.get("winning_rate"),
                    "advantage_probability": alt.get("advantage_probability"),
                    "epsilon": alt.get("epsilon"),
                    "method": alt.get("method"),
                },
            }
        )
    return out


def _shipped_configs() -> list[dict[str, Any]]:
    configs = []
    for path in sorted(resource_dir("judges").glob("*/config.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        configs.append(
            {"name": raw.get("name") or path.parent.name, "model": raw.get("model"), "family": raw.get("family")}
        )
    return configs


def board_data(paths: list[str | Path]) -> dict[str, Any]:
    reports = _reports(paths)
    across = cross_pack_summary(reports)
    rows: dict[str, dict[str, Any]] = {}
    for pack, rep in sorted(reports.items()):
        for judge, block in rep["judges"].items():
            identity = block.get("identity") or {}
            row = rows.setdefault(
                judge,
                {
                    "judge": judge,
                    "source": "published ratings (the dataset authors' own prompt)"
                    if block.get("source") == "published"
                    else "tide-bench judge run",
                    "config": identity.get("name"),
                    "version": identity.get("version"),
                    "rubric": identity.get("rubric"),
                    "model": block.get("model"),
                    "family": block.get("family"),
                    "packs": {},
                    "usd_per_1000_items": block.get("usd_per_1000_items"),
                },
            )
            row["packs"][pack] = {
                "mode": rep.get("mode"),
                "excluded_responders": block.get("excluded_responders"),
                "n_unscored": block.get("n_unscored"),
                "n_judged": block.get("n_judged"),
                "attributes": _headline(rep, block),
            }
            if row["usd_per_1000_items"] is None:
                row["usd_per_1000_items"] = block.get("usd_per_1000_items")
    for judge, row in rows.items():
        row["alt_test"] = across.get(judge)
    covered = {r["config"] for r in rows.values() if r.get("config")}
    for config in _shipped_configs():
        if config["name"] not in covered:
            rows[f"{config['name']} (shipped configuration)"] = {
                "judge": f"{config['name']} (shipped configuration)",
                "source": NOT_RUN,
                "config": config["name"],
                "model": config["model"],
                "family": config["family"],
                "packs": {},
                "alt_test": None,
                "usd_per_1000_items": None,
            }
    return {
        "schema_version": 1,
        "built_at": utc_now(),
        "out_of_domain": OUT_OF_DOMAIN,
        "packs": {
            name: {
                "title": rep.get("title"),
                "citation": rep.get("citation"),
                "mode": rep.get("mode"),
                "design": rep.get("design"),
                "licence": (rep.get("provenance") or {}).get("licence"),
                "revision": (rep.get("provenance") or {}).get("revision"),
                "unpinned": (rep.get("provenance") or {}).get("unpinned"),
                "mapping": {d: i.get("map") for d, i in (rep.get("dimensions") or {}).items()},
                "human_baseline": _baseline_summary(rep),
            }
            for name, rep in sorted(reports.items())
        },
        "rows": list(rows.values()),
        "stamps": _stamps(rows.values()),
    }


def _baseline_summary(rep: dict[str, Any]) -> dict[str, str] | None:
    baseline = rep.get("human_baseline")
    if not baseline:
        return None
    return {
        dim: f"{b['n_passed']} of {b['n']} experts pass as the judge; {b['n_randomised_passed']} of {b['n']} "
        "randomised controls pass"
        for dim, b in baseline.items()
    }


def _stamps(rows: Any) -> dict[str, dict[str, Any]]:
    """For tide-bench judge configurations: what the model leaderboard says about the judge."""
    stamps = {}
    for row in rows:
        if row["source"] != "tide-bench judge run" or not row.get("config") or not row.get("version"):
            continue
        alt = row.get("alt_test") or {}
        tested, passes = alt.get("tested", 0), alt.get("passes", 0)
        if tested:
            status = "passed" if passes == tested else ("failed" if passes == 0 else "mixed")
            verdict = f"alt-test passes in {passes} of {tested} pack(s)"
        else:
            status, verdict = "agreement only", "no multi-rater pack: agreement reported, no alt-test verdict"
        kappas = "; ".join(
            f"{pack} {a['dimension']} QWK {_est(a['qwk'])}" for pack, p in row["packs"].items() for a in p["attributes"]
        )
        stamps[f"{row['config']}@{str(row['version'])[:8]}"] = {
            "status": status,
            "text": f"out-of-domain validation: {verdict}" + (f"; {kappas}" if kappas else ""),
            "anchor": f"judge-{_anchor(row['judge'])}",
        }
    return stamps


def _anchor(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def esc(value: Any) -> str:
    """Every value a report gives, as page text (a report is a user's file)."""
    return html.escape(str(value))


def _number(value: Any, fmt: str) -> str:
    return "n/a" if value is None else esc(format(value, fmt))


def _pack_cell(pack: dict[str, Any] | None, published: bool = False) -> str:
    if not pack:
        return f'<td class="muted">{"no ratings in this pack" if published else NOT_RUN}</td>'
    lines = []
    for a in pack["attributes"]:
        alt = a.get("alt_test")
        verdict = ""
        if alt and alt.get("passed") is not None:
            verdict = (
                f"<br>alt-test (&epsilon; {_number(alt['epsilon'], 'g')}): "
                f"<b>{'pass' if alt['passed'] else 'fail'}</b>, &omega; {_number(alt['winning_rate'], '.2f')}, "
                f"&rho; {_number(alt['advantage_probability'], '.2f')}"
            )
        lines.append(
            f"<b>{esc(a['dimension'])}</b> (&rarr; {esc(a['proxy_for'])}, n {esc(a['n'])}): "
            f"QWK {esc(_est(a['qwk']))}, bias {esc(_est(a['bias'], signed=True))}, length slope "
            f"{esc(_est(a['length_bias_per_100_words'], signed=True))}{verdict}"
        )
    if pack.get("n_unscored"):
        lines.append(
            f"<b>unscored: {esc(pack['n_unscored'])} of {esc(pack.get('n_judged'))}</b> (left out of the numbers)"
        )
    excluded = ", ".join(pack.get("excluded_responders") or []) or "none"
    lines.append(f'<span class="muted">own-family replies left out: {esc(excluded)}</span>')
    return "<td>" + "<br>".join(lines) + "</td>"


STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:90rem;color:#1b1b1b}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{border:1px solid #ccc;padding:.4rem;vertical-align:top}
th{background:#f2f2f2;text-align:left}.muted{color:#666}.banner{background:#fff4d6;border:1px solid #e0b400;
padding:.6rem;margin:1rem 0}code{background:#f4f4f4;padding:0 .2rem}
"""


def render(data: dict[str, Any]) -> str:
    why = data["out_of_domain"].split(": ", 1)[-1]
    packs = list(data["packs"])
    head = "".join(f"<th>{html.escape(p)}</th>" for p in packs)
    body = []
    for row in data["rows"]:
        alt = row.get("alt_test")
        alt_text = NOT_RUN if row["source"] == NOT_RUN else (alt["summary"] if alt else "no multi-rater pack")
        cost = row.get("usd_per_1000_items")
        cost_text = NOT_RUN if row["source"] == NOT_RUN else ("n/a" if cost is None else "$" + _number(cost, ".2f"))
        who = f"{html.escape(str(row.get('model') or ''))}" + (
            f"<br><code>{html.escape(str(row['version']))}</code> {html.escape(str(row.get('rubric') or ''))}"
            if row.get("version")
            else ""
        )
        body.append(
            f'<tr id="judge-{_anchor(row["judge"])}"><td><b>{html.escape(row["judge"])}</b><br>{who}</td>'
            f"<td>{html.escape(row['source'])}</td>"
            + "".join(_pack_cell(row["packs"].get(p), row["source"].startswith("published")) for p in packs)
            + f"<td>{html.escape(alt_text)}</td><td>{cost_text}</td></tr>"
        )
    about = []
    for name, p in data["packs"].items():
        mapping = "".join(f"<li><code>{html.escape(str(m))}</code></li>" for m in p["mapping"].values() if m)
        baseline = "".join(
            f"<li>{html.escape(d)}: {html.escape(t)}</li>" for d, t in (p["human_baseline"] or {}).items()
        )
        unpinned = f" <b>Unpinned:</b> {html.escape(', '.join(p['unpinned']))}." if p.get("unpinned") else ""
        about.append(
            f"<h3>{html.escape(name)}: {html.escape(str(p['title']))}</h3><p>{html.escape(str(p['design']))} "
            f"Licence: {html.escape(str(p['licence']))}; revision <code>{html.escape(str(p['revision']))}</code>; "
            f"mode <code>{html.escape(str(p['mode']))}</code>.{unpinned}</p>"
            f"<p class='muted'>{html.escape(str(p['citation']))}"
            f"</p><ul>{mapping}</ul>" + (f"<p>Human baseline:</p><ul>{baseline}</ul>" if baseline else "")
        )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>tide-bench judges board</title>"
        f"<style>{STYLE}</style></head><body><h1>Judges board</h1>"
        f"<div class='banner' role='note'><b>Out of domain:</b> {html.escape(why)}. "
        "A judge is never "
        "scored on replies of its own model family. Rows marked <i>not run</i> have no validation yet: run "
        "<code>tide-bench validation run PACK --judge NAME</code> with a key.</div>"
        f"<table><thead><tr><th>Judge</th><th>Source</th>{head}<th>Alt-test</th><th>$ / 1,000 items</th></tr>"
        f"</thead><tbody>{''.join(body)}</tbody></table><h2>Packs</h2>{''.join(about)}"
        f"<p class='muted'>Built {html.escape(data['built_at'])}. QWK: quadratic-weighted kappa; intervals: 95 % "
        "bootstrap over each pack's cluster; length slope: (judge - experts) per 100 words of reply.</p></body></html>"
    )


def _csv(data: dict[str, Any]) -> str:
    buffer = io.StringIO()
    fields = ["judge", "source", "pack", "dimension", "proxy_for", "n", "qwk", "bias", "length_slope", "alt_test"]
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in data["rows"]:
        for pack, p in row["packs"].items():
            for a in p["attributes"]:
                alt = a.get("alt_test") or {}
                cells = {
                    "judge": row["judge"],
                    "source": row["source"],
                    "pack": pack,
                    "dimension": a["dimension"],
                    "proxy_for": a["proxy_for"],
                    "n": a["n"],
                    "qwk": (a["qwk"] or {}).get("value"),
                    "bias": (a["bias"] or {}).get("value"),
                    "length_slope": (a["length_bias_per_100_words"] or {}).get("value"),
                    "alt_test": "" if alt.get("passed") is None else ("pass" if alt["passed"] else "fail"),
                }
                # every cell: a report is a user's file, its pack and dimension names too
                writer.writerow({k: spreadsheet_safe(v) for k, v in cells.items()})
    return buffer.getvalue()


def build_board(reports: list[str | Path], out: str | Path) -> dict[str, Any]:
    """Write the judges board into ``out`` (a new folder, or one this command wrote before)."""

    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / STAMPS_FILE).is_file())):
        raise DataError(f"{out} exists and is not a judges board folder: refusing to replace it")
    data = board_data(reports)
    with staged_folder(out) as staging:
        atomic_write_text(staging / PAGE, render(data))
        write_json(staging / STAMPS_FILE, data)
        atomic_write_text(staging / "judges.csv", _csv(data))
    return data
