"""A line per generated batch, with an honest time left: lm-eval's own bar moves per batch only.

On a busy 2-core machine the demo's generation bar sat at "0/12" for ten minutes, then showed a
two-hour ETA from one batch: a newcomer thought it hung. The hf backend generates one batch per
call of its ``_model_generate``; wrapping that call (on this model object only) prints, after
every batch, how many replies are done, how long the batch took, and the time left at the rate so
far. Other backends (vLLM, APIs) are left alone: their own progress reporting stands.

The context manager yields a :class:`Generated` that adds up the batches' own time, so run.json's
timings can tell generation apart from what the harness does around it (issue 46).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class Generated:
    """What the wrapped backend generated: batches, replies and the seconds inside its generate calls
    (None when the backend has no per-batch call to wrap)."""

    batches: int = 0
    replies: int = 0
    seconds: float | None = None


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


@contextlib.contextmanager
def batch_progress(
    lm: Any, total: int | None, say: Callable[[str], None] = _say, clock: Callable[[], float] = time.monotonic
) -> Iterator[Generated]:
    """While open, each batch ``lm`` generates (hf backend) reports itself through ``say``."""
    generated = Generated()
    generate = getattr(lm, "_model_generate", None)
    if generate is None or not callable(generate):
        yield generated
        return
    start, done, batches = clock(), 0, 0
    generated.seconds = 0.0

    def reported(context: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal done, batches
        began = clock()
        out = generate(context, *args, **kwargs)
        shape = getattr(context, "shape", None)
        done += int(shape[0]) if shape is not None and len(shape) else 1
        batches += 1
        now = clock()
        generated.batches, generated.replies = batches, done
        generated.seconds = (generated.seconds or 0.0) + (now - began)
        of = f"/{total}" if total else ""
        left = ""
        if total and done < total:
            left = f"; about {_duration((now - start) / done * (total - done))} left at this rate"
        say(f"[generate] batch {batches}: {done}{of} replies, this batch {_duration(now - began)}{left}")
        return out

    lm._model_generate = reported
    try:
        yield generated
    finally:
        with contextlib.suppress(AttributeError):
            del lm._model_generate  # the class's own method again
