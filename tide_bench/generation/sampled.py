"""``tide-bench eval --samples k``: the same model answers every item k times, sampling on, seeded.

Why: a board's run is one reply per item, usually greedy. Whether a model's empathy and, above all,
its handling of a risk disclosure hold *from one sample to the next* is what a person talking to it
meets (behavioural consistency, the instrument review's section 5). So ``--samples k`` writes k
complete run directories of the same model, data, split and prompt, each sampled (``do_sample``
on, ``temperature`` 0.7 unless ``--gen-kwargs`` gives another above 0) with its own seed (the
``--seed`` value plus 0, 1, ..., k - 1 in every slot), and a ``samples.json`` that lists them::

    OUT/sample-1/run.json ...     one run directory per sample (judge each: RUN/judge)
    OUT/sample-k/...
    OUT/samples.json              what the k runs are (written last: without it the set is incomplete)

The consistency report (:mod:`tide_bench.judging.consistency`, ``tide-bench consistency OUT``)
reads the k judged runs; ``tide-bench submit --samples OUT`` packages them with an entry.

Seeding: the hf backend samples with torch's generator, seeded per sample by lm-eval; vLLM and the
API backends take their sampling seed as a model argument (``seed=``), set per sample here (a
``seed=`` already in ``--model-args`` would give k identical replies and is refused). Each sample
loads the model again (the generation dominates the time: ``docs/scaling.md``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.jsonio import read_json, write_json
from tide_bench.core.provenance import utc_now
from tide_bench.generation.manifest import MANIFEST_NAME

if TYPE_CHECKING:  # the runner imports lm-eval's stack: reading a listing must not
    from tide_bench.generation.runner import EvalConfig

SAMPLES_FILE = "samples.json"
SAMPLES_KIND = "tide-bench-samples"
MAX_LISTING_BYTES = 1_000_000
_SAMPLE_NAME = re.compile(r"sample-[1-9][0-9]{0,2}", re.ASCII)
SAMPLE_PREFIX = "sample-"
DEFAULT_TEMPERATURE = 0.7
MAX_SAMPLES = 20
SEEDED_BY_MODEL_ARGS = (
    "vllm",
    "local-chat-completions",
    "local-completions",
    "openai-chat-completions",
    "openai-completions",
)


def sample_dir(out: Path, s: int) -> Path:
    """The run directory of sample ``s`` (1-based)."""
    return out / f"{SAMPLE_PREFIX}{s}"


def _sampling(gen_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    gen = dict(gen_kwargs or {})
    if gen.get("do_sample") is False:
        raise ConfigError("--samples needs sampling on: remove do_sample=false from --gen-kwargs", field="--gen-kwargs")
    temperature = gen.get("temperature", DEFAULT_TEMPERATURE)
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not temperature > 0:
        raise ConfigError(
            f"--samples needs a temperature above 0 (got {temperature!r}): at 0 every sample gives the same reply",
            field="--gen-kwargs",
        )
    return gen | {"do_sample": True, "temperature": float(temperature)}


def _seeded_args(model: str, model_args: str, seed: int) -> str:
    """``model_args`` with the sampling seed of one sample, for the backends that take it there."""
    if model not in SEEDED_BY_MODEL_ARGS:
        return model_args
    given = [p.split("=", 1)[0].strip() for p in model_args.split(",") if p.strip()]
    if "seed" in given:
        raise ConfigError(
            "--samples sets each sample's seed: remove seed= from --model-args (one seed gives k identical replies)",
            field="--model-args",
        )
    return ",".join(filter(None, [model_args.strip().strip(","), f"seed={seed}"]))


def sample_configs(config: EvalConfig, k: int) -> list[EvalConfig]:
    """The k runs' configurations: sampling on, seeds ``seed + s`` (s = 0 .. k - 1), one folder each;
    each records in its run.json which sample it is (``generation.sample``)."""
    if isinstance(k, bool) or not 2 <= k <= MAX_SAMPLES:
        raise ConfigError(
            f"--samples must be 2 to {MAX_SAMPLES}, got {k}: one sample says nothing about consistency "
            "(for one reply per item leave --samples out)",
            field="--samples",
        )
    gen = _sampling(config.gen_kwargs)
    out = []
    for s in range(k):
        seeds = tuple(None if x is None else x + s for x in config.seeds())
        first = seeds[0] if seeds[0] is not None else s
        out.append(
            replace(
                config,
                output_dir=sample_dir(Path(config.output_dir), s + 1),
                gen_kwargs=dict(gen),
                seed=seeds,  # type: ignore[arg-type]
                model_args=_seeded_args(config.model, config.model_args, first),
                sample={"index": s + 1, "of": k, "seed": list(seeds), "model_seed": first},
            )
        )
    return out


def write_samples_listing(out: Path, configs: Sequence[EvalConfig]) -> Path:
    """``out/samples.json``: the k runs (folder, seeds) and the generation parameters they share."""
    gen = configs[0].gen_kwargs or {}
    runs = [
        {"sample": s, "run": sample_dir(Path("."), s).as_posix(), "seed": list(cfg.seeds())}
        for s, cfg in enumerate(configs, 1)
    ]
    listing = Path(out) / SAMPLES_FILE
    body = {"kind": SAMPLES_KIND, "schema_version": 1, "k": len(configs), "temperature": gen.get("temperature")}
    write_json(listing, body | {"gen_kwargs": gen, "runs": runs, "created_at": utc_now()})
    return listing


def run_samples(config: EvalConfig, k: int) -> Path:
    """Generate the k sampled runs of ``config`` into ``config.output_dir`` and write ``samples.json``
    (last); returns its path. A finished set is replaced only with ``config.overwrite``; a sample
    whose run is finished is kept when the set is resumed (an interrupted set has no samples.json)."""
    from tide_bench.generation.runner import run_eval

    out = Path(config.output_dir)
    listing = out / SAMPLES_FILE
    configs = sample_configs(config, k)  # checked before anything is touched
    if listing.exists() and not config.overwrite:
        raise ConfigError(
            f"{out} already holds a finished set of samples ({SAMPLES_FILE})",
            hint="choose another --output-dir or pass --overwrite",
        )
    listing.unlink(missing_ok=True)
    for cfg in configs:
        manifest = Path(cfg.output_dir) / MANIFEST_NAME
        if not (manifest.is_file() and not config.overwrite):
            run_eval(cfg)
    return write_samples_listing(out, configs)


def read_samples_listing(folder: Path) -> list[Path]:
    """The run directories of a finished set of samples (``samples.json``): each named ``sample-N``
    inside ``folder`` (never a path elsewhere), no folder twice, as many as its ``k`` says."""
    listing = Path(folder) / SAMPLES_FILE
    if not listing.is_file():
        raise DataError(
            "not a finished set of samples: no samples.json",
            path=listing,
            hint="make one with tide-bench eval --samples K --output-dir FOLDER (an interrupted set resumes)",
        )
    raw = read_json(listing, DataError, max_bytes=MAX_LISTING_BYTES)
    if not isinstance(raw, dict) or raw.get("kind") != SAMPLES_KIND:
        raise DataError(f"is not a samples listing (kind {SAMPLES_KIND!r})", path=listing, field="kind")
    runs = raw.get("runs")
    if not isinstance(runs, list) or len(runs) < 2:
        raise DataError(
            "lists fewer than two sample runs: consistency across samples is not estimable from one",
            path=listing,
            field="runs",
        )
    k = raw.get("k")
    if isinstance(k, bool) or k != len(runs):
        raise DataError(f"says k = {k!r} but lists {len(runs)} runs", path=listing, field="k")
    out: list[Path] = []
    for i, entry in enumerate(runs):
        rel = entry.get("run") if isinstance(entry, dict) else None
        if not isinstance(rel, str) or not _SAMPLE_NAME.fullmatch(rel):
            raise DataError(f"is not a sample folder name ({SAMPLE_PREFIX}N)", path=listing, field=f"runs.{i}.run")
        if Path(folder) / rel in out:
            raise DataError(f"lists {rel} twice", path=listing, field=f"runs.{i}.run")
        out.append(Path(folder) / rel)
    return out
