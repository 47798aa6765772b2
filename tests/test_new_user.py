"""What a new user trips over (issue 34): help, docs, leftovers, messages, the project's own files.

Each test re-walks a finding of the new-user review (README and every ``--help`` tried on a
fresh clone): the commands' help, the documentation's links, what a refused command leaves
behind, what an error names, the cache tox shares with a plain install, and the files a citing
researcher or a contributor looks for first.
"""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tide_bench
from tide_bench.cli.leftovers import absent_paths
from tide_bench.cli.main import cli
from tide_bench.core.paths import remove_empty_folders
from tide_bench.generation.results_table import results_table
from tide_bench.generation.run_dir import model_display_name

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS += [ROOT / "leaderboard" / "README.md"]


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command and subcommand as click dispatches them (``list_commands``/``get_command``,
    so a lazily loaded or hidden one is walked too), found from the group, never listed by hand."""
    found = [(path, command)]
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1] if path else "tide-bench")
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{' '.join((*path, name))}: listed but not found"
            found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands(cli)


# ------------------------------------------------------------------ help (34.8)
@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) or "tide-bench" for p, _ in COMMANDS])
def test_every_command_and_group_has_an_example_and_every_option_a_help_text(path, command) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="tide-bench")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: {' '.join(('tide-bench', *path))} "), result.output
    assert (command.help or "").strip() and len(result.output) > 200, f"{' '.join(path)}: no help text"
    assert CliRunner().invoke(cli, [*path, "-h"], prog_name="tide-bench").output == result.output  # the short form too
    assert re.search(r"^\s*Examples?(?: \([^)\n]*\))?:\n\s+(tide-bench|lm_eval|accelerate) ", result.output, re.M), (
        result.output
    )
    undocumented = [
        p.opts[0]
        for p in command.params
        if isinstance(p, click.Option) and not p.hidden and not p.help and p.name not in ("help", "version")
    ]
    assert undocumented == [], f"{' '.join(path)}: options without help: {undocumented}"


def test_the_walk_covers_every_command() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"eval", "finetune", "merge-adapter", "leaderboard pin", "leaderboard validate", "annotate", "data"} <= names
    assert {"annotate plan", "validation", "validation list", "validation fetch", "validation run"} <= names
    assert {"validation report", "validation board"} <= names
    assert len(names) >= 20


def test_finetune_is_one_command_with_its_required_options_marked() -> None:
    finetune = cli.commands["finetune"]
    assert not isinstance(finetune, click.Group)
    required = {p.name for p in finetune.params if isinstance(p, click.Option) and p.required}
    assert {"model", "out"} <= required
    text = CliRunner().invoke(cli, ["finetune", "--help"]).output
    assert re.search(r"--model TEXT.*\[required\]", text, re.S) and "--out PATH" in text
    old = CliRunner().invoke(cli, ["finetune", "merge", "adapters/x", "--out", "merged/x"])
    assert old.exit_code == 2 and "tide-bench merge-adapter" in old.output


def test_the_pipeline_summary_names_every_top_level_command() -> None:
    text = CliRunner().invoke(cli, ["--help"]).output
    summary = text.split("Examples:")[0]
    for name in cli.commands:
        assert f"tide-bench {name}" in summary, name


# ------------------------------------------------------------------ docs (34.8)
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    return {
        re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_docs_link_only_to_files_in_the_repository(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        resolved = (doc.parent / file).resolve() if file else doc
        assert resolved.exists() and ROOT in resolved.parents, f"{doc.name}: link to {target} (no such file)"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{doc.name}: link to {target} (no such heading)"
    for mention in ("shared/reviews", "/work/", "../shared"):
        assert mention not in text, f"{doc.name} cites {mention!r}, which is not in the repository"
    # a repository path in backticks names a file that exists (at the top level or inside tide_bench/)
    # (a path named as another project's, "the upstream `docs/x.md`", is not one of ours)
    ours = r"(?<!upstream )`((?:docs|tide_bench|tests|studies|judges|tasks|benchmarks|leaderboard)/[\w./-]+)`"
    for path in re.findall(ours, text):
        clean = path.rstrip("/.")
        assert (ROOT / clean).exists() or (ROOT / "tide_bench" / clean).exists(), f"{doc.name}: `{path}`"


def test_the_readme_says_how_to_lint_run_one_test_file_and_shorten_the_demo() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "tox -e lint" in text and re.search(r"tox -e py -- tests/test_\w+\.py", text)
    assert "--finetune 0" in text and "busy machine" in text and "resumes" in text
    assert "most likely" not in text  # the dataset stated plainly
    assert "pretrained=demo" in text and "merge-adapter" in text and "finetune merge" not in text
    assert "likely" not in text  # new-user rerun: "(the likely shape)" was left
    # how to rebuild the demo board (new-user rerun: the README's plain build refuses the demo's runs)
    flat = " ".join(text.split())
    assert "leaderboard build --submissions demo-output/submissions --board leaderboard/demo.yaml" in flat


# ------------------------------------------------------------------ leftovers and messages (34.9)
def test_a_refused_eval_leaves_no_folder(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "typo1"
    result = CliRunner().invoke(cli, ["eval", "--data", "sample", "--model", "hff", "--output-dir", str(out)])
    assert result.exit_code == 2 and "unknown model backend 'hff'" in result.output
    assert not (tmp_path / "runs").exists()


def test_a_refused_command_keeps_folders_that_existed_or_hold_files(tmp_path: Path) -> None:
    kept = tmp_path / "existing"
    kept.mkdir()
    result = CliRunner().invoke(cli, ["eval", "--data", "sample", "--model", "hff", "--output-dir", str(kept)])
    assert result.exit_code == 2 and kept.is_dir()


def _judged_run(tmp_path: Path) -> Path:
    from tests.leaderboard_helpers import stand_in_dataset, tide_run

    return tide_run(tmp_path / "run", lambda item: f"That sounds hard. {item.item_id}", stand_in_dataset(tmp_path))


def test_a_refused_submit_names_the_file_passed_and_leaves_no_folder(tmp_path: Path) -> None:
    from tests.leaderboard_helpers import meta

    run = _judged_run(tmp_path)
    meta_path = tmp_path / "my-model.yaml"
    meta_path.write_text(yaml.safe_dump(meta("m1", condition="distilled"), sort_keys=False))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({"require_judgments": False, "spot_check_items": 0}))
    out = tmp_path / "scratch" / "subs"
    result = CliRunner().invoke(
        cli, ["submit", str(run), "--meta", str(meta_path), "--out", str(out), "--board", str(board)]
    )
    assert result.exit_code == 2, result.output
    line = next(n for n, text in enumerate(meta_path.read_text().splitlines(), 1) if text.startswith("condition:"))
    assert f"{meta_path}:{line}, field 'condition'" in result.output
    assert "submission.yaml" not in result.output and f"fix {meta_path}" in result.output
    assert not (tmp_path / "scratch").exists()


def test_hub_offline_says_no_network_first() -> None:
    from huggingface_hub import constants

    assert constants.HF_HUB_OFFLINE  # the suite runs offline (conftest, tox)
    result = CliRunner().invoke(cli, ["data", "validate", "--data", "hub"])
    assert result.exit_code == 2
    assert (
        result.output.startswith("error: no network: cannot fetch yenopoya/TIDE") and "HF_HUB_OFFLINE" in result.output
    )
    assert result.output.index("download it on a connected machine") < result.output.index("gated")


def test_hub_unreachable_says_no_network_first(tmp_path: Path) -> None:
    """Not in offline mode, but no server answers (a closed port on 127.0.0.1)."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    env |= {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "tide_bench", "data", "validate", "--data", "hub"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: no network: cannot fetch yenopoya/TIDE"), result.stderr
    assert "Traceback" not in result.stderr


paths = st.lists(st.sampled_from(["a", "a/b", "a/b/c", "d", "e/f", "g"]), max_size=5)


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(existing=paths, named=paths, made=paths, filled=paths)
def test_fuzz_only_empty_folders_the_command_created_are_removed(
    tmp_path_factory, existing, named, made, filled
) -> None:
    root = tmp_path_factory.mktemp("leftovers")
    for rel in existing:
        (root / rel).mkdir(parents=True, exist_ok=True)
    (root / "a").mkdir(exist_ok=True)
    (root / "a" / "keep.txt").write_text("x")  # a file the command did not write
    before = {p for p in root.rglob("*")}
    absent = absent_paths([str(root / rel) for rel in named] + ["--out=" + str(root / "g"), "--flag"])
    for rel in made:  # what the command created before it was refused
        (root / rel).mkdir(parents=True, exist_ok=True)
    for rel in filled:
        if (root / rel).is_dir() and (root / rel) not in before:
            (root / rel / "out.json").write_text("{}")
    remove_empty_folders(absent)
    after = {p for p in root.rglob("*")}
    assert before <= after  # nothing that existed before the command is gone
    for path in after - before:  # what remains of the command's own: not an empty folder it created
        assert not (path in absent and path.is_dir() and not any(path.iterdir())), path


# ------------------------------------------------------------------ names and tables (34.5, 34.6)
@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("/home/me/.cache/tide-bench/models/SmolLM2-135M-Instruct", "SmolLM2-135M-Instruct"),
        ("/home/me/models/qwen/", "qwen"),
        ("~/models/llama", "llama"),
        ("C:\\Users\\me\\models\\phi-3", "phi-3"),
        ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"),
        ("merged/qwen0.5b-tide", "merged/qwen0.5b-tide"),
        ("gpt-4o", "gpt-4o"),
    ],
)
def test_a_model_is_shown_by_its_name_never_an_absolute_path(given: str, shown: str) -> None:
    assert model_display_name(given) == shown


def _manifest(overall: dict, **extra) -> dict:
    return {
        "model": {"name": "/home/me/models/tiny"},
        "data": {"source": "local:/data/TIDE", "split": "test"},
        "subtasks": ["tide_empathy"],
        "n_generations": 12,
        "generation": {"limit": None},
        "reference_metrics": {"intervals": "95% percentile bootstrap over personas", "overall": overall},
    } | extra


def test_the_results_table_shows_every_metric_with_n_and_ci_or_why_not() -> None:
    overall = {
        "cosine_sim": {"mean": 0.5123, "ci_low": 0.41, "ci_high": 0.6, "n": 12, "n_clusters": 3},
        "rouge_l": {"mean": 0.2, "ci_low": None, "ci_high": None, "n": 12, "n_clusters": 1},
        "length_tokens": {"mean": 96.0, "ci_low": None, "ci_high": None, "n": 12, "n_clusters": 3},
        "distinct_1": {"value": 0.4, "n_ngrams": 100, "n_replies": 12},
    }
    text = results_table(_manifest(overall))
    assert text.startswith("tiny on local:/data/TIDE, split test: 12 replies") and "/home/me" not in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in text.splitlines()[4:8]}
    assert rows["cosine similarity to the reference"] == ["0.512", "[0.410, 0.600]", "12"]
    assert rows["ROUGE-L F1 against the reference"][1] == "n/a: one persona (a CI needs two)"
    assert rows["reply length (words and punctuation)"][1] == "n/a: too little variation to resample"
    assert rows["distinct-1 over all replies"] == ["0.400", "(one value over the corpus)", "12"]
    cosine = {"mean": None, "ci_low": None, "ci_high": None, "n": 0}
    why = {"notes": {"cosine_sim": "not computed: embedding model failed to load"}}
    text = results_table(
        _manifest({"cosine_sim": cosine}) | {"reference_metrics": {"overall": {"cosine_sim": cosine}, "method": why}}
    )
    assert "n/a: not computed: embedding model failed to load" in text


def test_the_results_table_names_the_rarefied_distinct_n_and_says_why_it_is_na() -> None:
    """Rerun of the new-user trial: a short run printed ``distinct_1_at_k | n/a | (one value over
    the corpus)``, the raw key and no reason, though run.json says why (too few n-grams)."""
    at_k = {"k": 1000, "n_ngrams": 48, "n_replies": 3, "value": None, "note": "fewer than 1000 1-grams"}
    rarefied = {"k": 1000, "n_ngrams": 5000, "n_replies": 40, "value": 0.61234}
    text = results_table(_manifest({"distinct_1_at_k": at_k, "distinct_2_at_k": rarefied}))
    assert "distinct_1_at_k" not in text and "distinct_2_at_k" not in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in text.splitlines()[4:6]}
    assert rows["distinct-1 among 1000 n-grams (rarefied)"] == ["n/a", "n/a: fewer than 1000 1-grams", "3"]
    assert rows["distinct-2 among 1000 n-grams (rarefied)"] == ["0.612", "(one value over the corpus)", "40"]


# ------------------------------------------------------------------ the demo names the sample's reference (34.11)
def test_the_demo_names_the_samples_reference_row_never_tides() -> None:
    """Rerun of the new-user trial: the board said "sample reference (written for tide-bench)",
    but the demo's console still announced and summarised a "TIDE reference" on the sample."""
    from tide_bench.demo.pipeline import cells_line, demo_study, summary_table

    line = cells_line(demo_study(finetune_steps=0))
    assert line == "smollm2-135m zero-shot, sample reference (written for tide-bench)"
    report = {"reference": {"label": "sample reference (written for tide-bench)", "empathy": {"mean": 3.72}}}
    assert summary_table(report) == "sample reference (written for tide-bench) empathy: 3.720"
    help_text = CliRunner().invoke(cli, ["demo", "--help"]).output
    assert "TIDE reference" not in help_text and "the sample's reference row" in help_text


# ------------------------------------------------------------------ cache shared by tox and a plain install (34.4)
def test_tox_and_a_plain_install_share_one_cache() -> None:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    for section in tox.sections():
        assert "TIDE_BENCH_CACHE" not in tox[section].get("setenv", ""), section
    passenv = tox["testenv"]["passenv"].split()
    assert "TIDE_BENCH_*" in passenv and "XDG_CACHE_HOME" in passenv


# ------------------------------------------------------------------ the project's files (34.12)
def test_license_citation_changelog_and_contributing_are_there() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert project["license"] == "Apache-2.0"
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence and len(licence.splitlines()) > 150  # the full text
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"].startswith("1.2") and cff["title"] and cff["authors"] and cff["message"]
    assert cff["version"] == tide_bench.__version__ == project["version"] and cff["license"] == "Apache-2.0"
    cited = {ref["identifiers"][0]["value"] for ref in cff["references"]}
    assert cited == {"arXiv:2505.15065", "arXiv:2009.08441", "arXiv:2310.08017"}
    assert all(ref["title"] and ref["authors"] and ref["year"] for ref in cff["references"])
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog") and "\n## Unreleased\n" in changelog
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "docs/architecture.md#add-a-leaderboard-column" in contributing and "tox -e lint" in contributing


def test_lint_runs_mypy_strictly_on_core_and_the_typed_records() -> None:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    assert "mypy" in tox["testenv:lint"]["commands"].split() and "mypy" in tox["testenv:lint"]["deps"]
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["strict"] is True
    assert {
        "tide_bench/core",
        "tide_bench/generation/run_manifest.py",
        "tide_bench/generation/samples.py",
        "tide_bench/judging/judgment.py",
        "tide_bench/judging/summary.py",
    } <= set(mypy["files"])
    for file in mypy["files"]:
        assert (ROOT / file).exists(), file
