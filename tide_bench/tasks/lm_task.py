"""The lm-eval task class and dataset hooks named by ``tasks/tide_empathy/*.yaml``.

Why a task class: lm-eval's ``doc_to_text`` returns one string, but TIDE items are
multi-turn conversations. :class:`TideTask` overrides ``fewshot_context`` to hand the
model's chat template genuine system/user/assistant messages (this touches lm-eval
internals, hence the ``lm-eval>=0.4.13,<0.5`` pin), and ``apply_filters`` to compute the
reference metrics for all replies in one batch before lm-eval's per-document
``process_results`` loop reads them. A task whose ``metric_list`` names the EPITOME metrics
(``epitome_er``, ``epitome_ip``, ``epitome_ex``: the EmpatheticDialogues tasks) also scores every
reply with the local EPITOME scorer named by the ``epitome_model`` metadata key (or
``TIDE_BENCH_EPITOME_MODEL``), in the same batch; without one they are NaN and a warning says why.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import datasets
import lm_eval.api.metrics  # noqa: F401  (fills lm-eval's metric registry before we add to it)
from lm_eval.api.registry import metric_registry, register_metric
from lm_eval.api.task import ConfigurableTask

from tide_bench.core.errors import ConfigError, TideBenchError
from tide_bench.data.schema import SPLIT_CHOICES
from tide_bench.data.sources import load_dataset
from tide_bench.epitome.mechanisms import METRIC_NAMES as EPITOME_METRICS
from tide_bench.metrics.reference import ReferenceScorer
from tide_bench.metrics.table import metric_table
from tide_bench.tasks.prompts import build_messages, prompt_sha256, render_plain
from tide_bench.tasks.registry import TURN_KEY, check_turn_available

log = logging.getLogger(__name__)
SPLIT_KEY = "tide_split"
EMBEDDING_KEY = "embedding_model"
EMBEDDING_DEVICE_KEY = "embedding_device"  # the generation run's CUDA device: the metrics are computed there
EPITOME_KEY = "epitome_model"
EPITOME_ENV = "TIDE_BENCH_EPITOME_MODEL"
SWAP_PER_PERSONA_KEY = "swap_per_persona"
SWAP_SEED_KEY = "swap_seed"


def _register_metrics() -> None:
    """Declare our per-item metrics to lm-eval with the metric table's direction and aggregation
    (reply length is not "higher is better"), so it does not look them up in HF Evaluate (which
    tries the network and costs ~15 s per task when offline). ``process_results`` computes the
    values; the registered function is never called for scoring."""
    for m in metric_table():
        if m.name not in metric_registry:
            register_metric(metric=m.name, higher_is_better=m.higher_is_better, aggregation=m.aggregation)(_passthrough)


def _passthrough(items: Any) -> Any:
    return items


_register_metrics()


def load_tide_splits(**metadata: Any) -> datasets.DatasetDict:
    """``custom_dataset`` hook: the chosen source and split as lm-eval's ``eval`` split.

    lm-eval calls this with the task metadata, which also carries the model arguments,
    hence ``**metadata``; a per-turn task adds ``tide_turn`` through its ``dataset_kwargs``.
    Every record carries the source label and hashes so that the samples file alone says
    which data produced it. A task with no items is refused with the reason (lm-eval cannot
    build an empty task and would fail with an IndexError).
    """
    split = str(metadata.get(SPLIT_KEY) or "test")
    if split not in SPLIT_CHOICES:
        raise ConfigError(f"unknown {SPLIT_KEY} {split!r}; choose one of {', '.join(SPLIT_CHOICES)}")
    dataset = load_dataset(metadata=metadata)
    provenance = dataset.provenance(split)
    items = dataset.items_for(split)
    turn = metadata.get(TURN_KEY)
    if turn is not None:
        check_turn_available(dataset, split, int(turn))
        items = [i for i in items if i.turn == int(turn)]
    records = [
        item.to_doc() | {"tide_source": provenance["source"], "split_sha256": provenance["split_sha256"]}
        for item in items
    ]
    if not records:
        raise ConfigError(f"split {split!r} of {dataset.source.label} holds no items")
    return datasets.DatasetDict({"eval": datasets.Dataset.from_list(records)})


def load_persona_swap_splits(**metadata: Any) -> datasets.DatasetDict:
    """``custom_dataset`` hook of ``tide_empathy_persona_swap``: the persona-swap minimal pairs
    (:mod:`tide_bench.data.persona_swap`) of the chosen source and split, both sides of every pair.

    ``swap_per_persona`` (default 1) and ``swap_seed`` in the metadata choose the items; personas
    that cannot be swapped are logged with the reason (the robustness report counts them again
    from the pairs it finds). A set with no pair is refused with the reason."""
    from tide_bench.data.persona_swap import DEFAULT_PER_PERSONA, DEFAULT_SWAP_SEED, build_swap_set

    split = str(metadata.get(SPLIT_KEY) or "test")
    if split not in SPLIT_CHOICES:
        raise ConfigError(f"unknown {SPLIT_KEY} {split!r}; choose one of {', '.join(SPLIT_CHOICES)}")
    dataset = load_dataset(metadata=metadata)
    provenance = dataset.provenance(split)
    try:
        per_persona = int(metadata.get(SWAP_PER_PERSONA_KEY) or DEFAULT_PER_PERSONA)
        seed = int(metadata.get(SWAP_SEED_KEY) if metadata.get(SWAP_SEED_KEY) is not None else DEFAULT_SWAP_SEED)
    except (TypeError, ValueError):
        raise ConfigError(f"{SWAP_PER_PERSONA_KEY} and {SWAP_SEED_KEY} are integers") from None
    swaps = build_swap_set(dataset.items_for(split), per_persona=per_persona, seed=seed)
    for skipped in swaps.not_estimable:
        log.warning("persona swap: persona %s, %s: %s", skipped["persona"], skipped["attribute"], skipped["reason"])
    if not swaps.pairs:
        raise ConfigError(f"split {split!r} of {dataset.source.label} yields no persona-swap pair (no first-turn item)")
    records = [
        item.to_doc() | {"tide_source": provenance["source"], "split_sha256": provenance["split_sha256"]}
        for item in swaps.items
    ]
    return datasets.DatasetDict({"eval": datasets.Dataset.from_list(records)})


class TideTask(ConfigurableTask):
    """A generate-until task with multi-turn chat prompts and batched reference metrics."""

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        # lm-eval passes the whole YAML, including the "class" key that selected us.
        config = {k: v for k, v in (config or {}).items() if k != "class"}
        super().__init__(config=config, **kwargs)
        self._metrics: dict[tuple[str, str], dict[str, float]] = {}
        meta = self.config.metadata or {}
        self._scorer = ReferenceScorer(meta.get(EMBEDDING_KEY), device=meta.get(EMBEDDING_DEVICE_KEY))
        declared = {str(m.get("metric")) for m in (self.config.metric_list or []) if isinstance(m, dict)}
        self._epitome = (
            EpitomeMetrics((self.config.metadata or {}).get(EPITOME_KEY) or os.environ.get(EPITOME_ENV) or None)
            if declared & set(EPITOME_METRICS)
            else None
        )
        self.config.metadata = dict(self.config.metadata or {}) | {
            "prompt_sha256": prompt_sha256(self.config.description)
        }

    def fewshot_context(  # type: ignore[override]
        self,
        doc: dict,
        num_fewshot: int,
        system_instruction: str | None = None,
        apply_chat_template: bool = False,
        fewshot_as_multiturn: bool = False,
        chat_template: Callable[..., Any] | None = None,
        gen_prefix: str | None = None,
    ) -> Any:
        if num_fewshot:
            raise ConfigError("TIDE tasks are zero-shot: few-shot examples would leak other personas' references")
        system = "\n\n".join(s.strip() for s in (system_instruction, self.config.description) if s and s.strip())
        messages = build_messages(doc, system or None)
        if apply_chat_template and chat_template is not None:
            return chat_template(messages, add_generation_prompt=True)
        return render_plain(messages)

    def apply_filters(self) -> Any:
        result = super().apply_filters()
        pending: dict[tuple[str, str], str] = {}
        for inst in self._instances or []:
            for reply in inst.filtered_resps.values():
                key = (inst.doc["item_id"], _text(reply))
                if key not in self._metrics:
                    pending[key] = inst.doc["reference_reply"]
        if pending:
            keys = list(pending)
            rows = self._scorer.score([k[1] for k in keys], [pending[k] for k in keys])
            if self._epitome is not None:
                extra = self._epitome.score([k[1] for k in keys], self.config.task)
                rows = [row | more for row, more in zip(rows, extra, strict=True)]
            self._metrics.update(zip(keys, rows, strict=True))
            for metric, note in self._scorer.notes.items():
                if metric == "cosine_sim":
                    log.warning("%s: %s", self.config.task, note)
        return result

    def process_results(self, doc: dict, results: list[Any]) -> dict[str, float]:
        reply = _text(results[0])
        key = (doc["item_id"], reply)
        if key not in self._metrics:  # e.g. when a caller skips apply_filters
            row = self._scorer.score([reply], [doc["reference_reply"]])[0]
            if self._epitome is not None:
                row |= self._epitome.score([reply], self.config.task)[0]
            self._metrics[key] = row
        return dict(self._metrics[key])


class EpitomeMetrics:
    """The EPITOME metrics of a batch of replies: the local scorer's expected level per
    mechanism (0-2), or NaN with one warning when no scorer is named or it cannot be loaded
    (the reason is logged; a generation run is never lost to a missing scorer)."""

    def __init__(self, model_dir: str | None) -> None:
        self.model_dir = model_dir
        self.note: str | None = None if model_dir else f"no local EPITOME scorer named ({EPITOME_KEY} / {EPITOME_ENV})"

    def score(self, replies: list[str], task: str) -> list[dict[str, float]]:
        if self.note is None:
            try:
                from tide_bench.epitome.scorer import EpitomeScorer

                rows = EpitomeScorer.load(str(self.model_dir)).score(replies)
                return [{name: row[name] for name in EPITOME_METRICS} for row in rows]
            except (TideBenchError, OSError, ImportError) as exc:
                self.note = f"the EPITOME scorer could not be used ({str(exc).splitlines()[0]})"
        log.warning(
            "%s: EPITOME metrics not computed during generation: %s; `tide-bench epitome score RUN --model DIR` "
            "adds them afterwards (a study's epitome stage does)",
            task,
            self.note,
        )
        return [dict.fromkeys(EPITOME_METRICS, float("nan")) for _ in replies]


def _text(reply: Any) -> str:
    return reply if isinstance(reply, str) else (reply[0] if isinstance(reply, list | tuple) and reply else str(reply))
