"""`tide-bench import` of malformed lm-eval output (issue 32, N10).

Missing keys, wrong types, truncated JSONL, a samples file without its results file (and the
reverse): a clear error, no traceback, and no half-written run folder, since the run is built
in a temporary folder next to ``--out`` and renamed into place only when complete. The
source folder is never changed, and nothing else next to ``--out`` is left behind."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import make_lm_eval_output
from tide_bench.core.errors import TideBenchError
from tide_bench.generation.adopt import import_lm_eval_run

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 10**6),
    st.floats(allow_nan=True),
    st.text(max_size=10),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.text(max_size=5), st.integers(0, 3), max_size=2),
)


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for k, v in enumerate(value[:2]):
            out += _paths(v, (*prefix, k))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    if not path:
        return value
    if len(path) == 1 and delete and isinstance(doc, dict):
        doc.pop(path[0], None)
        return doc
    doc[path[0]] = _set(doc[path[0]], path[1:], value, delete)
    return doc


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_lm_eval_output(tmp_path_factory.mktemp("lm-eval"))


def _copy(template: Path, root: Path) -> Path:
    import shutil

    source = root / "out"
    shutil.copytree(template, source)
    return source


def _check(source: Path, root: Path) -> None:
    """Import into ``root/run``: a run or a clear error; nothing else written, source unchanged."""
    before = _digest(source)
    try:
        import_lm_eval_run(source, root / "run", data="sample")
        imported = True
    except TideBenchError as exc:
        imported = False
        assert str(exc)
    assert _digest(source) == before
    assert sorted(p.name for p in root.iterdir()) == (["out", "run"] if imported else ["out"])
    if imported:
        assert (root / "run" / "run.json").is_file()


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_mutated_results_file_imports_or_fails_clearly(
    template: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("case")
    source = _copy(template, root)
    path = next(source.rglob("results_*.json"))
    doc = json.loads(path.read_text())
    paths = _paths(doc)
    shallow = [p for p in paths if len(p) <= 2]  # the structure: most edits land there
    where = data.draw(st.sampled_from(shallow) | st.sampled_from(paths))
    doc = _set(doc, where, data.draw(VALUES), data.draw(st.booleans()))
    path.write_text(json.dumps(doc))
    _check(source, root)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_mutated_or_truncated_samples_file_imports_or_fails_clearly(
    template: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("case")
    source = _copy(template, root)
    path = next(source.rglob("samples_*.jsonl"))
    if data.draw(st.booleans()):
        raw = path.read_bytes()
        path.write_bytes(raw[: data.draw(st.integers(0, len(raw) - 1))])
    else:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        k = data.draw(st.integers(0, len(rows) - 1))
        rows[k] = _set(
            rows[k], data.draw(st.sampled_from(_paths(rows[k])[1:])), data.draw(VALUES), data.draw(st.booleans())
        )
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _check(source, root)


RESULTS_SHAPES = {
    "config_string": lambda d: d.update(config="x"),
    "n_samples_string": lambda d: d.update({"n-samples": "x"}),
    "task_config_string": lambda d: d["configs"].update(tide_empathy="x"),
    "description_number": lambda d: d["configs"]["tide_empathy"].update(description=5),
    "not_an_object": lambda d: d.clear() or d.update(configs={"tide_empathy": {}}, config=[]),
    "model_args_list": lambda d: d["config"].update(model_args=[1, 2]),
    "chat_template_number": lambda d: d.update(chat_template=5),
    "system_instruction_list": lambda d: d.update(system_instruction=["x"]),
}


@pytest.mark.parametrize("shape", sorted(RESULTS_SHAPES))
def test_each_results_shape_of_the_review_fails_clearly(template: Path, tmp_path: Path, shape: str) -> None:
    source = _copy(template, tmp_path)
    path = next(source.rglob("results_*.json"))
    doc = json.loads(path.read_text())
    RESULTS_SHAPES[shape](doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(TideBenchError, match=r"results_.*\.json"):
        import_lm_eval_run(source, tmp_path / "run", data="sample")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("gone", ["results", "samples"])
def test_one_file_without_the_other_is_refused(template: Path, tmp_path: Path, gone: str) -> None:
    source = _copy(template, tmp_path)
    next(source.rglob(f"{gone}_*.json*")).unlink()
    with pytest.raises(TideBenchError):
        import_lm_eval_run(source, tmp_path / "run", data="sample")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_reimport_leaves_the_previous_run_as_it_was(template: Path, tmp_path: Path) -> None:
    source = _copy(template, tmp_path)
    import_lm_eval_run(source, tmp_path / "run", data="sample")
    before = _digest(tmp_path / "run")
    samples = next(source.rglob("samples_*.jsonl"))
    samples.write_bytes(samples.read_bytes()[:-40])  # truncated: the run was interrupted
    with pytest.raises(TideBenchError):
        import_lm_eval_run(source, tmp_path / "run", data="sample", overwrite=True)
    assert _digest(tmp_path / "run") == before and sorted(p.name for p in tmp_path.iterdir()) == ["out", "run"]
