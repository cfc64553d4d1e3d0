"""Int columns are exact in every window kind (issue 14 §1): operator and reference agree with
Python int equality on every int aggregate for values anywhere in int64, and an int sum outside
the int64 range raises WindowOverflowError in both."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from window_cases import KINDS, operator, shape, split

from engine.operator import SEQ, TIME, run_batches
from engine.windows import Aggregate, WindowSpec, window_reference
from engine.windows.base import WindowOverflowError

A = Aggregate

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
EXACT_AGGS = (A("n_x", "count", "x"), A("total", "sum", "x"), A("first_x", "first", "x"),
              A("last_x", "last", "x"), A("x_at_min_y", "argmin", "x", by="y"),
              A("x_at_max_y", "argmax", "x", by="y"), A("distinct_x", "count_distinct", "x"))


@st.composite
def int_streams(draw, kind: str):
    """Int values anywhere in int64 (a bound per example: small, around 2^53, up to 2^61 so
    that sums of a few stay in range, or the whole range so that they often leave it), ``by``
    values that are often equal as float64, nulls (key z has only nulls) in random batches."""
    n = draw(st.integers(0, 24))
    bound = draw(st.sampled_from([2**10, 2**54, 2**61, 2**63]))
    values = st.integers(-bound, bound - 1) | st.sampled_from([INT64_MIN, INT64_MAX, 2**53 + 1])
    keys = draw(st.lists(st.sampled_from("abz"), min_size=n, max_size=n))
    xs = [None if k == "z" else x for k, x in zip(keys, draw(
        st.lists(values | st.none(), min_size=n, max_size=n)), strict=True)]
    ys = draw(st.lists(st.integers(2**53 - 2, 2**53 + 2) | st.integers(INT64_MIN, INT64_MAX)
                       | st.none(), min_size=n, max_size=n))
    events = pd.DataFrame({
        "k": pd.Series(keys, dtype=object),
        TIME: (np.cumsum(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)) or [0])[:n]
               + np.asarray(draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)),
                            dtype="int64")) * 1000,
        SEQ: np.arange(n, dtype="int64"),
        "x": pd.Series(xs, dtype="Int64"), "y": pd.Series(ys, dtype="Int64")})
    size = draw(st.integers(1, 4)) if kind == "count" else draw(st.sampled_from([3000, 6000]))
    slide = draw(st.integers(1, size)) if kind == "count" else 3000 if kind == "sliding" else 0
    spec = WindowSpec(key="k", lateness_us=draw(st.sampled_from([0, 3000])),
                      aggregates=EXACT_AGGS, value_types={"x": "int", "y": "int"},
                      key_type="string", kind=kind, **shape(kind, size, slide))
    return events, spec, sorted(draw(st.lists(st.integers(0, n), max_size=6)))


def plain(value: object) -> object:
    """A value as a plain Python object, every kind of null as None."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_int_aggregates_equal_the_reference_exactly_over_the_whole_int64_range(kind, data):
    """Operator and reference agree exactly (Python int equality, no tolerance) on every int
    aggregate, through the state codec at every batch; when an int sum leaves the int64 range,
    both raise WindowOverflowError."""
    events, spec, plan = data.draw(int_streams(kind))
    op = operator(spec)
    try:
        rows, _ = window_reference(events, spec)
    except WindowOverflowError:
        with pytest.raises(WindowOverflowError):
            run_batches(op, split(events, plan))
        return
    state, outputs = op.init(), []
    for batch in split(events, plan):
        result = op.step(state, batch)
        state = op.state_codec.decode(op.state_codec.encode(result.state))
        outputs.append(result.output)
    outputs.append(op.finish(state))
    out = pd.concat([o for o in outputs if not o.empty] or outputs[-1:], ignore_index=True)
    columns = list(op.output_schema.names)
    got = sorted((tuple(plain(v) for v in row) for row in out[columns].astype(object).values),
                 key=repr)
    want = sorted((tuple(plain(r[c]) for c in columns) for r in rows), key=repr)
    assert got == want
