"""The metric table (tide_bench/metrics/metrics.yaml): each reference metric declared once, and
every other place that names a metric derived from it or checked against it: lm-eval's
registration and the task template's metric_list, the samples reader, the board's columns and
the docs; and the documented "Add a reference metric" recipe, run end to end."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
import yaml

from tide_bench.core.errors import ConfigError
from tide_bench.metrics import table
from tide_bench.metrics.table import metric_table

ROOT = Path(__file__).resolve().parents[2]


def reply_chars(reply: str, reference: str, tokens: list[str]) -> float:
    """The new metric of the recipe test: a reply's length in characters."""
    return float(len(reply))


@pytest.mark.parametrize(
    ("folder", "every_run_only"),
    [("tide_empathy", True), ("ed_empathy", False)],
)
def test_the_task_template_registers_what_the_table_declares(folder: str, every_run_only: bool) -> None:
    """lm-eval's metric_list in tasks/<folder>/_template_yaml: same metrics, order, aggregation
    and direction as the table (reply length is not higher-is-better). The TIDE tasks declare the
    metrics every run computes; the EmpatheticDialogues tasks also the EPITOME scorer's."""
    from tide_bench.tasks.registry import tasks_path

    template = yaml.safe_load(
        "\n".join(
            line
            for line in (tasks_path() / folder / "_template_yaml").read_text().splitlines()
            if "!function" not in line
        )
    )
    declared = [
        {"metric": m.name, "aggregation": m.aggregation, "higher_is_better": m.higher_is_better}
        for m in metric_table()
        if m.every_run or not every_run_only
    ]
    assert template["metric_list"] == declared
    assert {m.name: m.higher_is_better for m in metric_table()}["length_tokens"] is False


def test_the_epitome_metrics_are_the_mechanisms() -> None:
    """The table's EPITOME-scorer metrics are exactly the scorer's per-item fields, in order."""
    from tide_bench.epitome.mechanisms import METRIC_NAMES

    assert tuple(m.name for m in metric_table() if not m.every_run) == METRIC_NAMES
    assert all(m.function == table.EPITOME and not m.against_reference for m in metric_table() if not m.every_run)
    assert table.reference_metric_names() == tuple(m.name for m in metric_table() if m.function != table.EPITOME)


def test_lm_eval_is_told_each_metrics_direction_and_aggregation() -> None:
    from lm_eval.api.registry import AGGREGATION_REGISTRY, is_higher_better, metric_agg_registry

    import tide_bench.tasks.lm_task  # noqa: F401  (registers the metrics)

    for m in metric_table():
        assert is_higher_better(m.name) is m.higher_is_better, m.name
        assert metric_agg_registry[m.name] is AGGREGATION_REGISTRY[m.aggregation], m.name


def test_board_columns_take_the_tables_direction_and_refuse_a_disagreement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tide_bench.judging.rubric import load_rubric
    from tide_bench.leaderboard.scoring import columns

    shown = {c.key: c for c in columns.board_columns(load_rubric()) if c.kind == "metric"}
    assert shown, "the board shows no metric"
    for key, column in shown.items():
        declared = table.metric(key)
        assert declared is not None, key
        assert column.better == declared.column_better and column.help == declared.description
    assert set(columns.against_reference_keys()) == {
        m.name for m in metric_table() if m.against_reference and m.name in shown
    }
    declared = yaml.safe_load(columns.COLUMNS_FILE.read_text())
    for edit, message in (
        ({"key": "length_tokens", "better": "high"}, "better is 'high' here but None in the metric table"),
        ({"key": "rouge_l", "against_reference": False}, "against_reference is False here but True"),
        ({"key": "reply_chars", "label": "Characters"}, "the metric table declares no such metric"),
    ):
        entries = [e for e in declared["columns"] if e.get("key") != edit["key"]]
        edited = tmp_path / f"columns-{edit['key']}.yaml"
        edited.write_text(yaml.safe_dump({"columns": [*entries, {"kind": "metric", **edit}]}))
        with pytest.raises(ConfigError, match=message) as err:
            columns.board_columns(load_rubric(), edited)
        assert str(err.value.path) == str(edited)


def test_the_docs_name_every_metric_and_its_direction() -> None:
    docs = (ROOT / "docs" / "tasks.md").read_text()
    for m in metric_table():
        assert f"`{m.name}`" in docs, m.name
    assert "`length_tokens` is declared `higher_is_better: false`" in docs
    readme = (ROOT / "tasks" / "tide_empathy" / "README.md").read_text()  # lm-eval users read it beside the YAML
    rows = {line.split("|")[1].strip(" `"): line.split("|")[3].strip() for line in readme.splitlines() if "| `" in line}
    for m in metric_table():
        if m.every_run:  # the EPITOME scorer's are the EmpatheticDialogues tasks' (docs/tasks.md)
            assert rows.get(m.name) == m.aggregation, m.name
    tasks = {p.stem for p in (ROOT / "tasks" / "tide_empathy").glob("tide_empathy*.yaml")}
    assert tasks <= set(rows), sorted(tasks - set(rows))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"better": "up"}, r"field 'metrics\[N\]\.better': must be high \| low \| none"),
        ({"aggregation": "sum"}, r"field 'metrics\[N\]\.aggregation': must be mean \| nanmean"),
        ({"function": "no module"}, r"field 'metrics\[N\]\.function': must be module:function or embedding"),
        ({"name": "Reply Chars"}, r"field 'metrics\[N\]\.name': must be a lower-case identifier"),
        ({"name": "rouge_l"}, "metric rouge_l is declared twice"),
        ({"colour": "red"}, r"unknown fields \['colour'\]"),
    ],
)
def test_table_mistakes_are_named(tmp_path: Path, entry: dict, message: str) -> None:
    path = tmp_path / "metrics.yaml"
    new = _new_metric() | entry
    path.write_text(yaml.safe_dump({"metrics": [*_shipped(), new]}))
    message = message.replace("[N\\]", f"[{len(_shipped())}\\]")  # the new entry's index
    with pytest.raises(ConfigError, match=message) as err:
        table.metric_table(path)
    assert str(err.value.path) == str(path)


def test_a_function_that_cannot_be_loaded_is_named(tmp_path: Path) -> None:
    path = tmp_path / "metrics.yaml"
    path.write_text(yaml.safe_dump({"metrics": [*_shipped(), _new_metric() | {"function": "tests.nowhere:f"}]}))
    with pytest.raises(ConfigError, match=re.escape("metric reply_chars: cannot load its function 'tests.nowhere:f'")):
        table.text_metric_functions(path)


def test_add_a_reference_metric_as_the_docs_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/architecture.md, "Add a reference metric": a function, one entry in the metric
    table, one column: runs write it per item, `submit` and the board's validation accept it,
    and the board averages it with its CI and shows it with the table's direction."""
    from tests.leaderboard_helpers import board, fake_judge, judged_submission
    from tide_bench.leaderboard import build_site
    from tide_bench.leaderboard.scoring import columns

    metrics = tmp_path / "metrics.yaml"
    metrics.write_text(yaml.safe_dump({"metrics": [*_shipped(), _new_metric()]}))  # the table's entry
    monkeypatch.setattr(table, "METRICS_FILE", metrics)
    declared = yaml.safe_load(columns.COLUMNS_FILE.read_text())
    declared["columns"].append({"key": "reply_chars", "label": "Characters", "kind": "metric", "md": True})
    edited = tmp_path / "columns.yaml"  # the column
    edited.write_text(yaml.safe_dump(declared))
    monkeypatch.setattr(columns, "COLUMNS_FILE", edited)

    replies = {}

    def reply(item) -> str:
        replies[item.item_id] = f"Reply [[SCORES:4,4,4]] {'long ' * (len(replies) % 4)}{item.item_id}"
        return replies[item.item_id]

    with fake_judge("sk-test-metric-table-000") as server:
        judged_submission(tmp_path, server, "model-a", reply)
    result = build_site(tmp_path / "submissions", tmp_path / "site", board(), allow_risk_gate_off=True)
    (row,) = result.board["rows"]
    block = row["reply_chars"]
    lengths = [len(r) for r in replies.values()]
    assert block["mean"] == pytest.approx(sum(lengths) / len(lengths)) and block["n"] == len(lengths)
    assert block["ci_low"] <= block["mean"] <= block["ci_high"] and block["n_clusters"] >= 2
    site = tmp_path / "site"
    (csv_row,) = list(csv.DictReader(io.StringIO((site / "leaderboard.csv").read_text())))
    assert float(csv_row["reply_chars"]) == pytest.approx(block["mean"])
    index = (site / "index.html").read_text()
    assert (
        'data-key="reply_chars" data-better="low"' in index
        and "| Characters |" in (site / "leaderboard.md").read_text()
    )


def _shipped() -> list[dict]:
    return yaml.safe_load(table.METRICS_FILE.read_text())["metrics"]


def _new_metric() -> dict:
    return {
        "name": "reply_chars",
        "function": "tests.leaderboard.test_metric_table:reply_chars",
        "better": "low",
        "aggregation": "mean",
        "against_reference": False,
        "description": "reply length in characters",
    }


@pytest.mark.parametrize("folder", sorted(p.name for p in (ROOT / "tasks").iterdir() if p.is_dir()))
def test_each_task_folder_has_a_readme_naming_its_tasks_and_metrics(folder: str) -> None:
    """lm-eval's convention: a README beside the YAMLs says the paper, the tasks and the metrics."""
    readme = ROOT / "tasks" / folder / "README.md"
    assert readme.is_file(), f"tasks/{folder} has no README.md"
    text = readme.read_text(encoding="utf-8")
    names = set()
    for path in (ROOT / "tasks" / folder).glob("*.yaml"):
        config = yaml.safe_load(path.read_text(encoding="utf-8").replace("!function", "")) or {}
        names |= {config[k] for k in ("task", "group") if isinstance(config.get(k), str)}
    template = yaml.safe_load((ROOT / "tasks" / folder / "_template_yaml").read_text().replace("!function", ""))
    metrics = {m["metric"] for m in template["metric_list"]}
    missing = sorted(n for n in names | metrics if f"`{n}`" not in text)
    assert names and not missing, f"tasks/{folder}/README.md does not name {missing}"
    assert "### Citation" in text and "### Checklist" in text
