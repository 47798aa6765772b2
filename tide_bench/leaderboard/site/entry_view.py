"""What a model page (and the single-run view) says about one entry, as labelled fields:
its numbers, its metadata, the run's provenance, the judge-bias checks, per-scenario scores,
and any row field another stage added that this page does not know by name.

Why labelled fields: a submission's metadata is nested YAML; printing it as a Python dict
(``{'hub_id': ...}``) was unreadable. Every value is escaped by :func:`~.html.fields`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from tide_bench.core.stats import format_estimate
from tide_bench.generation.run_dir import model_display_name
from tide_bench.leaderboard.scoring.columns import Column, metric_keys
from tide_bench.leaderboard.scoring.row import known_keys, page_fields
from tide_bench.leaderboard.site.html import Markup, esc, fields, fmt_block, fmt_interval
from tide_bench.leaderboard.site.plots import unranked_anchor
from tide_bench.leaderboard.site.table import cell_html

KNOWN_ROW_KEYS = frozenset(known_keys())  # every field of the row type (scoring/row.py); metrics come from columns


def summary(row: Mapping[str, Any], columns: Sequence[Column]) -> str:
    """The entry's numbers, one labelled field per page column."""
    items: list[tuple[str, Any]] = []
    for c in columns:
        if not c.page or c.kind == "model":
            continue
        if c.kind == "rank":
            rank = row.get("rank")
            if rank is None and not row.get("unranked_reason"):
                continue  # a single run: never ranked
            text = (
                "reference anchor (not ranked)"
                if unranked_anchor(row)
                else f"not ranked: {row.get('unranked_reason')}"
                if rank is None
                else f"{rank} (95% rank interval {fmt_interval(row.get('rank_interval'))})"
            )
            items.append((c.label, text))
        elif c.raw(row) is not None:
            items.append((c.label, Markup(cell_html(c, dict(row)))))
    return fields(items)


def _hub_link(hub_id: Any) -> Any:
    if not isinstance(hub_id, str) or not hub_id or hub_id.startswith(("/", ".")) or "://" in hub_id:
        return hub_id
    return Markup(
        f'<a href="https://huggingface.co/{esc(quote(hub_id, safe="/"))}" rel="noopener noreferrer">{esc(hub_id)}</a>'
    )


def metadata(meta: Mapping[str, Any]) -> str:
    """``submission.yaml`` as labelled fields (the hub id linked to its model card)."""
    shown = {k: v for k, v in meta.items() if k != "schema_version"}
    model = shown.get("model")
    if isinstance(model, dict) and "hub_id" in model:
        shown["model"] = model | {"hub_id": _hub_link(model["hub_id"])}
    return fields(shown.items())


def _adapter(model: Mapping[str, Any]) -> dict[str, Any] | None:
    adapter = model.get("adapter")
    if not isinstance(adapter, dict):
        return None
    card = adapter.get("card") if isinstance(adapter.get("card"), dict) else {}
    data = card.get("data") if isinstance(card.get("data"), dict) else {}
    training = card.get("training") if isinstance(card.get("training"), dict) else {}
    return {
        "base model": model_display_name(card.get("base_model")) if isinstance(card.get("base_model"), str) else None,
        "trained on": data.get("source"),
        "training split": data.get("split"),
        "synthetic sample": data.get("is_synthetic_sample"),
        "prompt condition": (card.get("prompt") or {}).get("condition")
        if isinstance(card.get("prompt"), dict)
        else None,
        "steps": training.get("steps"),
        "card": "recorded" if card else "missing",
    }


def _adapter_path(model: Mapping[str, Any]) -> str | None:
    """The adapter's folder as run.json records it (shown by its name only: no local path on a page)."""
    adapter = model.get("adapter")
    path = adapter.get("path") if isinstance(adapter, dict) else None
    return path if isinstance(path, str) and path else None


def provenance(manifest: Mapping[str, Any], judge: Mapping[str, Any] | None) -> str:
    """Which data, prompt, model, generation settings, judge and software produced the entry."""
    data = manifest.get("data") or {}
    prompt = manifest.get("prompt") or {}
    model = manifest.get("model") or {}
    generation = manifest.get("generation") or {}
    judge = judge or {}
    return fields(
        [
            (
                "Data",
                {
                    "source": data.get("source"),
                    "kind": data.get("source_kind"),
                    "synthetic sample": data.get("is_synthetic_sample"),
                    "split": data.get("split"),
                    "split version": data.get("split_version"),
                    "items": data.get("n_items"),
                    "split sha256": data.get("split_sha256"),
                    "dataset sha256": data.get("dataset_sha256"),
                },
            ),
            (
                "Prompt",
                {
                    "condition": prompt.get("condition") or "not recorded",
                    "task version": prompt.get("task_version"),
                    "format version": prompt.get("format_version"),
                    "prompt sha256": prompt.get("prompt_sha256"),
                    "extra system instruction": prompt.get("system_instruction"),
                },
            ),
            (
                "Model",
                {
                    "backend": model.get("backend"),
                    "name": model_display_name(model.get("name")) if isinstance(model.get("name"), str) else None,
                    "revision": model.get("revision"),
                    "sha": model.get("sha"),
                    "parameters": model.get("num_parameters"),
                    "dtype": model.get("dtype"),
                    "reference replies": model.get("is_reference"),
                    "adapter": _adapter(model),
                    "adapter folder": model_display_name(adapter_path)
                    if (adapter_path := _adapter_path(model))
                    else None,
                },
            ),
            (
                "Generation",
                {
                    "chat template": generation.get("apply_chat_template"),
                    "settings": generation.get("gen_kwargs_override") or generation.get("gen_kwargs"),
                    "limit": generation.get("limit"),
                    "seed": generation.get("seed"),
                },
            ),
            (
                "Judge",
                {
                    "name": judge.get("name"),
                    "provider": judge.get("provider"),
                    "model": judge.get("model"),
                    "family": judge.get("family"),
                    "configuration version": judge.get("version"),
                    "rubric": judge.get("rubric"),
                }
                if judge
                else "not judged",
            ),
            (
                "Software",
                {
                    "tide-bench": manifest.get("tide_bench_version"),
                    "lm-eval": manifest.get("lm_eval_version"),
                    "started": manifest.get("created_at"),
                    "finished": manifest.get("finished_at"),
                },
            ),
        ]
    )


def _estimate(e: Any, digits: int = 2) -> str:
    text = format_estimate(e, digits, key="value")
    if text is None:
        return f"n/a: {e['note']}" if isinstance(e, dict) and e.get("note") else "undefined"
    return text + (f", n {e['n']}" if e.get("n") is not None else "")


def _lc(block: Any) -> Any:
    """The length-controlled score, or "n/a: why" when it is undefined (never an estimate)."""
    if not isinstance(block, dict):
        return None
    if block.get("mean") is None:
        return f"n/a: {block['note']}" if block.get("note") else "n/a"
    return Markup(fmt_block(block))


def bias(row: Mapping[str, Any]) -> str:
    """This entry's judge-bias checks."""
    length = row.get("length_bias") or {}
    leak = row.get("preference_leakage")
    self_pref = row.get("self_preference") or {}
    return fields(
        [
            ("Empathy vs reply length (Pearson r, 95% CI)", _estimate(length.get("r")) if length else None),
            (
                "Mean reply / reference length (tokens)",
                (
                    f"{length['mean_reply_tokens']:.1f} / {length['mean_reference_tokens']:.1f}"
                    if length.get("mean_reply_tokens") is not None
                    else None
                ),
            ),
            ("Length-controlled empathy", _lc(row.get("empathy_lc"))),
            ("Preference leakage", leak.get("note") if isinstance(leak, dict) else "not applicable (not fine-tuned)"),
            ("Judge and model of one family", self_pref.get("note") if self_pref.get("risk") else "no"),
        ]
    )


def heat_style(value: float | None, low: float, high: float) -> str:
    if value is None or high <= low:
        return ""
    t = min(1.0, max(0.0, (value - low) / (high - low)))
    return f' style="background:hsl(210,65%,{96 - 30 * t:.0f}%)"'


def scenario_key(metric: str) -> str:
    """The per-scenario block shown for a board ranked on ``metric``: per-scenario numbers are
    raw empathy and the cosine (scores.py), so a board ranked on an empathy score (raw or
    safety-adjusted) shows raw empathy per scenario, any other the cosine."""
    return "empathy" if metric in ("empathy", "safety_adjusted_empathy") else "cosine_sim"


def scenario_table(row: Mapping[str, Any], metric: str, scale: tuple[float, float]) -> str:
    """Per-scenario n and mean with CI, shaded by the mean (darker is higher); ``metric`` is the
    board's ranking metric (see :func:`scenario_key`)."""
    metric = scenario_key(metric)
    per = row.get("per_scenario") or {}
    if not per:
        return ""
    digits = 2 if metric == "empathy" else 3
    body = "".join(
        f'<tr><th scope="row" class="l">{esc(s)}</th><td class="num">{v.get("n")}</td>'
        f'<td class="num"{heat_style((v.get(metric) or {}).get("mean"), *scale)}>'
        f"{fmt_block(v.get(metric), digits)}</td></tr>"
        for s, v in per.items()
        if isinstance(v, dict)
    )
    label = "Empathy" if metric == "empathy" else "Cosine"
    return (
        '<div class="table-wrap"><table class="small"><thead><tr><th scope="col" class="l">Scenario</th>'
        f'<th scope="col" class="num">Items</th><th scope="col" class="num">{label}</th></tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def labelled_fields(row: Mapping[str, Any], where: str) -> str:
    """The row fields the row type places in the page section ``where`` (``safety``, ``judging``),
    each under its label; a field the row does not hold is left out."""
    items: list[tuple[str, Any]] = []
    for name, label, fmt in page_fields(where):
        value = row.get(name)
        if value is None:
            continue
        if fmt == "percent" and isinstance(value, int | float) and not isinstance(value, bool):
            value = f"{100 * value:.1f}%"
        items.append((label, value))
    return fields(items) if items else ""


def other_fields(row: Mapping[str, Any], columns: Sequence[Column]) -> str:
    """Row fields the row type (scoring/row.py) does not declare (e.g. added by a later rubric),
    shown as they are: a declared field has its labelled place on the page."""
    known = KNOWN_ROW_KEYS | set(metric_keys()) | {c.source[0] for c in columns}  # a hidden metric is not 'other'
    extra = {k: v for k, v in row.items() if k not in known}
    items: list[tuple[str, Any]] = []
    for key, value in sorted(extra.items()):
        label = key.replace("_", " ")
        if isinstance(value, dict) and "mean" in value:
            items.append((label, Markup(fmt_block(value))))
        elif isinstance(value, dict | list | str | int | float | bool):
            items.append((label, value))
    return fields(items) if items else ""
