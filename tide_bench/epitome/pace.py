"""How long training the local EPITOME scorer takes: said before it starts, and again from its own rate.

A new user on a loaded 2-core machine saw the default training project 4-5 hours against the
35 minutes the docs state, and learned of the quicker variants only afterwards. So ``epitome
train`` prints its plan first (pairs, the idle-machine time, the quicker checkable variant) and,
once a minute of training has passed, the projection from the rate it actually reaches.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# Training pairs a second on 2 idle CPU cores (all-MiniLM-L6-v2, 128 word pieces, batch 16):
# the default 5-fold run (46,260 pairs) took about 35 minutes (docs/validation.md, "EPITOME").
IDLE_PAIRS_PER_S = 22.0
QUICK = "--folds 2 --epochs 1"
_AFTER_S = 60.0


def minutes(pairs: float, rate: float) -> str:
    return f"{max(1, round(pairs / rate / 60))} min"


def training_plan(total: int, folds: int, epochs: int) -> str:
    """The line printed before training: what will run and about how long it takes."""
    what = f"{folds} folds and the final fit" if folds else "the final fit only (no cross-validation)"
    return (
        f"training: {total:,} pairs ({what}, {epochs} epoch(s)): about {minutes(total, IDLE_PAIRS_PER_S)} on 2 idle "
        f"CPU cores, several times longer on a busy machine; `{QUICK}` is the quickest variant `validation report` "
        "can check. Ctrl-C and the same command resume at the first unfinished fold."
    )


class Pace:
    """Counts trained pairs and, once, after a minute, says when the run will end at its own rate."""

    def __init__(self, total: int, say: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.say, self.clock = total, say, clock
        self.start = clock()
        self.done = 0
        self.told = False

    def step(self, n: int) -> None:
        self.done += n
        elapsed = self.clock() - self.start
        if self.told or elapsed < _AFTER_S or self.done <= 0:
            return
        self.told = True
        rate = self.done / elapsed
        left = max(0, self.total - self.done)
        self.say(
            f"at {rate:.1f} pairs/s so far, the rest takes about {minutes(left, rate)} "
            f"(the {minutes(self.total, IDLE_PAIRS_PER_S)} of an idle machine); to shorten it, stop and rerun with "
            f"`{QUICK}` into another --out"
        )

    def wrap(self, update: Callable[[int], object]) -> Callable[[int], None]:
        def both(n: int) -> None:
            update(n)
            self.step(n)

        return both
