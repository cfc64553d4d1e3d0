"""The cells a predicate compares: a frame's column as a numpy array with its nulls, one row's
cell as a plain value, and the mask of a value set over a column.

NULL is ``None``, ``NaN``, ``NaT`` or ``pd.NA``. Timestamp columns may hold datetimes (any unit
or time zone; naive means UTC) or integer microseconds; they are compared in microseconds.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from .values import ValueSet


def nulls(series: pd.Series) -> np.ndarray:
    """Where ``series`` is NULL."""
    return series.isna().to_numpy(dtype=bool)


def comparable(series: pd.Series, ctype: str, null: np.ndarray) -> np.ndarray:
    """The column's values as a numpy array the value set's bounds compare with (any value
    where ``null``)."""
    if ctype == "timestamp" and not pd.api.types.is_integer_dtype(series.dtype):
        stamps = pd.to_datetime(series, utc=True)
        return stamps.dt.as_unit("us").astype("int64", copy=False).to_numpy() \
            if not null.any() else \
            stamps.fillna(pd.Timestamp(0, tz="UTC")).dt.as_unit("us").astype("int64").to_numpy()
    if ctype in ("int", "timestamp"):
        return series.to_numpy(dtype="int64", na_value=0) if null.any() \
            else series.to_numpy(dtype="int64")
    if ctype == "double":
        return series.to_numpy(dtype="float64", na_value=np.nan)
    if ctype == "bool":
        return series.to_numpy(dtype=bool, na_value=False) if null.any() \
            else series.to_numpy(dtype=bool)
    return series.to_numpy(dtype=object, na_value="")


def in_set_mask(values: np.ndarray, null: np.ndarray, value_set: ValueSet) -> np.ndarray:
    """Where ``values`` is not null and lies in ``value_set``."""
    mask = np.zeros(len(values), dtype=bool)
    for iv in value_set:
        part = ~null
        if iv.lo is not None:
            part &= np.asarray((values >= iv.lo) if iv.lo_closed else (values > iv.lo), bool)
        if iv.hi is not None:
            part &= np.asarray((values <= iv.hi) if iv.hi_closed else (values < iv.hi), bool)
        mask |= part
    return mask


_EPOCH = pd.Timestamp(0, tz="UTC")


def row_value(value: Any, ctype: str) -> Any:
    """A cell as the value set's bounds compare with; None for NULL."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if ctype == "timestamp" and isinstance(value, (datetime, np.datetime64)):
        stamp = pd.Timestamp(value)
        stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp
        return (stamp - _EPOCH) // pd.Timedelta(microseconds=1)
    if ctype in ("int", "timestamp"):
        return int(value)
    if ctype == "double":
        return float(value)
    if ctype == "bool":
        return bool(value)
    return value
