"""Laws of the window operators (tumbling, sliding and session), in-process (no Spark): engine ==
reference, batch boundaries carry no meaning, what is emitted after any batch is exactly the
windows closed by then, state after a shared cut is the same, the codec round-trips, and sliding
state stays within its slice bound."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.operator import SEQ, TIME, run_batches
from engine.windows import (
    Aggregate,
    CountWindow,
    SessionWindow,
    SlidingWindow,
    TumblingWindow,
    WindowSpec,
    window_reference,
)

AGGS = (Aggregate("n", "count", None), Aggregate("n_v", "count", "v"), Aggregate("s", "sum", "v"),
        Aggregate("lo", "min", "v"), Aggregate("hi", "max", "v"), Aggregate("avg", "avg", "v"))


@st.composite
def streams(draw):
    """Events over a few keys with bounded disorder, some null values, and two batch plans."""
    n = draw(st.integers(0, 60))
    keys = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=n, max_size=n))
    base = np.cumsum(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)) or [0])[:n]
    jitter = draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n))
    values = draw(st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=n, max_size=n))
    events = pd.DataFrame({
        "k": pd.Series(keys, dtype=object),
        TIME: (np.asarray(base, dtype="int64") + np.asarray(jitter, dtype="int64")) * 1000,
        SEQ: np.arange(n, dtype="int64"),
        "v": pd.Series([np.nan if v is None else float(v) for v in values], dtype="float64"),
    })
    size = draw(st.sampled_from([1000, 3000, 5000, 6000]))
    kind = draw(st.sampled_from(["tumbling", "sliding", "session", "count"]))
    slide = (draw(st.sampled_from([s for s in (1000, 2000, 3000, 4000) if s <= size]))
             if kind == "sliding" else None)
    if kind == "count":  # size and slide count events
        size, slide = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    lateness = draw(st.sampled_from([0, 2000, 4000, 100_000]))
    spec = WindowSpec(key="k", size_us=size, lateness_us=lateness, aggregates=AGGS,
                      value_types={"v": "int"}, key_type="string", slide_us=slide, kind=kind)
    plans = [sorted(draw(st.lists(st.integers(0, n), max_size=8))) for _ in range(2)]
    return events, spec, plans


def operator(spec: WindowSpec) -> TumblingWindow:
    kinds = {"tumbling": TumblingWindow, "sliding": SlidingWindow, "session": SessionWindow,
             "count": CountWindow}
    return kinds[spec.kind](spec)


def split(events: pd.DataFrame, cuts: list[int]) -> list[pd.DataFrame]:
    """Batches of ``events`` at the cut points (repeated cuts give empty batches)."""
    bounds = [0, *cuts, len(events)]
    return [events.iloc[a:b] for a, b in itertools.pairwise(bounds)]


def canonical(output: pd.DataFrame) -> list[tuple]:
    rows = output.astype(object).where(output.notna(), None).itertuples(index=False)
    return sorted(tuple(r) for r in rows)


@settings(max_examples=200, deadline=None)
@given(streams())
def test_engine_equals_reference_and_ignores_batch_boundaries(case):
    events, spec, (plan_a, plan_b) = case
    op = operator(spec)
    out_a, late_a, state_a, _ = run_batches(op, split(events, plan_a))
    out_b, late_b, state_b, _ = run_batches(op, split(events, plan_b))
    ref_rows, ref_late = window_reference(events, spec)
    reference = pd.DataFrame(ref_rows, columns=list(op.output_schema.names))
    assert canonical(out_a) == canonical(reference)
    assert canonical(out_a) == canonical(out_b)
    assert sorted(late_a[SEQ].tolist()) == ref_late == sorted(late_b[SEQ].tolist())
    assert op.state_codec.digest(state_a) == op.state_codec.digest(state_b)


@settings(max_examples=80, deadline=None)
@given(streams())
def test_state_at_a_shared_cut_is_identical(case):
    events, spec, (plan_a, plan_b) = case
    op = operator(spec)
    shared = len(events) // 2
    _, _, _, digests_a = run_batches(op, split(events, sorted({*plan_a, shared})), finish=False)
    _, _, _, digests_b = run_batches(op, split(events, sorted({*plan_b, shared})), finish=False)
    at_a = sorted({*plan_a, shared}).index(shared)
    at_b = sorted({*plan_b, shared}).index(shared)
    assert digests_a[at_a] == digests_b[at_b]


@settings(max_examples=40, deadline=None)
@given(streams())
def test_state_codec_round_trip_and_empty_batch(case):
    events, spec, _ = case
    op = operator(spec)
    half = split(events, [len(events) // 2])
    state = op.step(op.init(), half[0]).state
    restored = op.state_codec.decode(op.state_codec.encode(state))
    assert op.state_codec.digest(restored) == op.state_codec.digest(state)
    direct, via_codec = op.step(state, half[1]), op.step(restored, half[1])
    assert canonical(direct.output) == canonical(via_codec.output)
    empty = op.step(state, events.iloc[:0])
    assert empty.output.empty and empty.late.empty
    assert op.state_codec.digest(empty.state) == op.state_codec.digest(state)


def test_late_event_is_reported_with_reason():
    spec = WindowSpec(key="k", size_us=10, lateness_us=5, aggregates=AGGS[:1],
                      value_types={}, key_type="string")
    events = pd.DataFrame({"k": ["a", "a", "a"], TIME: [100, 120, 110], SEQ: [0, 1, 2]})
    result = TumblingWindow(spec).step(TumblingWindow(spec).init(), events)
    assert result.late[SEQ].tolist() == [2]
    assert "below the key's watermark" in result.late["reason"].iloc[0]
    # the window [100, 110) closed when the watermark reached 115
    assert result.output["window_start"].tolist() == [100]
    assert result.output["n"].tolist() == [1]


@settings(max_examples=60, deadline=None)
@given(streams())
def test_emitted_prefix_is_the_reference_windows_closed_by_the_watermark(case):
    """P3: what has been emitted after any batch is exactly the reference's closed windows."""
    events, spec, (plan, _) = case
    op = operator(spec)
    for cut in sorted({*plan, len(events)}):
        prefix = events.iloc[:cut]
        emitted, _, _, _ = run_batches(op, split(prefix, plan_within(plan, cut)), finish=False)
        rows, _ = window_reference(prefix, spec)
        max_t = prefix.groupby("k")[TIME].max()
        closed = [r for r in rows if r["window_end"] <= max_t[r["k"]] - spec.lateness_us]
        expected = pd.DataFrame(closed, columns=list(op.output_schema.names))
        assert canonical(emitted) == canonical(expected)


def plan_within(plan: list[int], cut: int) -> list[int]:
    return [c for c in plan if c <= cut]


def test_window_closes_exactly_when_the_watermark_reaches_its_end():
    spec = WindowSpec(key="k", size_us=10, lateness_us=5, aggregates=AGGS[:1],
                      value_types={}, key_type="string")
    op = operator(spec)
    first = op.step(op.init(), pd.DataFrame({"k": ["a"], TIME: [100], SEQ: [0]}))
    assert first.output.empty
    second = op.step(first.state, pd.DataFrame({"k": ["a"], TIME: [115], SEQ: [1]}))
    assert second.output["window_end"].tolist() == [110]  # watermark 115 - 5 = 110


@settings(max_examples=60, deadline=None)
@given(streams())
def test_sliding_state_is_bounded_by_the_window(case):
    """Slices kept per key never exceed what windows not yet emitted can still need."""
    events, spec, (plan, _) = case
    if spec.kind != "sliding":
        return
    op = SlidingWindow(spec)
    state = op.init()
    for batch in split(events, plan):
        state = op.step(state, batch).state
        is_key = state["window_start"] == np.iinfo(np.int64).min
        slices = state[~is_key]
        if slices.empty:
            continue
        max_t = state[is_key].set_index("k")["max_t"]
        watermark = slices["k"].map(max_t) - spec.lateness_us
        # a kept slice lies in a window not yet closed: it starts after watermark - size
        assert (slices["window_start"] + spec.size_us > watermark - spec.slide).all()


def test_sliding_window_example():
    """Size 3, slide 1: an event at t=5 is in windows [3,6), [4,7), [5,8)."""
    spec = WindowSpec(key="k", size_us=3, lateness_us=0, aggregates=AGGS[:1], value_types={},
                      key_type="string", slide_us=1)
    op = SlidingWindow(spec)
    events = pd.DataFrame({"k": ["a", "a"], TIME: [5, 6], SEQ: [0, 1]})
    out, _, _, _ = run_batches(op, [events])
    rows = sorted(zip(out["window_start"], out["n"], strict=True))
    assert rows == [(3, 1), (4, 2), (5, 2), (6, 1)]


def test_session_windows_merge_runs_closer_than_the_gap():
    """Gap 10: events 0, 5, 30, 38 form sessions [0, 15) and [30, 48); 20 arriving late
    within the lateness bridges nothing (20 - 5 >= 10 and 30 - 20 >= 10) but 12 joins [0, ...)."""
    spec = WindowSpec(key="k", size_us=10, lateness_us=100, aggregates=AGGS[:1], value_types={},
                      key_type="string", kind="session")
    op = SessionWindow(spec)
    events = pd.DataFrame({"k": ["a"] * 5, TIME: [0, 5, 30, 38, 12], SEQ: range(5)})
    out, _, _, _ = run_batches(op, [events.iloc[:2], events.iloc[2:]])
    rows = sorted(zip(out["window_start"], out["window_end"], out["n"], strict=True))
    assert rows == [(0, 22, 3), (30, 48, 2)]
