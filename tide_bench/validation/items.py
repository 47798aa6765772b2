"""The item adapter: a pack's (message, reply) pairs as what a tide-bench judge reads.

A validation item is one help-seeker message and one reply, with no persona and no reference
reply; it becomes a :class:`~tide_bench.generation.run_dir.Generation` with an empty history,
``persona_id`` = the item's cluster (so the judge summary's intervals resample the same unit
as the report), and ``scenario`` = ``validation:<pack>``. The judge's rubric is TIDE's
(written for PTSD support conversations), so every number computed on these items is an
*out-of-domain* validation: reports and the judges board say so, and name the TIDE factor
each upstream attribute stands in for.
"""

from __future__ import annotations

from pathlib import Path

from tide_bench.core.errors import DataError
from tide_bench.generation.run_dir import Generation, RunDirectory
from tide_bench.validation.adapters.common import PackData

NO_MESSAGE = "(no message: this reply opens the conversation)"
OUT_OF_DOMAIN = (
    "out of domain: these are not PTSD support conversations and the attributes are not TIDE's factors; "
    "each attribute is compared with the TIDE factor it stands in for (a proxy)"
)


def item_id(pack: str, item: str) -> str:
    """A validation item's id in a judge run: ``validation:<pack>/<upstream item>``."""
    return f"validation:{pack}/{item}"


def generations(data: PackData, limit: int | None = None) -> list[Generation]:
    """One generation per item that has a reply text; the pack's order, first ``limit``."""
    if data.replies is None or data.messages is None:
        raise DataError(
            f"pack {data.pack.name}: this copy holds no reply texts, so a judge cannot rate it",
            hint="fetch the pack again from a copy that includes its replies file (see docs/validation.md)",
        )
    out = []
    for k, (item, cluster, message, reply) in enumerate(
        zip(data.item_ids, data.clusters, data.messages, data.replies, strict=True)
    ):
        if reply is None or not reply.strip():
            continue
        out.append(
            Generation(
                item_id=item_id(data.pack.name, item),
                task=f"validation_{data.pack.name}",
                persona_id=f"{data.pack.name}:{cluster}",
                conversation_id=cluster,
                turn=1,
                scenario=f"validation:{data.pack.name}",
                split="validation",
                history=[],
                client_utterance=message if message and message.strip() else NO_MESSAGE,
                reference_reply="",
                reply=reply,
                prompt="",
                file=f"validation:{data.pack.name}",
                line=k + 1,
            )
        )
        if limit is not None and len(out) >= limit:
            break
    return out


def pack_run(data: PackData, limit: int | None = None) -> RunDirectory:
    """An in-memory run of the pack's replies, for :func:`tide_bench.judging.judge_run`."""
    gens = generations(data, limit)
    if not gens:
        raise DataError(f"pack {data.pack.name}: no item has a reply text to judge")
    manifest = {
        "kind": "tide-bench-validation-items",
        "model": {"name": f"validation:{data.pack.name}"},
        "data": {
            "source": f"{data.pack.repo}@{data.pack.revision}",
            "split": "validation",
            "n_items": len(gens),
            "out_of_domain": True,
        },
    }
    return RunDirectory(Path(f"validation:{data.pack.name}"), manifest, gens)
