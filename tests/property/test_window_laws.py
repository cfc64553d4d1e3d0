"""Laws of the window operators (tumbling, sliding, session and count), in-process (no Spark):
engine == reference (floats within a relative tolerance of 1e-9) for every aggregate under random
disorder, late events, nulls and batch plans with empty batches; batch boundaries carry no
meaning; what is emitted after any batch is exactly the windows closed by then; updates mode
emits exactly the reference's early and final rows of the plan; state after a shared cut is the
same and survives the codec; slice state stays within its declared bound; random ``where:`` and
``having:`` predicates (SQL nulls included) keep the engine equal to the reference."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from predicates import conditions_over
from window_cases import KINDS, operator, shape, split

from engine.filtered import FilteredOperator
from engine.operator import SEQ, TIME, KeyedOperator, run_batches
from engine.predicate import parse_predicate
from engine.windows import (
    Aggregate,
    SessionWindow,
    SlidingWindow,
    TumblingWindow,
    WindowSpec,
    window_reference,
    window_updates_reference,
)
from engine.windows.family import window_operator
from engine.windows.udaf import parse_udaf

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
             if kind == "sliding" else 0)
    if kind == "count":  # size and slide count events
        size = draw(st.integers(1, 5))
        slide = draw(st.integers(1, size))
    lateness = draw(st.sampled_from([0, 2000, 4000, 100_000]))
    spec = WindowSpec(key="k", lateness_us=lateness, aggregates=AGGS, value_types={"v": "int"},
                      key_type="string", kind=kind, **shape(kind, size, slide))
    plans = [sorted(draw(st.lists(st.integers(0, n), max_size=8))) for _ in range(2)]
    return events, spec, plans


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


@settings(max_examples=200, deadline=None)
@given(streams(), st.sets(st.sampled_from(["a", "b", "c", "d"])))
def test_a_keys_windows_do_not_depend_on_the_keys_stepped_with_it(case, group):
    """Stepping every key at once (a driver run, a shared job's part) gives each key's windows
    bit for bit as stepping its bucket's keys alone (a Spark task per bucket) does: also the
    doubles of aggregates whose merge is not exact (variance: Chan's update)."""
    events, spec, (plan, _) = case
    events = events.assign(v=events["v"] / 7)  # values a double cannot hold exactly
    spec = replace(spec, value_types={"v": "double"},
                   aggregates=(*AGGS, Aggregate("sd", "stddev", "v"),
                               Aggregate("var", "var_pop", "v")))
    op = operator(spec)
    batches = split(events, plan)
    together = run_batches(op, batches)[0]
    apart = [run_batches(op, [b[b["k"].isin(keys)] for b in batches])[0]
             for keys in (group, {"a", "b", "c", "d"} - group)]
    assert canonical(together) == sorted(canonical(apart[0]) + canonical(apart[1]))


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
                      key_type="string", slide_us=1, kind="sliding")
    op = SlidingWindow(spec)
    events = pd.DataFrame({"k": ["a", "a"], TIME: [5, 6], SEQ: [0, 1]})
    out, _, _, _ = run_batches(op, [events])
    rows = sorted(zip(out["window_start"], out["n"], strict=True))
    assert rows == [(3, 1), (4, 2), (5, 2), (6, 1)]


def test_session_windows_merge_runs_closer_than_the_gap():
    """Gap 10: events 0, 5, 30, 38 form sessions [0, 15) and [30, 48); 20 arriving late
    within the lateness bridges nothing (20 - 5 >= 10 and 30 - 20 >= 10) but 12 joins [0, ...)."""
    spec = WindowSpec(key="k", gap_us=10, lateness_us=100, aggregates=AGGS[:1], value_types={},
                      key_type="string", kind="session")
    op = SessionWindow(spec)
    events = pd.DataFrame({"k": ["a"] * 5, TIME: [0, 5, 30, 38, 12], SEQ: range(5)})
    out, _, _, _ = run_batches(op, [events.iloc[:2], events.iloc[2:]])
    rows = sorted(zip(out["window_start"], out["window_end"], out["n"], strict=True))
    assert rows == [(0, 22, 3), (30, 48, 2)]


# -- every aggregate, updates mode, state bounds --------------------------------------------------

REL_TOL = 1e-9
RMS = parse_udaf("rms", {"init": "(0, 0.0)", "add": "(a, x) -> (a[0] + 1, a[1] + x * x)",
                         "merge": "(a, b) -> (a[0] + b[0], a[1] + b[1])",
                         "finish": "a -> sqrt(a[1] / a[0])"})
A = Aggregate
#: Every aggregate function, over a double column v, an int column w and a string column s.
ALL_AGGS = (
    A("n", "count", None), A("n_v", "count", "v"), A("n_s", "count", "s"),
    A("total", "sum", "v"), A("total_w", "sum", "w"), A("mean", "avg", "v"),
    A("lo", "min", "v"), A("hi", "max", "w"), A("sd", "stddev", "v"),
    A("var", "variance", "w"), A("sd_pop", "stddev_pop", "v"), A("var_pop", "var_pop", "v"),
    A("first_v", "first", "v"), A("last_w", "last", "w"), A("first_s", "first", "s"),
    A("last_s", "last", "s"), A("v_at_min_w", "argmin", "v", by="w"),
    A("s_at_max_v", "argmax", "s", by="v"), A("distinct_v", "count_distinct", "v"),
    A("distinct_s", "count_distinct", "s"), A("approx_w", "approx_count_distinct", "w"),
    A("approx_s", "approx_count_distinct", "s"), A("median_v", "median", "v", p=0.5),
    A("p90_w", "percentile", "w", p=0.9), A("p0_v", "percentile", "v", p=0.0),
    A("rms_v", "rms", "v"))
TYPES = {"v": "double", "w": "int", "s": "string"}


@st.composite
def typed_streams(draw, kind: str, emit: str = "close"):
    """Events over three keys with bounded disorder (some beyond the lateness), null values,
    and two batch plans (repeated cuts are empty batches)."""
    n = draw(st.integers(0, 40))
    ints = st.lists(st.integers(-3, 3) | st.none(), min_size=n, max_size=n)
    events = pd.DataFrame({
        "k": pd.Series(draw(st.lists(st.sampled_from("abc"), min_size=n, max_size=n)),
                       dtype=object),
        TIME: (np.cumsum(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)) or [0])[:n]
               + np.asarray(draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n)),
                            dtype="int64")) * 1000,
        SEQ: np.arange(n, dtype="int64"),
        # quarters: sums of these and of their squares are exact in float64
        "v": pd.Series([np.nan if x is None else x / 4 for x in draw(
            st.lists(st.integers(-40, 40) | st.none(), min_size=n, max_size=n))],
            dtype="float64"),
        "w": pd.Series(draw(ints), dtype="Int64"),
        "s": pd.Series(draw(st.lists(st.sampled_from(["x", "y", "z", "zz"]) | st.none(),
                                     min_size=n, max_size=n)), dtype=object),
    })
    if kind == "count":
        size = draw(st.integers(1, 5))
        slide = draw(st.integers(1, size))
    else:
        size = draw(st.sampled_from([1000, 3000, 5000, 6000]))
        slide = (draw(st.sampled_from([s for s in (1000, 2000, 3000, 4000) if s <= size]))
                 if kind == "sliding" else 0)
    spec = WindowSpec(key="k", lateness_us=draw(st.sampled_from([0, 2000, 4000, 100_000])),
                      aggregates=ALL_AGGS, value_types=TYPES, key_type="string", kind=kind,
                      udafs=(RMS,), emit=emit, **shape(kind, size, slide))
    plans = [sorted(draw(st.lists(st.integers(0, n), max_size=8))) for _ in range(2)]
    return events, spec, plans


def run_numbered(op: KeyedOperator, batches: list[pd.DataFrame]) -> pd.DataFrame:
    """Output of ``op`` over ``batches`` with the runner's ``batch`` column (the flush is batch
    ``len(batches)``)."""
    state, outputs = op.init(), []
    for i, batch in enumerate(batches):
        result = op.step(state, batch)
        state = result.state
        outputs.append(result.output.assign(batch=i))
    outputs.append(op.finish(state).assign(batch=len(batches)))
    return pd.concat([o for o in outputs if not o.empty] or outputs[-1:], ignore_index=True)


def same_value(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray | list) or isinstance(b, np.ndarray | list):  # list columns
        return len(a) == len(b) and all(map(same_value, a, b))  # type: ignore[arg-type]
    if a is None or (isinstance(a, float) and math.isnan(a)) or a is pd.NA:
        return b is None or (isinstance(b, float) and math.isnan(b)) or b is pd.NA
    if b is None or (isinstance(b, float) and math.isnan(b)) or b is pd.NA:
        return False
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=REL_TOL)


def assert_same_rows(got: pd.DataFrame, want: pd.DataFrame, keys: list[str]) -> None:
    """Same rows by ``keys`` (each at most once); values equal within the tolerance."""
    def by_key(frame: pd.DataFrame) -> dict[tuple, dict]:
        rows = frame[list(want.columns)].astype(object).to_dict("records")
        keyed = {tuple(r[k] for k in keys): r for r in rows}
        assert len(keyed) == len(rows), "duplicate output rows"
        return keyed

    got_rows, want_rows = by_key(got), by_key(want)
    assert sorted(got_rows, key=str) == sorted(want_rows, key=str)
    for k, row in want_rows.items():
        bad = [c for c in want.columns if not same_value(got_rows[k][c], row[c])]
        assert not bad, (k, {c: (got_rows[k][c], row[c]) for c in bad})


def reference_frame(rows: list[dict], op: KeyedOperator, extra: tuple[str, ...] = ()
                    ) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=[*op.output_schema.names, *extra])


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_aggregate_equals_the_reference_under_any_batch_plan(kind, data):
    events, spec, (plan_a, plan_b) = data.draw(typed_streams(kind))
    op = operator(spec)
    rows, late = window_reference(events, spec)
    for plan in (plan_a, plan_b):
        out, late_out, _, _ = run_batches(op, split(events, plan))
        assert_same_rows(out, reference_frame(rows, op), op.output_keys)
        assert sorted(late_out[SEQ].tolist()) == late  # counted, never silently dropped


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_updates_mode_emits_the_reference_rows_of_every_prefix(kind, data):
    """Early rows are the reference aggregates of the prefix up to their batch; final rows are
    the close-mode output, each emitted once, in the batch where its window closes."""
    events, spec, (plan, _) = data.draw(typed_streams(kind, emit="updates"))
    op = operator(spec)
    out = run_numbered(op, split(events, plan))
    rows, _ = window_updates_reference(events, spec, [0, *plan, len(events)])
    assert_same_rows(out, reference_frame(rows, op, ("batch",)), op.output_keys)
    close = operator(replace(spec, emit="close"))
    closed, _, _, _ = run_batches(close, split(events, plan))
    finals = out[out["final"].astype(bool)].drop(columns=["final", "batch"])
    assert_same_rows(finals, closed, close.output_keys)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_state_at_a_shared_cut_agrees_and_survives_the_codec(kind, data):
    events, spec, (plan_a, plan_b) = data.draw(typed_streams(kind, emit=data.draw(
        st.sampled_from(["close", "updates"]))))
    op = operator(spec)
    shared = len(events) // 2
    states = []
    for plan in (plan_a, plan_b):
        state = op.init()
        for batch in split(events.iloc[:shared], [c for c in plan if c <= shared]):
            state = op.step(state, batch).state
        states.append(op.state_codec.canon(state))
    assert_same_rows(states[0], states[1], op.state_codec.sort_by)
    restored = op.state_codec.decode(op.state_codec.encode(states[0]))
    rest = events.iloc[shared:]
    keys = [k for k in op.output_keys if k != "batch"]
    assert_same_rows(op.step(restored, rest).output, op.step(states[0], rest).output, keys)
    assert_same_rows(op.finish(restored), op.finish(states[0]), keys)


def long_replay(keys: int = 3, events: int = 6000, seed: int = 7) -> pd.DataFrame:
    """A vitals-like stream: a reading per key every ~1 s, 5 % up to 8 s late, some nulls."""
    rng = np.random.default_rng(seed)
    key = rng.integers(0, keys, events)
    t = np.arange(events, dtype="int64") * 1_000_000 // keys
    t = t - np.where(rng.random(events) < 0.05, rng.integers(0, 8_000_000, events), 0)
    hr = rng.normal(80, 10, events).round(1)
    return pd.DataFrame({"k": pd.Series([f"p{i}" for i in key], dtype=object), TIME: t,
                         SEQ: np.arange(events, dtype="int64"),
                         "v": np.where(rng.random(events) < 0.05, np.nan, hr),
                         "w": pd.Series(rng.integers(0, 30, events), dtype="Int64"),
                         "s": pd.Series([f"u{i}" for i in rng.integers(0, 50, events)],
                                        dtype=object)})


BOUND_AGGS = (A("median_v", "median", "v", p=0.5), A("distinct_s", "count_distinct", "s"),
              A("approx_s", "approx_count_distinct", "s"), A("first_v", "first", "v"),
              A("rms_v", "rms", "v"), A("sd", "stddev", "v"), A("mean", "avg", "v"))


@pytest.mark.parametrize("kind", KINDS)
def test_state_stays_within_its_declared_bound_over_a_long_replay(kind):
    """Per key: tumbling keeps at most lateness/size + 2 windows, sliding at most
    (size + slide + lateness)/slice + 1 slices, sessions at most lateness/gap + 2 sessions,
    count windows at most size - 1 released events. Holistic slices hold exactly their own
    events' values (sorted), sketches at most one entry per register."""
    lateness = 5_000_000
    size, slide = {"tumbling": (10_000_000, 0), "sliding": (30_000_000, 20_000_000),
                   "session": (2_000_000, 0), "count": (20, 5)}[kind]
    spec = WindowSpec(key="k", lateness_us=lateness, aggregates=BOUND_AGGS, value_types=TYPES,
                      key_type="string", kind=kind, udafs=(RMS,), **shape(kind, size, slide))
    op = operator(spec)
    events = long_replay()
    state, on_time, late = op.init(), [], 0
    for batch in split(events, list(range(60, len(events), 60))):
        result = op.step(state, batch)
        state, late = result.state, late + len(result.late)
        on_time.append(batch[~batch[SEQ].isin(result.late[SEQ])])
        if kind == "count":
            tails = state[state["role"] == 1].groupby("k").size()
            assert tails.max() <= size - 1
            continue
        slices = state[state["window_start"] != np.iinfo(np.int64).min]
        per_key = slices.groupby("k").size()
        if kind == "sliding":
            assert per_key.max() <= (size + slide + lateness) // op.slice_us + 1
        else:  # tumbling windows, sessions (size is the gap)
            assert per_key.max() <= lateness // size + 2
        if kind == "session":
            continue
        seen = pd.concat(on_time)
        width = op.slice_us
        for row in slices.itertuples(index=False):
            mine = seen[(seen["k"] == row.k) & (seen[TIME] >= row.window_start)
                        & (seen[TIME] < row.window_start + width)]
            assert list(row.vals_v) == sorted(mine["v"].dropna())
            assert list(row.vals_s) == sorted(mine["s"])
            registers = np.asarray(row.hll_s) >> 6
            assert (np.diff(registers) > 0).all()
    assert late > 0  # the replay does exercise late events


# -- where (before the operator) and having (after it) -------------------------------------------

INTS = st.integers(-60, 60).map(str)
WHERE = conditions_over({"v": INTS, "k": st.sampled_from(["'a'", "'b'", "'c'", "'e'"])})
HAVING = conditions_over({"n": st.integers(0, 6).map(str), "s": INTS, "lo": INTS, "hi": INTS,
                          "avg": st.integers(-80, 80).map(lambda i: str(i / 4))})


@settings(max_examples=100, deadline=None, derandomize=True)
@given(streams(), st.none() | WHERE, st.none() | HAVING, st.sampled_from(["close", "updates"]))
def test_where_and_having_keep_the_engine_equal_to_the_reference(case, where, having, emit):
    """Events failing ``where`` never reach the operator (they are neither late nor move a
    watermark); rows failing ``having`` are not emitted; the reference tests both one row at a
    time, the engine vectorised."""
    events, spec, (plan, _) = case
    spec = replace(spec, emit=emit, having=having and parse_predicate(having, {
        "n": "int", "n_v": "int", "s": "int", "lo": "int", "hi": "int", "avg": "double"}))
    op = window_operator(spec, "w")
    kept = events
    if where is not None:
        predicate = parse_predicate(where, {"k": "string", "v": "int"})
        op = FilteredOperator(op, predicate)
        kept = events[[predicate.evaluate_row(r) is True for r in events.to_dict("records")]]
    state, outputs, late = op.init(), [], []
    batches = split(events, plan)
    for i, batch in enumerate(batches):
        result = op.step(state, batch)
        state = result.state
        outputs.append(result.output.assign(batch=i))
        late += result.late[SEQ].tolist()
    outputs.append(op.finish(state).assign(batch=len(batches)))
    out = pd.concat([o for o in outputs if not o.empty] or outputs[-1:], ignore_index=True)
    if emit == "updates":
        rows, ref_late = window_updates_reference(kept, spec, [0, *plan, len(events)])
        assert_same_rows(out, reference_frame(rows, op, ("batch",)), op.output_keys)
    else:
        rows, ref_late = window_reference(kept, spec)
        assert_same_rows(out.drop(columns=["batch"]), reference_frame(rows, op),
                         op.output_keys)
    assert sorted(late) == ref_late
