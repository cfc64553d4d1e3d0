"""Value columns of a batch of events as the partial aggregates read them: int columns as
exact int64 with a presence mask, numbers as float64 (NaN for null), strings as object (None for
null), and the state types they are kept in."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

NUMERIC = ("int", "double")


def column_values(events: pd.DataFrame, column: str, typ: str) -> np.ndarray:
    """A value column as float64 (NaN for null) or, for strings, object (None for null); for
    the exact int64 values of an int column see :func:`int_values`.

    Columns of other types are only counted: they become 1.0 (present) or NaN (null)."""
    values = events[column]
    if typ in NUMERIC:
        return values.to_numpy(dtype="float64", na_value=np.nan)
    missing = values.isna().to_numpy()
    if typ == "string":
        out = values.to_numpy(dtype=object, copy=True)
        out[missing] = None
        return out
    return np.where(missing, np.nan, 1.0)


def int_values(events: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """An int column as (int64 values, 0 for null; whether each is present), exact whatever
    dtype pandas holds it in (Int64, int64, object; float64 is exact only below 2^53)."""
    values = events[column]
    return values.to_numpy(dtype="int64", na_value=0), values.notna().to_numpy()


def typed_values(events: pd.DataFrame, column: str, typ: str) -> tuple[np.ndarray, np.ndarray]:
    """(values of the column's own type: int64 for int columns (0 for null), else as
    :func:`column_values`; whether each is present)."""
    if typ == "int":
        return int_values(events, column)
    values = column_values(events, column, typ)
    return values, valid(values)


def raw_values(events: pd.DataFrame, column: str, typ: str
               ) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """A value column as it is buffered in a state: nullable Int64 for int columns, else as
    :func:`column_values`."""
    if typ == "int":
        values, present = int_values(events, column)
        return pd.arrays.IntegerArray(values, ~present)
    return column_values(events, column, typ)


def valid(values: np.ndarray) -> np.ndarray:
    return pd.notna(values) if values.dtype == object else ~np.isnan(values)


def arrow_type(typ: str) -> pa.DataType:
    """State type of a value of recording type ``typ`` (see :func:`typed_values`)."""
    return {"string": pa.string(), "int": pa.int64()}.get(typ, pa.float64())
