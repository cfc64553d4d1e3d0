"""Pane sharing: window operators stepping through one pane group's shared late split and pane
partials give exactly what each gives alone (output, late events, state), for random streams
with NULLs, late events, batch cuts and windows whose slices the pane divides."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from window_cases import split

from engine.operator import SEQ, TIME
from engine.windows import Aggregate, SlidingWindow, TumblingWindow, WindowSpec
from engine.windows.pane_share import PaneShare, shareable_window, with_share

AGGREGATES = [Aggregate("n", "count", None), Aggregate("s", "sum", "v"),
              Aggregate("a", "avg", "v"), Aggregate("lo", "min", "v"),
              Aggregate("hi", "max", "w"), Aggregate("nv", "count", "w")]


def window(size: int, slide: int, aggregates: list[Aggregate], lateness: int):
    kind = "tumbling" if size == slide else "sliding"
    shape = {"size_us": size} if kind == "tumbling" else {"size_us": size, "slide_us": slide}
    spec = WindowSpec(key="k", lateness_us=lateness, aggregates=tuple(aggregates),
                      value_types={"v": "int", "w": "int"}, key_type="string", kind=kind,
                      **shape)
    return (TumblingWindow if kind == "tumbling" else SlidingWindow)(spec)


@st.composite
def cases(draw):
    n = draw(st.integers(0, 60))
    events = pd.DataFrame({
        "k": draw(st.lists(st.sampled_from("abc"), min_size=n, max_size=n)),
        TIME: draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)),
        SEQ: np.arange(n, dtype="int64"),
        "v": pd.array(draw(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=n,
                                    max_size=n)), dtype="Int64"),
        "w": pd.array(draw(st.lists(st.one_of(st.none(), st.integers(0, 9)), min_size=n,
                                    max_size=n)), dtype="Int64")})
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    lateness = draw(st.integers(0, 6))
    unit = draw(st.sampled_from([1, 2]))
    shapes = draw(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=2,
                           max_size=4))
    ops = []
    for i, (a, b) in enumerate(shapes):
        size, slide = unit * max(a, b), unit * min(a, b)
        aggs = draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=3, unique=True))
        ops.append(window(size, slide, aggs, lateness))
        ops[-1].name = f"q{i}"
    return events, cuts, ops


def run(op, batches: list[pd.DataFrame]) -> tuple[list[pd.DataFrame], list[pd.DataFrame],
                                                   pd.DataFrame, pd.DataFrame]:
    state, outs, lates = op.init(), [], []
    for batch in batches:
        result = op.step(state, batch)
        state = result.state
        outs.append(result.output.reset_index(drop=True))
        lates.append(result.late.reset_index(drop=True))
    return outs, lates, state.reset_index(drop=True), op.finish(state).reset_index(drop=True)


@settings(max_examples=150)
@given(cases())
def test_members_of_a_pane_group_get_what_they_get_alone(case):
    events, cuts, ops = case
    assert all(shareable_window(op) is op for op in ops)
    pane = math.gcd(*(op.slice_us for op in ops))
    share = PaneShare.of(pane, ops)
    batches = split(events, cuts)
    for op in ops:  # one member after the other through every batch, as a worker steps them
        alone = run(op, batches)
        shared = run(with_share(op, share), batches)
        for mine, theirs in zip(alone[:2], shared[:2], strict=True):
            for a, b in zip(mine, theirs, strict=True):
                pd.testing.assert_frame_equal(a, b)
        pd.testing.assert_frame_equal(alone[2], shared[2])
        pd.testing.assert_frame_equal(alone[3], shared[3])


def test_a_pane_that_does_not_divide_a_slice_is_refused():
    ops = [window(4, 2, AGGREGATES[:1], 0), window(3, 3, AGGREGATES[:1], 0)]
    with pytest.raises(ValueError, match="does not divide"):  # a pane of 2, slices of 3
        PaneShare.of(2, ops)


def test_windows_of_other_lateness_cannot_share():
    ops = [window(4, 2, AGGREGATES[:1], 0), window(4, 4, AGGREGATES[:1], 1)]
    with pytest.raises(ValueError, match="differ in key or lateness"):
        PaneShare.of(2, ops)


def test_float_sums_and_holistic_aggregates_are_not_shared():
    doubles = WindowSpec(key="k", size_us=4, lateness_us=0, kind="tumbling",
                         aggregates=(Aggregate("s", "sum", "x"),), value_types={"x": "double"},
                         key_type="string")
    median = WindowSpec(key="k", size_us=4, lateness_us=0, kind="tumbling",
                        aggregates=(Aggregate("m", "median", "v"),), value_types={"v": "int"},
                        key_type="string")
    assert shareable_window(TumblingWindow(doubles)) is None
    assert shareable_window(TumblingWindow(median)) is None
    assert shareable_window(window(4, 2, AGGREGATES, 0)) is not None
