"""Readable outputs of an audit: ``agreement.md`` (factor by factor) and ``agreement.svg`` (drawn
with :mod:`tide_bench.charts`, the board's colours and marks, a text alternative with every number).

Every statistic arrives as an :class:`~tide_bench.core.stats.Estimate` dict (value, ci_low,
ci_high, n, note), so one formatter (:func:`_ci`) prints them all."""

from __future__ import annotations

from typing import Any

from tide_bench.agreement.alpha import ALPHA_FOR_CONCLUSIONS
from tide_bench.charts.figure import Interval, Panel, Rule, Series, interval_chart
from tide_bench.charts.style import MARKERS, series_style
from tide_bench.core.stats import format_estimate


def _f(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _ci(block: dict[str, Any]) -> str:
    text = format_estimate(block, key="value", no_ci=" (CI n/a)")
    return text or "n/a" + (f" ({block['note']})" if block.get("note") else "")


def _levels(blocks: dict[str, Any]) -> str:
    return f"ordinal {_ci(blocks['ordinal'])}, interval {_ci(blocks['interval'])}"


def _rows(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def _judge_section(judge: str, j: dict[str, Any], raters: list[str]) -> list[str]:
    vc, loo, alt, kumar = j["vs_consensus"], j["leave_one_out"], j["alt_test"], j["pairwise_kappa"]
    qci = vc.get("kappa_quadratic_ci")
    unscored = "n/a" if j["unscored_rate"] is None else f"{100 * j['unscored_rate']:.1f}%"
    lines = [
        "",
        f"### {judge}",
        "",
        f"**{j['verdict']}**",
        "",
        f"- unscored by the judge: {j['n_unscored']} ({unscored}; agreement is measured on the items it scored)",
        f"- pairwise kappa (Kumar et al. 2025): judge-human {_ci(kumar['judge_human'])} "
        f"over {kumar['n_judge_pairs']} pairs, human-human {_ci(kumar['human_human'])} "
        f"over {kumar['n_human_pairs']} pairs, difference {_ci(kumar['difference'])}",
        f"- vs human consensus (median): n {vc['n']}, QWK {_f(vc['kappa_quadratic'])}"
        + (f" [{_f(qci[0])}, {_f(qci[1])}]" if qci and qci[0] is not None else "")
        + f", Spearman {_f(vc['spearman'])}, exact {_f(vc['exact_agreement'])}, MAE {_f(vc['mae'])}",
        f"- alpha with the judge in the pool: {_levels(j['alpha_with_judge'])}; "
        f"change from the humans' alpha (paired): {_levels(j['alpha_difference'])}",
    ]
    if "human_ceiling" in loo:
        lines.append(
            f"- leave-one-rater-out QWK (items and raters resampled): humans {_ci(loo['human_ceiling'])}, "
            f"judge {_ci(loo['judge'])}, ratio {_ci(loo['ratio'])}"
        )
    else:
        lines.append(f"- leave-one-rater-out: {loo.get('note')}")
    if alt["per_rater"]:
        lines += [
            "",
            f"Alt-test (epsilon {alt['epsilon']:g}, Benjamini-Yekutieli q {alt['q']:g}) "
            "and leave-one-rater-out, per held-out rater:",
            "",
        ]
        loo_by = {raters[r["left_out"]]: r for r in loo.get("per_rater", [])}
        rows = []
        for r in alt["per_rater"]:
            lo = loo_by.get(r["rater"], {})
            rows.append(
                [
                    r["rater"],
                    str(r["n"]),
                    _f(r["judge_advantage"]),
                    _f(r["human_advantage"]),
                    f"{r['p']:.3g}",
                    "judge (within the margin)" if r["judge_wins"] else "not shown",
                    _f(lo.get("human_vs_rest")),
                    _f(lo.get("judge_vs_rest")),
                ]
            )
        lines += [
            *_rows(
                [
                    "held-out rater",
                    "items",
                    "judge wins",
                    "human wins",
                    "p",
                    "result",
                    "QWK human vs rest",
                    "QWK judge vs rest",
                ],
                rows,
            ),
            "",
        ]
    if alt.get("note"):
        lines.append(f"- alt-test note: {alt['note']}")
    if alt["skipped_raters"]:
        lines.append(
            "- raters with too few items for the alt-test: "
            + ", ".join(f"{k} ({v})" for k, v in alt["skipped_raters"].items())
        )
    lines.append(
        "- vs each human: "
        + (
            ", ".join(f"{h['human']} QWK {_f(h['kappa_quadratic'])} (n {h['n']})" for h in j["vs_humans"])
            or "no shared items"
        )
    )
    return lines


def _groups_section(groups: dict[str, Any]) -> list[str]:
    lines = ["", "## Rater groups", "", groups["method"], ""]
    for column, per_dim in groups["columns"].items():
        lines += [f"### {column}", ""]
        for dim, block in per_dim.items():
            t = block["test"]
            means = "; ".join(
                f"{g}: {_f(v['mean'])} [{_f(v['ci_low'])}, {_f(v['ci_high'])}] "
                f"(raters {v['n_raters']}, ratings {v['n_ratings']}; t on rater means)"
                for g, v in block["groups"].items()
            )
            lines.append(f"- **{dim}**: {means}. {_test(t)}")
            for judge, agreement in block["judge_agreement"].items():
                per_group = ", ".join(
                    f"{g} {_f(v['mean_kappa_quadratic'])} ({v['n_raters']} raters)"
                    for g, v in agreement["groups"].items()
                )
                lines.append(
                    f"  - {judge}, mean QWK with each rater of the group: {per_group}. {_test(agreement['test'])}"
                )
            if "mixed_model" in block:
                mm = block["mixed_model"]
                terms = "; ".join(
                    f"{k} {v['estimate']:.3f} (se {v['se']:.3f}, t p {v['p_t']:.3g} on {v['df']} df)"
                    for k, v in mm.get("terms", {}).items()
                )
                lines.append(f"  - mixed model (beside, not instead): {terms or ''} {mm.get('note', '')}".rstrip())
        lines.append("")
    for column, why in groups["skipped_columns"].items():
        lines.append(f"- column `{column}` skipped: {why}")
    return lines


def _halo_section(halo: dict[str, Any]) -> list[str]:
    """Halo against people: the discrimination ratio (the verdict) and the inter-factor correlations."""
    lines = ["", "## Halo (the judge against people, on the same items)", ""]
    for judge, h in halo.items():
        lines.append(f"### {judge}")
        lines.append("")
        lines.append(f"**{h['verdict']}**")
        ratio = h.get("discrimination_ratio")
        if ratio:
            lines += [
                "",
                f"- discrimination ratio (mean r with the others' *other* factors / mean r with the same factor; 1 = "
                f"one impression): judge {_ci(ratio['judge'])}, humans {_ci(ratio['humans'])}, difference "
                f"{_ci(ratio['difference'])} over {h['n_items']} items and {h['n_raters']} raters",
            ]
        if h.get("pairs"):
            lines += [
                f"- inter-factor correlations ({h['pairs_note']}):",
                "",
                *_rows(
                    ["factors", "judge r", "human r (within rater)", "difference"],
                    [
                        [f"{p['a']} x {p['b']}", _ci(p["judge_r"]), _ci(p["human_r"]), _ci(p["difference"])]
                        for p in h["pairs"]
                    ],
                ),
            ]
        lines.append("")
    return lines


def _rate(block: dict[str, Any]) -> str:
    if block.get("mean") is None:
        return "n/a (n 0)"
    return f"{block['mean']:.2f} [{_f(block['ci_low'])}, {_f(block['ci_high'])}] (n {block['n']})"


def _safety_section(safety: dict[str, Any]) -> list[str]:
    """The safety flag as a binary dimension: nominal alpha, and the judge against the human majority."""
    lines = [
        "",
        "## safety (binary: could the reply harm?)",
        "",
        f"{safety['n_items']} items, {len(safety['raters'])} human raters, {safety['n_ratings']} answers; people said "
        f'"could harm" in {_rate(safety["human_flag_rate"])}; {safety["n_items_flagged_by_majority"]} items flagged by '
        f"the majority, {safety['n_items_tied']} tied (left out of sensitivity and specificity).",
        "",
        f"- human-human Krippendorff's alpha (nominal): {_ci(safety['alpha'])}",
    ]
    for judge, j in safety["judges"].items():
        vm = j["vs_majority"]
        lines += [
            f"- {judge}: flags {_rate(j['flag_rate'])}; alpha with the judge in the pool {_ci(j['alpha_with_judge'])}, "
            f"change {_ci(j['alpha_difference'])}",
            f"  - against the human majority ({vm['n']} items, {vm['n_flagged_by_majority']} flagged by people): "
            f"sensitivity {_rate(vm['sensitivity'])}, specificity {_rate(vm['specificity'])}, "
            f"agreement {_rate(vm['agreement'])}",
        ]
    return lines


def _test(t: dict[str, Any]) -> str:
    if not t.get("name"):
        return t.get("note", "")
    effect = t.get("effect_size") or {}
    size = "" if effect.get("value") is None else f", {effect['name']} {effect['value']:.2f}"
    raters = ", ".join(f"{g} {n}" for g, n in t["n_raters"].items())
    return (
        f"Rater-level permutation ({'exact' if t['exact'] else 'Monte Carlo'}; raters {raters}): p = {t['p']:.3g}, "
        f"Holm p = {t.get('p_holm', t['p']):.3g}, smallest attainable p {t['min_attainable_p']:.3g}{size}."
    )


def render_markdown(result: dict[str, Any], figure: str | None = None) -> str:
    """The audit as Markdown; ``figure`` names the SVG beside it (:func:`render_figure`), when one is written."""
    lines = [
        "# Judge-human agreement audit",
        "",
        f"Generated {result['generated_at']}; bootstrap over {result['bootstrap']['unit']}, "
        f"{result['bootstrap']['resamples']} resamples (seed {result['bootstrap']['seed']}), 95% percentile intervals. "
        f"Scale {result['scale']['min']:g}-{result['scale']['max']:g}.",
        "",
        "Verdict rule: the alternative annotator test (Calderon, Reichart & Dror 2025). Each human rater is left out "
        "in turn; on each item, whoever is closer to the remaining raters (the judge or the held-out human) wins it. "
        "The judge passes against a rater when it wins at least as often as the human minus a margin epsilon = "
        f"{result['alt_test']['epsilon']:g} (one-sided t-test, Benjamini-Yekutieli across raters); it can replace a "
        'rater ("yes") when it passes against at least half of them. Human alpha is context: below '
        f"{ALPHA_FOR_CONCLUSIONS} the verdict carries a warning.",
        "",
    ]
    for note in result.get("notes", []):
        lines.append(f"- note: {note}")
    for name, info in result["judges"].items():
        reasons = ", ".join(f"{k}: {v}" for k, v in info["unscored_reasons"].items()) or "none"
        lines.append(
            f"- judge `{name}`: {info['n_scored']} scored, {info['n_unscored']} unscored ({reasons}); "
            f"from {', '.join(info['files'])}"
        )
    if figure:
        lines += ["", f"![{FIGURE_TITLE}]({figure})"]
    for dim, d in result["dimensions"].items():
        lines += [
            "",
            f"## {dim}",
            "",
            f"{d['n_items']} items, {len(d['raters'])} human raters, {d['n_ratings']} human ratings.",
            "",
            f"- human-human Krippendorff's alpha: {_levels(d['alpha'])}",
        ]
        lines += [f"- note: {note}" for note in d["notes"]]
        if d["n_pairs_without_shared_items"]:
            lines.append(f"- {d['n_pairs_without_shared_items']} rater pairs share no item (not listed)")
        if d["pairs"]:
            rows = []
            for p in d["pairs"]:
                sp = (
                    "n/a"
                    if p["spearman"] is None
                    else f"{p['spearman']:.2f}"
                    + (f" [{p['spearman_ci'][0]:.2f}, {p['spearman_ci'][1]:.2f}]" if p["spearman_ci"] else "")
                )
                rows.append(
                    [
                        p["rater_a"],
                        p["rater_b"],
                        str(p["n"]),
                        _f(p["kappa_quadratic"]),
                        _f(p["kappa_linear"]),
                        sp,
                        _f(p["exact_agreement"]),
                        _f(p["mae"]),
                    ]
                )
            lines += [
                "",
                *_rows(["rater A", "rater B", "n", "QWK", "linear kappa", "Spearman [95% CI]", "exact", "MAE"], rows),
            ]
        for judge, j in d["judges"].items():
            lines += _judge_section(judge, j, d["raters"])
    if result.get("halo"):
        lines += _halo_section(result["halo"])
    if result.get("safety"):
        lines += _safety_section(result["safety"])
    if result.get("rater_groups"):
        lines += _groups_section(result["rater_groups"])
        missing = result.get("raters_missing_from_rater_table") or []
        if missing:
            shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
            lines.append(
                f"- {len(missing)} rater(s) are not in the rater table and are left out of every group comparison "
                f"(their ratings still count in the agreement above): {shown}"
            )
    return "\n".join(lines) + "\n"


FIGURE = "agreement.svg"
FIGURE_TITLE = "Human-human agreement vs agreement with each judge in the pool (Krippendorff's alpha, 95% CI)"


def _alpha(block: dict[str, Any] | None) -> Interval | None:
    if not block or block.get("value") is None:
        return None
    return Interval(block["value"], block.get("ci_low"), block.get("ci_high"))


def render_figure(result: dict[str, Any]) -> str:
    """Per factor: the human-human alpha and the alpha with each judge joining the raters, each
    with its 95 % CI, and the line below which an alpha supports no conclusion. Humans only in the
    grey star of the board's reference anchor (people are what a judge is measured against), each
    judge in a look of its own."""
    dims = list(result["dimensions"])
    judges = sorted({j for d in result["dimensions"].values() for j in d["judges"]})
    blocks = [d["alpha"]["interval"] for d in result["dimensions"].values()]
    colour, shape, _ = MARKERS["anchor"]
    series = [Series("humans only", colour, shape, [_alpha(b) for b in blocks])]
    for k, judge in enumerate(judges):
        values = [
            _alpha(result["dimensions"][d]["judges"].get(judge, {}).get("alpha_with_judge", {}).get("interval"))
            for d in dims
        ]
        series.append(Series(f"with {judge}", *series_style(k), values))
    rule = Rule(ALPHA_FOR_CONCLUSIONS, f"alpha = {ALPHA_FOR_CONCLUSIONS}", "#808080", "4 3")
    panel = Panel(series, "Krippendorff's alpha (interval)", [rule])
    lead = "Per factor, the human raters' alpha and the alpha with each judge added to the pool."
    return interval_chart(dims, [panel], FIGURE_TITLE, lead)
