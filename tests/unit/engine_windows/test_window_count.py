"""Count windows by hand-checked examples."""

from __future__ import annotations

import pandas as pd

from engine.operator import SEQ, TIME, run_batches
from engine.windows import Aggregate, CountWindow, WindowSpec

AGGS = (Aggregate("n", "count", None), Aggregate("s", "sum", "v"),
        Aggregate("f", "first", "v"))


def spec(size: int, every: int, lateness: int = 0) -> WindowSpec:
    return WindowSpec(key="k", size_events=size, every_events=every, lateness_us=lateness,
                      aggregates=AGGS, value_types={"v": "int"}, key_type="string",
                      kind="count")


def frame(times: list[int], values: list[int], first_seq: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"k": ["a"] * len(times), TIME: times,
                         SEQ: range(first_seq, first_seq + len(times)), "v": values})


def rows(out: pd.DataFrame) -> list[tuple]:
    columns = ["position", "window_start", "window_end", "n", "s", "f"]
    return [tuple(r) for r in out[columns].values.tolist()]


def test_every_two_events_the_last_three():
    # positions 2 (events 1, 2) and 4 (events 2, 3, 4); the fifth event completes nothing
    out, _, _, _ = run_batches(CountWindow(spec(3, 2)), [frame([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])])
    assert rows(out) == [(2, 1, 2, 2, 3, 1), (4, 2, 4, 3, 9, 2)]


def test_events_count_in_event_time_order_within_the_lateness():
    # arrivals 3, 1, 2 are counted as 1, 2, 3 (all held until the end: watermark 3 - 10)
    out, late, _, _ = run_batches(CountWindow(spec(2, 2, lateness=10)),
                                  [frame([3, 1, 2], [30, 10, 20])])
    assert late.empty
    assert rows(out) == [(2, 1, 2, 2, 30, 10)]


def test_an_event_is_released_once_the_watermark_is_at_its_time():
    op = CountWindow(spec(1, 1, lateness=2))
    first = op.step(op.init(), frame([1], [7]))
    assert first.output.empty  # watermark -1 < 1
    second = op.step(first.state, frame([3], [8], first_seq=1))  # watermark 1 = 1: released
    assert rows(second.output) == [(1, 1, 1, 1, 7, 7)]
    assert rows(op.finish(second.state)) == [(2, 3, 3, 1, 8, 8)]
