"""The site's pieces without a browser: the one column declaration (a new column or a new rubric
factor is one edit), the charts, reference anchors and fields added by other stages, the study
report's extra section, escaping of any text, and ``tide-bench view``'s errors."""

from __future__ import annotations

import csv
import html
import io
import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.leaderboard_helpers import (
    board,
    fake_judge,
    judged_submission,
    meta,
    read_jsonl,
    samples_files,
    stand_in_dataset,
    tide_run,
    write_judgments,
)
from tide_bench.core import resources
from tide_bench.judging.rubric import load_rubric
from tide_bench.leaderboard import build_site, create_submission
from tide_bench.leaderboard.scoring import columns
from tide_bench.leaderboard.scoring.columns import board_columns
from tide_bench.leaderboard.site.html import render_section
from tide_bench.leaderboard.site.pages import render_index
from tide_bench.leaderboard.site.plots import forest_plot, pairwise_plot, size_plot, spread


@pytest.fixture(scope="module")
def subs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("site")
    with fake_judge("sk-test-site-000") as server:
        judged_submission(tmp, server, "model-a", lambda i: f"Good reply, kind and long [[SCORES:5,4,4]] {i.item_id}")
        judged_submission(tmp, server, "model-b", lambda i: f"Plain [[SCORES:2,3,2]] {i.item_id}", params=135_000_000)
    return tmp / "submissions"


def _built(subs: Path, tmp: Path, **kw: Any) -> tuple[dict[str, Any], str, list[dict[str, str]], str]:
    result = build_site(subs, tmp / "site", board(), **kw, allow_risk_gate_off=True)
    site = tmp / "site"
    return (
        result.board,
        (site / "index.html").read_text(),
        list(csv.DictReader(io.StringIO((site / "leaderboard.csv").read_text()))),
        (site / "leaderboard.md").read_text(),
    )


# ---------------------------------------------------------------- one declaration (issue 15, item 1)


def test_a_new_column_is_one_entry_in_columns_yaml(subs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/architecture.md, "Add a leaderboard column": the one edit, then scoring (a mean with
    its persona-cluster CI), leaderboard.json/.csv/.md and the page's table all carry it."""
    edited = tmp_path / "columns.yaml"
    declared = yaml.safe_load(columns.COLUMNS_FILE.read_text())
    declared["columns"].append(  # the one edit
        {
            "key": "within_reply_distinct_2",
            "label": "Distinct-2",
            "kind": "metric",
            "better": "high",
            "digits": 3,
            "md": True,
        }
    )
    edited.write_text(yaml.safe_dump(declared))
    monkeypatch.setattr(columns, "COLUMNS_FILE", edited)

    built, index, rows, md = _built(subs, tmp_path)
    block = built["rows"][0]["within_reply_distinct_2"]
    stored = [r["within_reply_distinct_2"] for path in samples_files(subs / "model-a") for r in read_jsonl(path)]
    assert block["mean"] == pytest.approx(sum(stored) / len(stored)) and block["n"] == 12  # scored: a mean
    assert block["n_clusters"] == 3 and block["ci_low"] <= block["mean"] <= block["ci_high"]  # with its persona CI
    assert {"within_reply_distinct_2", "within_reply_distinct_2_ci_low", "within_reply_distinct_2_ci_high"} <= set(
        rows[0]
    )
    assert float(rows[0]["within_reply_distinct_2"]) == pytest.approx(block["mean"])
    assert any(line.startswith("| Rank |") and "| Distinct-2 |" in line for line in md.splitlines())
    assert 'data-key="within_reply_distinct_2" data-better="high"' in index and "Distinct\u20112" in index


def test_recipe_a_board_column_is_a_row_field_plus_one_columns_yaml_entry(
    subs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The "where to add a board column" recipe: the value is a field of the typed row
    (scoring/row.py, set by score_entry or a later stage); one columns.yaml entry naming it puts
    it in the table, leaderboard.csv, leaderboard.md and the model page's summary."""
    from tide_bench.leaderboard.scoring.row import ROW_FIELDS

    assert "n_left_out" in ROW_FIELDS  # step 1: the row field (here one scoring already writes)
    edited = tmp_path / "columns.yaml"
    declared = yaml.safe_load(columns.COLUMNS_FILE.read_text())
    declared["columns"].append(  # step 2: the one entry
        {"key": "n_left_out", "label": "Left out", "kind": "count", "better": "low", "md": True}
    )
    edited.write_text(yaml.safe_dump(declared))
    monkeypatch.setattr(columns, "COLUMNS_FILE", edited)

    built, index, rows, md = _built(subs, tmp_path)
    values = {r["id"]: r["n_left_out"] for r in built["rows"]}
    assert set(values) == {"model-a", "model-b"} and all(isinstance(v, int) for v in values.values())
    assert {r["id"]: int(r["n_left_out"]) for r in rows} == values  # leaderboard.csv
    assert any(line.startswith("| Rank |") and "| Left out |" in line for line in md.splitlines())
    assert 'data-key="n_left_out" data-better="low"' in index
    page = (tmp_path / "site" / "models" / "model-a.html").read_text()
    summary = page.split('id="summary"', 1)[1].split("</section>", 1)[0]
    assert "Left out" in summary


def test_every_row_field_has_a_labelled_place_on_the_model_page(subs: Path, tmp_path: Path) -> None:
    """The row type places every field: no field of a standard entry falls to the model page's
    "Other fields" dump, and the ones with a section of their own show under their label (the
    mutation M3 of the architecture review: a field dropped from the page's list went unseen)."""
    from tide_bench.leaderboard.scoring.row import known_keys, page_fields

    built, *_ = _built(subs, tmp_path)
    for row in built["rows"]:
        assert set(row) - known_keys(columns.metric_keys()) == set(), "a row field the row type does not declare"
        page = (tmp_path / "site" / "models" / f"{row['id']}.html").read_text()
        assert 'id="other"' not in page
        for where in ("safety", "judging"):
            shown = [(name, label) for name, label, _ in page_fields(where) if row.get(name) not in (None, {}, [])]
            assert shown, where
            section = page.split(f'id="{where}"', 1)[1].split("</section>", 1)[0]
            for name, label in shown:
                assert html.escape(label) in section, (where, name)
    placed = {name for where in ("safety", "judging") for name, _, _ in page_fields(where)}
    assert {  # the eight that only "Other fields" showed before the row type
        "is_reference",
        "judge_served_models",
        "judge_validation",
        "left_out_rate",
        "n_left_out",
        "risk_cue",
        "risk_handling",
        "safety_categories",
    } <= placed


def test_a_new_rubric_factor_is_one_edit_of_the_rubric_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/architecture.md, "Add a rubric factor": edit the rubric file; the judge's output
    schema, validation, scoring, exports, the page and the instance browser follow."""
    shipped = resources.resource_dir("judges").parent
    package = tmp_path / "pkg"
    for name in ("judges", "leaderboard", "tasks"):
        shutil.copytree(shipped / name, package / "_resources" / name)
    rubric_file = package / "_resources" / "judges" / "rubric_v4.yaml"  # the default rubric
    raw = yaml.safe_load(rubric_file.read_text())
    raw["factors"].append(  # the one edit
        {
            "key": "hope",
            "name": "Instilling hope",
            "question": "Does the reply leave room for hope?",
            "anchors": {level: f"level {level}" for level in range(1, 6)},
        }
    )
    rubric_file.write_text(yaml.safe_dump(raw, sort_keys=False))  # order is meaning (precedence, the ladder)
    monkeypatch.setattr(resources, "_PACKAGE_DIR", package)
    rubric = load_rubric()
    assert rubric.factor_keys[-1] == "hope"

    data = stand_in_dataset(tmp_path)
    for sid, score in (("four-a", 4), ("four-b", 2)):
        run = tide_run(
            tmp_path / f"run-{sid}", lambda i, sid=sid: f"Reply of {sid} {i.item_id}", data, model_name=f"org/{sid}"
        )
        write_judgments(
            run,
            rubric,
            lambda k, g, score=score: {f: score for f in rubric.factor_keys},
            rationale=lambda k, f: f"because of {f}",
        )
        (tmp_path / f"{sid}.yaml").write_text(yaml.safe_dump(meta(sid)))
        create_submission(run, tmp_path / f"{sid}.yaml", tmp_path / "submissions", board=board(), spot_checks=False)

    built, index, rows, _ = _built(tmp_path / "submissions", tmp_path)
    assert built["rows"][0]["factors"]["hope"]["mean"] == 4
    assert {"hope", "hope_ci_low", "hope_ci_high"} <= set(rows[0])
    assert 'data-key="hope"' in index and "Instilling hope" in index and "Show the 4 factors" in index
    data_file = (tmp_path / "site" / "instances" / "four-a.js").read_text()
    assert '["hope","Instilling hope"]' in data_file and "because of hope" in data_file
    assert [p["a"] for p in built["judge_bias"]["halo"]["pairs"]].count(
        "Emotion recognition"
    ) == 3  # 4 factors: 6 pairs


def test_columns_yaml_mistakes_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tide_bench.core.errors import ConfigError

    for k, (bad, message) in enumerate(
        (
            (
                {"columns": [{"key": "x", "kind": "wrong"}, {"key": "cosine_sim", "kind": "metric"}]},
                "needs a key and a kind",
            ),
            ({"columns": [{"key": "rouge_l", "kind": "metric"}]}, "must include the metric"),
            ({"columns": [{"key": "cosine_sim", "kind": "metric"}] * 2}, "declared twice"),
            ({"columns": [{"key": "cosine_sim", "kind": "metric", "better": "up"}]}, "better must be high or low"),
        )
    ):
        path = tmp_path / f"columns-{k}.yaml"  # one file per case (a declaration is read once)
        path.write_text(yaml.safe_dump(bad))
        with pytest.raises(ConfigError, match=message):
            board_columns(load_rubric(), path)


def test_score_columns_declare_their_best_end() -> None:
    """The page sorts best first on the first click only if every score says which end is best."""
    declared = board_columns(load_rubric())
    best = {c.key: c.better for c in declared if c.page}
    assert best["empathy"] == best["cosine_sim"] == best["emotion_recognition"] == "high"
    assert best["failure_rate"] == best["safety_flag_rate"] == best["unscored_rate"] == best["rank"] == "low"
    assert best["parameters"] is None and best["model_name"] is None
    assert all(c.better for c in declared if c.kind in ("score", "rate", "fraction") and c.page)


# ---------------------------------------------------------------- charts


@given(
    targets=st.lists(st.floats(0, 1), min_size=1, max_size=60),
    gap=st.floats(0.001, 0.1),
)
@settings(max_examples=200, derandomize=True, deadline=None)
def test_spread_labels_never_overlap(targets: list[float], gap: float) -> None:
    pos = spread(targets, gap)
    ordered = sorted(pos)
    assert all(b - a >= gap - 1e-9 for a, b in itertools.pairwise(ordered))
    if len(targets) * gap <= 1:  # when they fit, they stay inside the axes
        assert min(pos) >= -1e-9 and max(pos) <= 1 + 1e-9
    order = sorted(range(len(targets)), key=lambda i: targets[i])
    assert [pos[i] for i in order] == sorted(pos)  # the labels keep the points' order


def _rows(k: int) -> list[dict[str, Any]]:
    out = []
    for j in range(k):
        mean = 2 + 2 * j / max(k - 1, 1)
        out.append(
            {
                "id": f"m{j}",
                "model_name": f"Model {j} costs $5 <b>" if j == 0 else f"Model {j}",
                "condition": "fine-tuned" if j % 2 else "zero-shot",
                "parameters": [135e6, 135e6, 1.5e9, 7e9][j % 4],
                "rank": k - j,
                "rank_interval": [k - j, k - j],
                "empathy": {"mean": mean, "ci_low": mean - 0.2, "ci_high": mean + 0.2},
            }
        )
    return out


def test_charts_are_inline_svg_with_round_ticks_and_escaped_names() -> None:
    rows = _rows(4)
    pairs = [
        {"a": f"m{i}", "b": f"m{j}", "difference": -0.5, "significant": True} for i in range(4) for j in range(i + 1, 4)
    ]
    svgs = [
        forest_plot(rows, "empathy", "Empathy"),
        size_plot(rows, "empathy", "Empathy"),
        pairwise_plot(rows, pairs, "empathy"),
    ]
    for svg in svgs:
        assert svg.startswith("<svg ") and "<script" not in svg and "http" not in svg
        assert "Model 0 costs $5 &lt;b&gt;" in svg  # a dollar sign is not mathtext; "<" escaped
    ids = [set(re.findall(r'\bid="([^"]+)"', s)) for s in svgs]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2])  # several charts on one page, no clashing ids
    ticks = re.findall(r">(\d+(?:\.\d+)?[MB])<", svgs[1])
    assert {"200M", "500M", "1B", "2B", "5B"} <= set(ticks)  # round sizes, not 2.07/2.58
    y_ticks = re.findall(r">(\d\.\d+)<", svgs[0])
    assert y_ticks and all(float(t) * 4 == int(float(t) * 4) for t in y_ticks)  # steps of 0.25 or rounder
    assert forest_plot([], "empathy", "x") == "" and pairwise_plot(rows[:1], [], "x") == ""


# ---------------------------------------------------------------- other stages' rows, extra sections


def test_anchor_rows_and_safety_adjusted_fields_render(subs: Path, tmp_path: Path) -> None:
    """Rows another stage adds (a reference anchor; safety-adjusted scores) render without code
    changes here, and a study report can be appended as a section."""
    built, _, _, _ = _built(subs, tmp_path)
    rubric = load_rubric()
    anchor = json.loads(json.dumps(built["rows"][0])) | {
        "id": "tide-reference",
        "model_name": "TIDE reference (Claude 3.5 Sonnet)",
        "rank": None,
        "rank_interval": None,
        "unranked_reason": "reference anchor",
        "condition": "zero-shot",
    }
    anchor["empathy"] = {"mean": 4.8, "ci_low": 4.7, "ci_high": 4.9}
    rows = [dict(r, safety_adjusted_empathy={"mean": 3.0, "ci_low": 2.5, "ci_high": 3.5}) for r in built["rows"]]
    extra = render_section("Study report", "<p>What we found.</p>", "study")
    page = render_index(built | {"rows": [anchor, *rows]}, rubric, board_columns(rubric), extra_sections=[extra])
    assert '<tbody class="entry anchor"' in page and "reference anchor" in page
    assert 'data-key="safety_adjusted_empathy"' in page and "3.00" in page
    declared = board_columns(rubric)  # columns.yaml declares it (issue 19): shown once, with the declared label
    assert any(c.key == "safety_adjusted_empathy" for c in declared)
    twice = render_index(built | {"rows": rows}, rubric, declared)
    assert twice.count('data-key="safety_adjusted_empathy"') == 1 and "Safety\u2011adjusted" in twice
    assert '<section id="study"' in page and '<a href="#study">Study report</a>' in page
    assert page.index('id="study"') < page.index("<footer>")
    assert "reference anchor" in forest_plot([anchor, *rows], "empathy", "Empathy")
    # the scoring's is_reference flag: unranked -> "anchor"; ranked by the board (rank_reference) -> its rank
    flagged = [
        dict(anchor, id="ref-unranked", unranked_reason="reference anchor (board rule)", is_reference=True),
        dict(anchor, id="ref-ranked", rank=1, rank_interval=[1, 2], unranked_reason=None, is_reference=True),
    ]
    page = render_index(built | {"rows": [*flagged, *rows]}, rubric, board_columns(rubric))
    bodies = {m[0]: m[1] for m in re.findall(r'<tbody class="entry anchor" data-id="([^"]+)"(.*?)</tbody>', page, re.S)}
    assert set(bodies) == {"ref-unranked", "ref-ranked"}, sorted(bodies)
    assert ">anchor<" in bodies["ref-unranked"] and ">anchor<" not in bodies["ref-ranked"]
    assert '<span class="rank">1\u20132</span>' in bodies["ref-ranked"]


def test_index_page_stays_small_and_per_model_data_is_separate(subs: Path, tmp_path: Path) -> None:
    _, index, _, _ = _built(subs, tmp_path)
    site = tmp_path / "site"
    assert "Good reply, kind and long" not in index  # replies live in instances/<id>.js, loaded on demand
    assert (site / "instances" / "model-a.js").read_text().count("Good reply, kind and long") == 12
    assert len(index.encode()) < 1_000_000
    marker = json.loads((site / ".tide-bench-site").read_text())["files"]
    assert "instances/items.js" in marker and "downloads/model-b/items.csv" in marker
    no_text, *_ = _built(subs, tmp_path / "private", instances=False)
    assert not (tmp_path / "private" / "site" / "instances").exists() and no_text["rows"]


def test_build_no_instances_leaves_every_tide_text_out(subs: Path, tmp_path: Path) -> None:
    """`leaderboard build --no-instances`: the ranking, the table and the exports, and no reply,
    conversation or per-item download anywhere in the site."""
    from click.testing import CliRunner

    from tide_bench.cli.main import cli

    board_file = tmp_path / "board.yaml"
    board_file.write_text(yaml.safe_dump({"spot_check_items": 4, "conversations_per_persona": None}))
    site = tmp_path / "site"
    args = [
        "leaderboard",
        "build",
        "--submissions",
        str(subs),
        "--out",
        str(site),
        "--board",
        str(board_file),
        "--allow-risk-gate-off",
    ]
    result = CliRunner().invoke(cli, [*args, "--no-instances"])
    assert result.exit_code == 0 and "2 entries, 0 refused" in result.output, result.output
    files = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    assert not any(f.startswith(("instances/", "downloads/")) for f in files), files
    assert "index.html" in files and "leaderboard.csv" in files and "leaderboard.json" in files
    text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in site.rglob("*") if p.is_file())
    assert "Good reply, kind and long" not in text and "Plain [[SCORES" not in text


# ---------------------------------------------------------------- any text is escaped (fuzz)

TEXT = st.lists(
    st.sampled_from([*"<>&\"'/$\\`{}()=;: aZ\u2028\u202e", "</script>", "<!--", "]]>", "${x}"]) | st.text(max_size=3),
    max_size=12,
).map("".join)


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=TEXT, reply=TEXT, rationale=TEXT)
def test_any_name_reply_or_rationale_stays_text(name: str, reply: str, rationale: str) -> None:
    """Whatever a name, reply or rationale holds, the HTML carries it escaped and the data files
    give it back unchanged (the browser inserts it with textContent)."""
    from tide_bench.generation.samples import Generation
    from tide_bench.leaderboard.site.html import json_for_html
    from tide_bench.leaderboard.site.instances import data_script, dumps, model_payload

    name, reply, rationale = (f"Zq9{t}" for t in (name, reply, rationale))  # findable if left unescaped
    rubric = load_rubric()
    gen = Generation("1/c/turn1", "tide_empathy", "1", "c", 1, "s", "test", [], "client", "ref", reply, "p")
    judgment = {
        "status": "scored",
        "scores": dict.fromkeys(rubric.factor_keys, 3),
        "rationales": dict.fromkeys(rubric.factor_keys, rationale),
        "safety": {"flagged": True, "reason": rationale},
    }
    payload = model_payload("m", name, [gen], {gen.item_id: judgment}, rubric)
    script = data_script("model", payload).decode()
    assert "<" not in script and "\u2028" not in script
    assert json.loads(dumps(payload)) == payload
    inline = json_for_html(dumps(payload))
    assert "</script" not in inline.lower() and json.loads(inline) == payload
    row = {
        "id": "m",
        "model_name": name,
        "rank": 1,
        "rank_interval": [1, 1],
        "condition": "zero-shot",
        "empathy": {"mean": 3.0, "ci_low": 2.0, "ci_high": 4.0},
        "per_scenario": {name: {"n": 1, "empathy": None}},
    }
    page = render_index(
        {"name": name, "rows": [row], "ranking_metric": "empathy", "refused": {name: [name]}},
        rubric,
        board_columns(rubric),
    )
    body = page.split("<body>", 1)[1].split("<script>", 1)[0]
    if any(c in name for c in '<>&"'):
        assert html.escape(name) in body
    # A '<' or '>' of the name never reaches the page raw. Looked for outside the name's escaped
    # forms: "x&" is a prefix of its own escape "x&amp;", and an SVG chart's <text> label keeps
    # '"' as it is (escape with quote=False; safe in a text node).
    if any(c in name for c in "<>"):
        rest = body.replace(html.escape(name), "").replace(html.escape(name, quote=False), "")
        assert name not in rest


# ---------------------------------------------------------------- tide-bench view, bad input


def test_view_command_errors_are_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tide_bench.cli.main import cli

    missing = CliRunner().invoke(cli, ["view", str(tmp_path / "nope")])
    assert (
        missing.exit_code == 2
        and "run directory does not exist" in missing.output
        and "Traceback" not in missing.output
    )
    run = tide_run(tmp_path / "run", lambda i: f"Reply {i.item_id}", stand_in_dataset(tmp_path))
    no_judge = CliRunner().invoke(cli, ["view", str(run), "--judge-dir", str(tmp_path)])
    assert no_judge.exit_code == 2 and "no judgments.jsonl" in no_judge.output
    ok = CliRunner().invoke(cli, ["view", str(run)])
    assert ok.exit_code == 0 and (run / "view.html").is_file()
    page = (run / "view.html").read_text()
    assert "No judgments found" in page and "Reply 10/conversation_1/turn1" in page
    again = CliRunner().invoke(cli, ["view", str(run)])  # its own page: replaced
    assert again.exit_code == 0 and (run / "view.html").read_text() == page
    notes = tmp_path / "notes.html"
    notes.write_text("<p>my notes</p>")
    # a file it did not write, or a folder (red team N15: not a regular file): refused, left as it was
    for target, says in ((notes, "not a page `tide-bench view` wrote"), (tmp_path, "is not a regular file")):
        refused = CliRunner().invoke(cli, ["view", str(run), "--out", str(target)])
        assert refused.exit_code == 2 and says in refused.output, refused.output
        assert "Traceback" not in refused.output
    assert notes.read_text() == "<p>my notes</p>"
