"""Generation says how far it is after every batch (U6, new-user round 3: the bar sat at 0/12 for
ten minutes, then promised two hours)."""

from __future__ import annotations

from typing import Any

from tide_bench.generation.batch_progress import batch_progress


class _Tensor:
    def __init__(self, rows: int) -> None:
        self.shape = (rows, 7)


class _LM:
    def __init__(self) -> None:
        self.calls = 0

    def _model_generate(self, context: Any, max_length: int, stop: list[str]) -> str:
        self.calls += 1
        return f"batch of {context.shape[0]}"


def test_each_batch_reports_replies_done_and_time_left_and_the_model_is_restored() -> None:
    lm, said, now = _LM(), [], [0.0]

    def clock() -> float:
        now[0] += 60.0
        return now[0]

    with batch_progress(lm, 12, say=said.append, clock=clock) as generated:
        assert lm._model_generate(_Tensor(4), 100, stop=[]) == "batch of 4"
        lm._model_generate(_Tensor(4), 100, stop=[])
        lm._model_generate(_Tensor(4), 100, stop=[])
    assert lm.calls == 3 and "_model_generate" not in vars(lm)  # the class's own method again
    assert said[0] == "[generate] batch 1: 4/12 replies, this batch 60 s; about 4 min left at this rate"
    assert said[-1] == "[generate] batch 3: 12/12 replies, this batch 60 s"
    assert (generated.batches, generated.replies, generated.seconds) == (3, 12, 180.0)  # run.json's generate_s


def test_a_backend_without_batches_is_left_alone() -> None:
    class API:
        pass

    said: list[str] = []
    with batch_progress(API(), 12, say=said.append) as generated:
        pass
    assert said == [] and generated.seconds is None
