"""Derived columns in the workers (engine.derive): the values do not depend on the batch split;
``round`` is HALF_UP on the double's shortest decimal text."""

from __future__ import annotations

import itertools
from decimal import ROUND_HALF_UP, Context, Decimal

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.derive import compile_derived
from engine.derive_values import Values, spark_round

COLUMNS = {"k": "string", "v": "int", "p": "double"}
OVER = "over (partition by k order by __seq)"
DERIVED = {
    "d1": (f"v - lag(v) {OVER}", "int"),
    "d2": (f"lag(p, 2, 0.5e0) {OVER}", "double"),
    "d3": (f"sum(v) {OVER} + count(*) {OVER}", "int"),
    "d4": (f"avg(p) {OVER}", "double"),
    "d5": (f"coalesce(min(p) {OVER}, max(p) {OVER}, first_value(p) {OVER})", "double"),
    "d6": (f"case when d1 > 0 then sum(d1) {OVER} else lag(d3, 1, -1) {OVER} end", "int"),
}
PROGRAM = compile_derived(DERIVED, COLUMNS, "k")

rows = st.lists(st.tuples(st.sampled_from(["a", "b", "c", None]),
                          st.one_of(st.none(), st.integers(-1000, 1000)),
                          st.one_of(st.none(), st.floats(-100, 100, allow_nan=False))),
                min_size=1, max_size=60)


def frame(data: list[tuple]) -> pd.DataFrame:
    keys, v, p = zip(*data, strict=True)
    return pd.DataFrame({"k": pd.Series(keys, dtype=object),
                         "v": pd.array(v, dtype="Int64"),
                         "p": np.array([np.nan if x is None else x for x in p], dtype="float64"),
                         "__seq": np.arange(len(data), dtype="int64")})


def run(events: pd.DataFrame, cuts: list[int]) -> pd.DataFrame:
    state, parts = PROGRAM.init(), []
    bounds = [0, *sorted(c % (len(events) + 1) for c in cuts), len(events)]
    for a, b in itertools.pairwise(bounds):
        derived, state = PROGRAM.step(state, events.iloc[a:b])
        parts.append(pd.DataFrame(derived, index=events.index[a:b]))
    return pd.concat(parts)


def as_rows(result: pd.DataFrame) -> list[tuple]:
    return [tuple(None if pd.isna(x) else x for x in row)
            for row in result.astype(object).itertuples(index=False)]


@settings(max_examples=30, deadline=None, derandomize=True)
@given(rows, st.lists(st.integers(0, 60), max_size=6))
def test_values_do_not_depend_on_the_batch_split(data, cuts):
    events = frame(data)
    assert as_rows(run(events, cuts)) == as_rows(run(events, []))


@settings(max_examples=20, deadline=None, derandomize=True)
@given(rows)
def test_each_key_alone_gives_its_rows_values(data):
    """A keyed step: the values of a key's rows do not depend on the other keys' rows."""
    events = frame(data)
    whole = run(events, [])
    for key in ["a", "b", "c", None]:
        mine = events["k"].isna() if key is None else events["k"] == key
        if mine.any():
            assert as_rows(run(events[mine], [])) == as_rows(whole[mine])


numbers = st.one_of(st.floats(), st.integers(-10**7, 10**7).map(lambda i: i / 1000),
                    st.integers(-10**6, 10**6).map(lambda i: i / 200))  # halves at many scales


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(numbers, min_size=1, max_size=20), st.integers(0, 6))
def test_round_is_half_up_on_the_shortest_decimal_text(values, scale):
    got = spark_round(Values(np.array(values), np.ones(len(values), bool), "double"), scale)
    quantum = Decimal(1).scaleb(-scale)
    for value, rounded in zip(values, got.data.tolist(), strict=True):
        expected = value if not np.isfinite(value) else float(Decimal(repr(value)).quantize(
            quantum, ROUND_HALF_UP, Context(prec=800))) + 0.0
        assert np.array(rounded).tobytes() == np.array(expected).tobytes() or (
            np.isnan(rounded) and np.isnan(expected)), (value, scale)
