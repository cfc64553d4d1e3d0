"""Evaluating a predicate form: vectorised over a pandas frame, and naively row at a time.

NULL is ``None``, ``NaN``, ``NaT`` or ``pd.NA``. Timestamp columns may hold datetimes (any unit
or time zone; naive means UTC) or integer microseconds; they are compared in microseconds.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from . import values as V
from .form import FALSE, TRUE, And, Const, InSet, IsNull, Or, Pred


def _nulls(series: pd.Series) -> np.ndarray:
    return series.isna().to_numpy(dtype=bool)


def _comparable(series: pd.Series, ctype: str, null: np.ndarray) -> np.ndarray:
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


def _in_set_mask(values: np.ndarray, null: np.ndarray, atom: InSet) -> np.ndarray:
    mask = np.zeros(len(values), dtype=bool)
    for iv in atom.values:
        part = ~null
        if iv.lo is not None:
            part &= np.asarray((values >= iv.lo) if iv.lo_closed else (values > iv.lo), bool)
        if iv.hi is not None:
            part &= np.asarray((values <= iv.hi) if iv.hi_closed else (values < iv.hi), bool)
        mask |= part
    return mask


def evaluate(pred: Pred, frame: pd.DataFrame) -> np.ndarray:
    """The numpy bool mask of the rows of ``frame`` for which ``pred`` is TRUE."""
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def column(name: str, ctype: str) -> tuple[np.ndarray, np.ndarray]:
        if name not in cache:
            series = frame[name]
            null = _nulls(series)
            cache[name] = (_comparable(series, ctype, null), null)
        return cache[name]

    def walk(p: Pred) -> np.ndarray:
        if isinstance(p, Const):
            return np.full(len(frame), p.value, dtype=bool)
        if isinstance(p, IsNull):
            return column(p.column, p.ctype)[1].copy()
        if isinstance(p, InSet):
            return _in_set_mask(*column(p.column, p.ctype), p)
        parts = [walk(o) for o in p.operands]  # type: ignore[attr-defined]
        reduce = np.logical_and if isinstance(p, And) else np.logical_or
        return reduce.reduce(parts) if parts else walk(TRUE if isinstance(p, And) else FALSE)

    return walk(pred)


_EPOCH = pd.Timestamp(0, tz="UTC")


def _row_value(value: Any, ctype: str) -> Any:
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


def evaluate_row(pred: Pred, row: dict[str, Any]) -> bool | None:
    """Three-valued (Kleene) value of ``pred`` on one row: a value-set atom on NULL is UNKNOWN
    (None), ``IS NULL`` is never UNKNOWN."""
    if isinstance(pred, Const):
        return pred.value
    if isinstance(pred, IsNull):
        return _row_value(row[pred.column], pred.ctype) is None
    if isinstance(pred, InSet):
        value = _row_value(row[pred.column], pred.ctype)
        return None if value is None else V.contains(pred.values, value)
    results = [evaluate_row(o, row) for o in pred.operands]  # type: ignore[attr-defined]
    decisive = isinstance(pred, Or)  # True decides an OR, False decides an AND
    if decisive in results:
        return decisive
    return None if None in results else not decisive
