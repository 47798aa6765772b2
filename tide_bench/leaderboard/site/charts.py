"""The index page's charts, drawn beside the rest of a build's last steps.

Why: once the entries are ranked, the build has two independent jobs left before it writes
the index: drawing the charts (matplotlib, about half a second for a board of 50, measured)
and the judge-bias diagnostics (a persona bootstrap, about 0.2 s). The charts need only the
ranked rows, so each is drawn in a process forked at that moment, while this process runs
the diagnostics; a fork copies the rows as they are then, so the diagnostics may go on
adding their fields to the same rows. Where ``fork`` is not available, or with one worker,
the charts are drawn here when asked for. A chart whose process fails is drawn here too:
the page never loses a chart to the parallelism, and a real error surfaces as usual.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any

from tide_bench.leaderboard.site.plots import forest_plot, pairwise_plot, size_plot

Rows = Sequence[dict[str, Any]]


def _drawers(rows: Rows, pairwise: Sequence[dict[str, Any]], metric: str, label: str) -> dict[str, Callable[[], str]]:
    return {
        "forest": lambda: forest_plot(rows, metric, label),
        "pairwise": lambda: pairwise_plot(rows, pairwise, metric),
        "size": lambda: size_plot(rows, metric, label),
    }


def _child(draw: Callable[[], str], conn: Any) -> None:
    try:
        conn.send(("ok", draw()))
    except BaseException as exc:  # reported; the parent draws the chart itself
        conn.send(("error", repr(exc)))
    finally:
        conn.close()


class Charts:
    """The three charts of a board: started at once, collected with :meth:`result`."""

    def __init__(
        self, rows: Rows, pairwise: Sequence[dict[str, Any]], metric: str, label: str, *, parallel: bool = False
    ) -> None:
        self._drawers = _drawers(rows, pairwise, metric, label)
        self._running: dict[str, tuple[Any, Any]] = {}
        if parallel and "fork" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("fork")
            for name, draw in self._drawers.items():
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_child, args=(draw, send), daemon=True)
                process.start()
                send.close()
                self._running[name] = (process, receive)

    def close(self) -> None:
        """Stop the charts not collected (the build failed before writing the page)."""
        for process, receive in self._running.values():
            process.terminate()
            process.join()
            receive.close()
        self._running.clear()

    def result(self) -> dict[str, str]:
        """Every chart's SVG (or the empty string a chart gives when it has nothing to show)."""
        out = {}
        for name, draw in self._drawers.items():
            process, receive = self._running.pop(name, (None, None))
            answer = None
            if receive is not None:
                try:
                    answer = receive.recv()
                except EOFError:  # the process died without an answer
                    answer = None
                receive.close()
                process.join()
            out[name] = answer[1] if answer and answer[0] == "ok" else draw()
        return out
