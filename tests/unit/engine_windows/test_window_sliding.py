"""Sliding windows by hand-checked examples."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from engine.operator import SEQ, TIME, run_batches
from engine.ordering import in_order
from engine.windows import Aggregate, SlidingWindow, WindowSpec

AGGS = (Aggregate("n", "count", None), Aggregate("s", "sum", "v"))


def spec(size: int, slide: int, lateness: int = 0) -> WindowSpec:
    return WindowSpec(key="k", size_us=size, slide_us=slide, lateness_us=lateness,
                      aggregates=AGGS, value_types={"v": "int"}, key_type="string",
                      kind="sliding")


def frame(times: list[int], values: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"k": ["a"] * len(times), TIME: times, SEQ: range(len(times)),
                         "v": values})


def rows(out: pd.DataFrame) -> list[tuple]:
    return [tuple(r) for r in out[["window_start", "window_end", "n", "s"]].values.tolist()]


def test_each_event_is_in_size_over_slide_windows():
    # size 4, slide 2: 1 is in [-2, 2) and [0, 4); 3 in [0, 4) and [2, 6)
    out, _, _, _ = run_batches(SlidingWindow(spec(4, 2)), [frame([1, 3], [1, 10])])
    assert rows(out) == [(-2, 2, 1, 1), (0, 4, 2, 11), (2, 6, 1, 10)]


def test_slices_are_the_gcd_of_size_and_slide():
    assert SlidingWindow(spec(6, 4)).slice_us == 2
    # size 6, slide 4: 5 is in [0, 6) and [4, 10); 7 in [4, 10)
    out, _, _, _ = run_batches(SlidingWindow(spec(6, 4, lateness=10)), [frame([5, 7], [1, 2])])
    assert rows(out) == [(0, 6, 1, 1), (4, 10, 2, 3)]


def test_windows_close_one_by_one_as_the_watermark_passes_their_ends():
    op = SlidingWindow(spec(4, 2))
    first = op.step(op.init(), frame([1], [1]))
    assert rows(first.output) == []  # watermark 1: [-2, 2) is still open
    second = op.step(first.state, frame([4], [2]).assign(**{SEQ: [1]}))
    assert rows(second.output) == [(-2, 2, 1, 1), (0, 4, 1, 1)]
    assert rows(op.finish(second.state)) == [(2, 6, 1, 2), (4, 8, 1, 2)]


@given(st.lists(st.tuples(st.sampled_from(["b", "a", "c"]), st.integers(-3, 3), st.booleans()),
                max_size=12))
def test_rows_count_as_in_order_exactly_when_a_stable_sort_keeps_them(rows):
    """Window output is sorted by (key, start, final) only when not in that order already."""
    frame = pd.DataFrame(rows, columns=["k", "s", "f"]).astype({"k": object})
    columns = [frame[c].to_numpy() for c in ("k", "s", "f")]
    order = frame.sort_values(["k", "s", "f"], kind="stable").index.to_numpy()
    assert in_order(columns) == (order == np.arange(len(frame))).all()
    assert in_order(columns[1:]) == (np.lexsort(columns[:0:-1]) == np.arange(len(frame))).all()
    assert in_order(columns[1:2]) == (np.argsort(columns[1], kind="stable")
                                      == np.arange(len(frame))).all()
