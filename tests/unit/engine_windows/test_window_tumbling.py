"""Tumbling windows by hand-checked examples."""

from __future__ import annotations

import pandas as pd

from engine.operator import SEQ, TIME, run_batches
from engine.windows import Aggregate, TumblingWindow, WindowSpec

AGGS = (Aggregate("n", "count", None), Aggregate("s", "sum", "v"))


def spec(size: int, lateness: int = 0) -> WindowSpec:
    return WindowSpec(key="k", size_us=size, lateness_us=lateness, aggregates=AGGS,
                      value_types={"v": "int"}, key_type="string")


def frame(times: list[int], values: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"k": ["a"] * len(times), TIME: times, SEQ: range(len(times)),
                         "v": values})


def rows(out: pd.DataFrame) -> list[tuple]:
    return [tuple(r) for r in out[["window_start", "window_end", "n", "s"]].values.tolist()]


def test_events_fall_into_the_window_of_their_multiple_of_the_size():
    # 1 and 5 in [0, 10), 12 in [10, 20), -3 in [-10, 0)
    out, _, _, _ = run_batches(TumblingWindow(spec(10, lateness=100)),
                               [frame([1, 5, 12, -3], [1, 2, 3, 4])])
    assert rows(out) == [(-10, 0, 1, 4), (0, 10, 2, 3), (10, 20, 1, 3)]


def test_a_window_is_emitted_in_the_step_where_the_watermark_reaches_its_end():
    op = TumblingWindow(spec(10, lateness=2))
    first = op.step(op.init(), frame([1, 11], [1, 2]))
    assert first.output.empty  # watermark 9 < 10
    second = op.step(first.state, frame([12], [3]).assign(**{SEQ: [2]}))
    assert rows(second.output) == [(0, 10, 1, 1)]  # watermark 10 reaches [0, 10)
    assert rows(op.finish(second.state)) == [(10, 20, 2, 5)]


def test_late_events_are_not_aggregated():
    # lateness 2 after 10: 8 is on time (at the watermark), 7 is late
    out, late, _, _ = run_batches(TumblingWindow(spec(5, lateness=2)),
                                  [frame([10, 8, 7], [1, 2, 4])])
    assert late[SEQ].tolist() == [2]
    assert rows(out) == [(5, 10, 1, 2), (10, 15, 1, 1)]
