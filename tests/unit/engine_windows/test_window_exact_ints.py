"""Int columns stay exact in window aggregates (issue 14 §1): sums, first/last, count_distinct
and argmin/argmax over values above 2^53, a partial sum kept in state, int sums outside the
int64 range (an error naming the window), and the validator's exact int comparison."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pyarrow as pa
import pytest

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
from engine.windows.base import WindowOverflowError
from jobs.runs.validate import diff_frames

BIG = 2**53  # 9007199254740992: float64 stops holding every integer here
A = Aggregate
AGGS = (A("total", "sum", "volume"), A("first_v", "first", "volume"),
        A("last_v", "last", "volume"), A("distinct", "count_distinct", "volume"),
        A("top", "argmax", "volume", by="volume"), A("bottom", "argmin", "volume", by="volume"))
SHAPES = {"tumbling": {"size_us": 100}, "sliding": {"size_us": 100, "slide_us": 50},
          "session": {"gap_us": 100}, "count": {"size_events": 3, "every_events": 3}}
OPERATORS = {"tumbling": TumblingWindow, "sliding": SlidingWindow, "session": SessionWindow,
             "count": CountWindow}


def spec(kind: str, aggregates: tuple[Aggregate, ...] = AGGS, **types: str) -> WindowSpec:
    return WindowSpec(key="k", lateness_us=0, aggregates=aggregates,
                      value_types=types or {"volume": "int"}, key_type="string", kind=kind,
                      **SHAPES[kind])


def frame(keys: list[str], times: list[int], first_seq: int = 0, **columns: list) -> pd.DataFrame:
    n = len(keys)
    return pd.DataFrame({"k": keys, TIME: times, SEQ: range(first_seq, first_seq + n),
                         **{c: pd.Series(v, dtype="Int64") for c, v in columns.items()}})


def window_of(out: pd.DataFrame, key: str = "a") -> dict:
    rows = out[out["k"] == key]
    rows = rows[rows["window_start"] == rows["window_start"].min()]
    assert len(rows) == 1
    return rows.iloc[0].to_dict()


@pytest.mark.parametrize("kind", list(SHAPES))
def test_values_above_2_53_are_aggregated_exactly(kind):
    events = frame(["a"] * 3, [10, 20, 30], volume=[BIG + 1, BIG, 1])
    op = OPERATORS[kind](spec(kind))
    out, _, _, _ = run_batches(op, [events.iloc[:1], events.iloc[1:]])
    row = window_of(out)
    # by hand: (2^53 + 1) + 2^53 + 1 = 2^54 + 2; first is 2^53 + 1; three distinct values
    assert row["total"] == 18014398509481986
    assert row["first_v"] == 9007199254740993 and row["last_v"] == 1
    assert row["distinct"] == 3
    assert row["top"] == 9007199254740993 and row["bottom"] == 1
    ref_rows, _ = window_reference(events, op.spec)
    assert {k: ref_rows[0][k] for k in ("total", "first_v", "distinct", "top")} == {
        "total": 18014398509481986, "first_v": 9007199254740993, "distinct": 3,
        "top": 9007199254740993}


@pytest.mark.parametrize("kind", list(SHAPES))
def test_argmax_tells_apart_by_values_that_differ_above_2_53(kind):
    # as float64 every ``up`` and ``down`` value is 2^53: a tie, won by the earliest event (x=1)
    aggs = (A("at_max", "argmax", "x", by="up"), A("at_min", "argmin", "x", by="down"))
    events = frame(["a"] * 3, [10, 20, 30], x=[1, 2, 3], up=[BIG, BIG + 1, BIG],
                   down=[BIG + 1, BIG + 1, BIG])
    op = OPERATORS[kind](spec(kind, aggs, x="int", up="int", down="int"))
    row = window_of(run_batches(op, [events])[0])
    assert row["at_max"] == 2 and row["at_min"] == 3


def test_a_partial_sum_in_state_stays_exact_when_other_keys_have_no_values():
    op = TumblingWindow(spec("tumbling", (A("total", "sum", "volume"),)))
    first = op.step(op.init(), frame(["a"] * 3, [1, 2, 3], volume=[
        4503599627370497, 4503599627370499, 4503599627370501]))
    state = op.state_codec.decode(op.state_codec.encode(first.state))
    second = op.step(state, frame(["b", "c", "d", "e"], [1, 2, 3, 4], first_seq=3,
                                  volume=[None] * 4))
    out = op.finish(second.state)
    totals = dict(zip(out["k"], out["total"].astype(object), strict=True))
    assert totals["a"] == 13510798882111497  # 3 * 4503599627370499
    assert all(totals[k] is pd.NA for k in "bcde")


def test_count_window_buffers_int_values_exactly_through_the_state_codec():
    aggs = (A("first_v", "first", "volume"), A("total", "sum", "volume"))
    op = CountWindow(replace(spec("count", aggs), lateness_us=100))  # held until the end
    events = frame(["a"] * 3, [10, 20, 30], volume=[BIG + 1, None, BIG + 3])
    state = op.init()
    for i in range(3):
        state = op.state_codec.decode(op.state_codec.encode(op.step(state, events.iloc[i:i + 1])
                                                            .state))
    row = window_of(op.finish(state))
    assert row["first_v"] == BIG + 1 and row["total"] == 2 * BIG + 4


@pytest.mark.parametrize("kind", list(SHAPES))
def test_an_int_sum_outside_the_int64_range_is_an_error_naming_the_window(kind):
    top = 2**63 - 1
    op = OPERATORS[kind](spec(kind, (A("total", "sum", "volume"),)))
    events = frame(["a"] * 3, [10, 20, 30], volume=[top, 1, top])
    with pytest.raises(WindowOverflowError, match=r"total.*key 'a'.*outside the int64 range"):
        run_batches(op, [events.iloc[:2], events.iloc[2:]])
    with pytest.raises(WindowOverflowError, match="total"):
        window_reference(events, op.spec)


@pytest.mark.parametrize("kind", list(SHAPES))
def test_an_int_sum_that_passes_the_int64_range_on_the_way_is_exact(kind):
    top = 2**63 - 1
    op = OPERATORS[kind](spec(kind, (A("total", "sum", "volume"),)))
    events = frame(["a"] * 3, [10, 20, 30], volume=[top, top, -top])
    row = window_of(run_batches(op, [events.iloc[:2], events.iloc[2:]])[0])
    assert row["total"] == top


def test_the_validator_compares_int_columns_exactly_whatever_their_dtype():
    schema = pa.schema([("k", pa.string()), ("total", pa.int64()), ("mean", pa.float64())])
    reference = pd.DataFrame({"k": ["a", "b"], "total": [18014398509481986, None],
                              "mean": [1.0, 2.0]}, dtype=object)
    as_float = pd.DataFrame({"k": ["a", "b"], "total": [1.8014398509481984e16, float("nan")],
                             "mean": [1.0, 2.0 + 1e-12]})
    off_by_one = as_float.assign(total=pd.array([18014398509481985, None], dtype="Int64"))
    exact = as_float.assign(total=pd.Series([18014398509481986, None], dtype=object))
    assert len(diff_frames(as_float, reference, ["k"], schema).different) == 1
    assert len(diff_frames(off_by_one, reference, ["k"], schema).different) == 1
    assert diff_frames(exact, reference, ["k"], schema).ok
    assert diff_frames(exact.assign(total=pd.array([18014398509481986, None], dtype="Int64")),
                       reference, ["k"], schema).ok
