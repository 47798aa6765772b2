"""``submission.yaml`` checked against its schema, against the run, and for honest names.

The page shows a submission's metadata next to recomputed numbers, so the metadata must not
say more than the run does: generation settings, the parameter count, the hub id and its
revision either come from ``run.json`` or agree with it (a disagreement is a refusal that
names both values). Model names are shown side by side, so a name that only *looks* like
another (an invisible or right-to-left control character, letters from two look-alike
scripts, compatibility forms such as full-width letters) is refused.

Messages never quote the values of the file: they name fields, types and the run's values.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

from tide_bench.core.options import did_you_mean
from tide_bench.core.records import type_name
from tide_bench.core.resources import resource_dir
from tide_bench.generation.run_manifest import RunManifest
from tide_bench.leaderboard.submission.local_paths import REDACTED

# Generation settings a submission may state, and how run.json records them.
GENERATION_SETTINGS = {
    "chat_template": None,
    "max_gen_toks": "max_gen_toks",
    "temperature": "temperature",
    "do_sample": "do_sample",
}
_CONFUSABLE_SCRIPTS = {"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC"}
_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads((resource_dir("leaderboard") / "schema" / "submission.schema.json").read_text(encoding="utf-8"))


def _schema_message(err: Any) -> str:
    kind, expected, instance = err.validator, err.validator_value, err.instance
    if kind == "required":
        missing = [k for k in expected if isinstance(instance, dict) and k not in instance]
        return f"add {', '.join(repr(k) for k in missing)} (required)"
    if kind == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = [k for k in instance if k not in allowed] if isinstance(instance, dict) else []
        shown = [k for k in extra if isinstance(k, str) and _KEY.match(k)]
        named = ", ".join(f"{k!r}{did_you_mean(k, allowed)}" for k in shown) or f"{len(extra)} field(s)"
        return f"unknown field(s) {named}; allowed: {', '.join(allowed)}"
    if kind == "type":
        return f"must be {expected if isinstance(expected, str) else ' or '.join(expected)}, got {type_name(instance)}"
    if kind == "enum":
        return f"must be one of: {', '.join(str(e) for e in expected)}"
    if kind == "const":
        return f"must be {expected!r}"
    if kind == "pattern":
        return f"must match {expected} (lowercase letters, digits, '.', '_', '-'; at most 64 characters)"
    if kind == "oneOf" and "hub_id" in json.dumps(err.schema):
        return "give either hub_id and revision (a Hugging Face model at a pinned revision) or api_model_id, not both"
    if kind in ("minLength", "maxLength", "minimum", "maximum"):
        return f"{kind} is {expected}"
    return f"is not valid ({kind})"


@lru_cache(maxsize=1)
def schema_validator() -> Any:
    """The schema's validator, made once per process (it holds no state of a document it
    checked). jsonschema is imported here, not at the top, so that commands that never check
    a ``submission.yaml`` start without it; a build calls this before its workers fork, so that
    they inherit it instead of each importing it again (0.1 s of CPU a worker)."""
    import jsonschema

    return jsonschema.Draft202012Validator(schema())


def schema_problems(meta: Any) -> list[tuple[str, str]]:
    """``(field, message)`` for every schema violation of a parsed ``submission.yaml``."""
    out: list[tuple[str, str]] = []
    for err in sorted(schema_validator().iter_errors(meta), key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        problem = (where, _schema_message(err))
        if problem not in out:  # the schema's conditional branches repeat one violation (e.g. a missing key)
            out.append(problem)
    return out


def name_problem(name: str) -> str | None:
    """Why a display name could pass for another, or None."""
    for ch in name:
        category = unicodedata.category(ch)
        if category in ("Cf", "Cc", "Co", "Cs") or (category.startswith("Z") and ch != " "):
            return f"holds an invisible or control character (U+{ord(ch):04X}): use plain text"
    if unicodedata.normalize("NFKC", name) != name:
        return "holds compatibility characters (full-width or styled letters, ligatures): write it in plain characters"
    scripts = {unicodedata.name(ch, "?").split(" ")[0] for ch in name if ch.isalpha()}
    mixed = sorted(scripts & _CONFUSABLE_SCRIPTS)
    if len(mixed) > 1:
        return f"mixes letters of {' and '.join(s.title() for s in mixed)} scripts, which look alike: use one script"
    return None


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """The confusables table (``confusables.tsv``, data): character -> the prototype it reads as."""
    table = {}
    for line in (Path(__file__).with_name("confusables.tsv")).read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            code, prototype = line.split("\t")[:2]
            table[chr(int(code[2:], 16))] = prototype
    return table


_SEQUENCES = (("rn", "m"), ("vv", "w"), ("cl", "d"))
_DROPPED = ("Mn", "Me", "Cf", "Cc")  # accents, enclosing marks, invisible format and control characters


def name_key(name: str) -> str:
    """The skeleton two names or ids share when they read the same: NFKC, accents and
    invisible characters dropped (NFD, then no combining mark or format character), every
    confusable character as its prototype (``confusables.tsv``: Cyrillic, Greek, Armenian and
    Cherokee look-alikes, ``0``/``O``, ``1``/``l``/``I``, dashes and separators), case folded,
    the multi-letter look-alikes (``rn`` -> ``m``) joined, runs of separators as one."""
    table = _prototypes()

    def mapped(text: str) -> str:
        text = unicodedata.normalize("NFD", text)
        return "".join(table.get(ch, ch) for ch in text if unicodedata.category(ch) not in _DROPPED)

    text = mapped(mapped(unicodedata.normalize("NFKC", name)).casefold())
    for sequence, prototype in _SEQUENCES:
        text = text.replace(sequence, prototype)
    return "-".join(filter(None, text.split("-")))


def _is_local(name: str | None) -> bool:
    return not name or name.startswith((REDACTED, "/", ".", "~")) or not _HUB_ID.match(name)


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, bool | int | float) else type_name(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return a == b


def run_problems(
    meta: dict[str, Any], run: RunManifest, *, demo_board: bool
) -> tuple[list[tuple[str, str]], list[str]]:
    """``(field, message)`` where ``submission.yaml`` says more than, or other than, the run;
    and warnings (unverifiable claims tolerated on a demo board)."""
    problems: list[tuple[str, str]] = []
    warnings: list[str] = []
    generation = meta.get("generation") if isinstance(meta.get("generation"), dict) else {}
    for key, run_key in GENERATION_SETTINGS.items():
        if key not in generation:
            continue
        actual = run.generation.apply_chat_template if run_key is None else run.generation.setting(run_key)
        if actual is None:
            problems.append(
                (f"generation.{key}", "run.json does not record this setting, so it cannot be shown: remove it")
            )
        elif not _same(generation[key], actual):
            problems.append(
                (
                    f"generation.{key}",
                    f"says {_shown(generation[key])}, but run.json records {_shown(actual)}: state what was run",
                )
            )
    params = meta.get("parameters")
    if isinstance(params, int) and run.model.num_parameters is not None and params != run.model.num_parameters:
        problems.append(("parameters", f"says {params}, but run.json records {run.model.num_parameters} parameters"))
    model = meta.get("model") if isinstance(meta.get("model"), dict) else {}
    name = run.model.name
    if "hub_id" in model or "api_model_id" in model:
        claimed = model.get("hub_id") or model.get("api_model_id")
        if "hub_id" in model and _is_local(name):
            message = (
                "run.json's model is a local folder, so the hub id and revision cannot be checked against the run: "
                "evaluate with --model-args pretrained=HUB_ID,revision=COMMIT"
            )
            (
                warnings.append(f"model.hub_id: {message} (tolerated on a demo board)")
                if demo_board
                else problems.append(("model.hub_id", message))
            )
        elif claimed != name:
            problems.append(("model", f"names {claimed!r}, but run.json's model is {name!r}"))
        elif "revision" in model:
            revisions = {r for r in (run.model.revision, run.model.parsed_args.get("revision")) if r}
            sha = run.model.sha or ""
            if model["revision"] not in revisions and not (
                len(str(model["revision"])) >= 7 and sha.startswith(str(model["revision"]))
            ):
                shown = " or ".join(sorted(revisions | ({sha} if sha else set()))) or "none"
                problems.append(
                    ("model.revision", f"says {model['revision']!r}, but run.json records revision {shown}")
                )
    if "prompt_condition" in meta and meta["prompt_condition"] != run.prompt_condition:
        problems.append(
            ("prompt_condition", f"says {meta['prompt_condition']!r}, but run.json records {run.prompt_condition!r}")
        )
    if meta.get("condition") == "zero-shot" and run.model.adapter_path:
        problems.append(
            ("condition", "says zero-shot, but run.json records an adapter (peft=...): the entry is fine-tuned")
        )
    return problems, warnings


def shown_generation(run: RunManifest) -> dict[str, Any]:
    """The generation settings the page shows: the run's own record."""
    out: dict[str, Any] = {}
    for key, run_key in GENERATION_SETTINGS.items():
        value = run.generation.apply_chat_template if run_key is None else run.generation.setting(run_key)
        if value is not None:
            out[key] = value
    return out
