"""Readable outputs of an audit: ``agreement.md`` (factor by factor) and ``agreement.png``."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _f(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _ci(block: dict[str, Any]) -> str:
    if block.get("value") is None:
        return "n/a" + (f" ({block['note']})" if block.get("note") else "")
    if block.get("ci_low") is None:
        return f"{block['value']:.2f} (CI n/a)"
    return f"{block['value']:.2f} [{block['ci_low']:.2f}, {block['ci_high']:.2f}]"


def render_markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Judge-human agreement audit",
        "",
        f"Generated {result['generated_at']}; bootstrap over items, {result['bootstrap']['resamples']} resamples "
        f"(seed {result['bootstrap']['seed']}), 95% percentile intervals. Scale {result['scale']['min']:g}-{result['scale']['max']:g}.",
        "",
        "Verdict rule: a judge can replace a human rater on a factor when its agreement with the other humans' median is at "
        "least the humans' own (leave-one-rater-out ratio CI >= 1). Human alpha below 0.667 means people disagree too much "
        "to validate any stand-in.",
        "",
    ]
    for name, info in result["judges"].items():
        reasons = ", ".join(f"{k}: {v}" for k, v in info["unscored_reasons"].items()) or "none"
        lines.append(f"- judge `{name}`: {info['n_scored']} scored, {info['n_unscored']} unscored ({reasons}); from {info['file']}")
    for dim, d in result["dimensions"].items():
        lines += [
            "",
            f"## {dim}",
            "",
            f"{d['n_items']} items, {len(d['raters'])} human raters, {d['n_ratings']} human ratings.",
            "",
            f"- human-human Krippendorff's alpha: ordinal {_ci(d['alpha']['ordinal'])}, interval {_ci(d['alpha']['interval'])}",
        ]
        for note in d["notes"]:
            lines.append(f"- note: {note}")
        if d["pairs"]:
            lines += ["", "| rater A | rater B | n | QWK | linear kappa | Spearman [95% CI] | exact | MAE |", "|---|---|---|---|---|---|---|---|"]
            for p in d["pairs"]:
                sp = "n/a" if p["spearman"] is None else f"{p['spearman']:.2f}" + (f" [{p['spearman_ci'][0]:.2f}, {p['spearman_ci'][1]:.2f}]" if p["spearman_ci"] else "")
                lines.append(f"| {p['rater_a']} | {p['rater_b']} | {p['n']} | {_f(p['kappa_quadratic'])} | {_f(p['kappa_linear'])} | {sp} | {_f(p['exact_agreement'])} | {_f(p['mae'])} |")
        for judge, j in d["judges"].items():
            vc = j["vs_consensus"]
            qci = vc.get("kappa_quadratic_ci")
            loo = j["leave_one_out"]
            lines += [
                "",
                f"### {judge}",
                "",
                f"**{j['verdict']}**",
                "",
                f"- vs human consensus (median): n {vc['n']}, QWK {_f(vc['kappa_quadratic'])}"
                + (f" [{_f(qci[0])}, {_f(qci[1])}]" if qci and qci[0] is not None else "")
                + f", Spearman {_f(vc['spearman'])}, exact {_f(vc['exact_agreement'])}, MAE {_f(vc['mae'])}",
                f"- alpha with the judge in the pool: ordinal {_ci(j['alpha_with_judge']['ordinal'])}, interval {_ci(j['alpha_with_judge']['interval'])}",
            ]
            if "human_ceiling" in loo:
                lines.append(f"- leave-one-rater-out QWK: humans {_ci(loo['human_ceiling'])}, judge {_ci(loo['judge'])}, ratio {_ci(loo['ratio'])}")
            else:
                lines.append(f"- leave-one-rater-out: {loo.get('note')}")
            lines.append("- vs each human: " + ", ".join(f"{h['human']} QWK {_f(h['kappa_quadratic'])} (n {h['n']})" for h in j["vs_humans"]))
    groups = result.get("rater_groups")
    if groups:
        lines += ["", "## Rater groups", "", groups["method"], ""]
        for column, per_dim in groups["columns"].items():
            lines += [f"### {column}", ""]
            for dim, block in per_dim.items():
                t = block["test"]
                test = (f"{t['name']} p = {t['p']:.3g}, Holm p = {t['p_holm']:.3g}, {t['effect_size']['name']} {t['effect_size']['value']:.2f}"
                        if t.get("name") else t.get("note", ""))
                means = "; ".join(f"{g}: {_f(v['mean'])} (raters {v['n_raters']}, ratings {v['n_ratings']})" for g, v in block["groups"].items())
                lines.append(f"- **{dim}**: {means}. {test}")
                for judge, per_group in block["judge_agreement"].items():
                    lines.append("  - " + judge + " QWK with each group's median: " + ", ".join(f"{g} {_f(v['kappa_quadratic'])} (n {v['n']})" for g, v in per_group.items()))
            lines.append("")
        for column, why in groups["skipped_columns"].items():
            lines.append(f"- column `{column}` skipped: {why}")
    return "\n".join(lines) + "\n"


def render_plot(result: dict[str, Any], path: Path) -> None:
    """Per dimension: human-human alpha vs alpha with each judge joining, with 95% CIs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = list(result["dimensions"])
    judges = sorted({j for d in result["dimensions"].values() for j in d["judges"]})
    series = [("humans only", lambda d: d["alpha"]["interval"])] + [(f"with {j}", lambda d, j=j: d["judges"].get(j, {}).get("alpha_with_judge", {}).get("interval", {})) for j in judges]
    fig, ax = plt.subplots(figsize=(max(6, 2.2 * len(dims)), 4))
    width = 0.8 / len(series)
    for k, (label, get) in enumerate(series):
        xs, ys, lo, hi = [], [], [], []
        for i, d in enumerate(dims):
            block = get(result["dimensions"][d]) or {}
            if block.get("value") is None:
                continue
            xs.append(i + (k - (len(series) - 1) / 2) * width)
            ys.append(block["value"])
            lo.append(block["value"] - (block["ci_low"] if block.get("ci_low") is not None else block["value"]))
            hi.append((block["ci_high"] if block.get("ci_high") is not None else block["value"]) - block["value"])
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=label)
    ax.axhline(0.667, color="grey", linestyle="--", linewidth=1, label="alpha = 0.667")
    ax.set_xticks(range(len(dims)), [d.replace("_", "\n") for d in dims])
    ax.set_ylabel("Krippendorff's alpha (interval)")
    ax.set_title("Human-human agreement vs agreement with the judge in the pool")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
