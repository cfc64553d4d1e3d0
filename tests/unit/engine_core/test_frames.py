"""Rows taken column by column are the rows pandas takes."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from engine.frames import rows_at


def _frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(n)
    ints = rng.integers(-5, 5, n)
    return pd.DataFrame({
        "k": pd.Categorical(rng.choice(["b", "a", None], n), categories=["a", "b", "zz"]),
        "t": pd.to_datetime(rng.integers(0, 10**15, n), unit="us", utc=True),
        "i": ints,
        "n": pd.array(np.where(ints > 2, None, ints), dtype="Int64"),
        "f": np.where(ints < -3, np.nan, ints / 3),
        "s": np.array([None if i == 0 else f"v{i}" for i in ints], dtype=object),
    }, copy=False, index=pd.RangeIndex(100, 100 + 2 * n, 2))


@given(st.integers(0, 40), st.data())
def test_rows_at_equals_pandas_row_selection(n, data):
    frame = _frame(n)
    rows = np.array(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=3 * n)),
                    dtype="int64") if n else np.zeros(0, "int64")
    pd.testing.assert_frame_equal(rows_at(frame, rows), frame.iloc[rows])
    pd.testing.assert_frame_equal(rows_at(frame, rows, keep_index=False),
                                  frame.iloc[rows].reset_index(drop=True))
