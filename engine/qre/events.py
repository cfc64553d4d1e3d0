"""Events of a ``kind: qre`` query as columns, and the format of the events a key buffers.

A batch's events are read into :class:`Events`: key number, event time, arrival sequence and,
per field the query reads (sorted by name), a kind byte and an 8-byte payload: an int64, the
bits of a float64, a bool as 0 or 1, or, for any other value, its index in ``others``. A value
is stored as it was read through JSON (``default=str``), so buffering never changes the item.

Buffered events (``pending`` in the operator's state) are :class:`PendingBuffer` records in
(event time, arrival) order: fixed-size little-endian records of the event time, the arrival
sequence and each field's kind and payload, with the key's ``OTHER`` values in
``pending_values`` (a JSON list, null when there are none).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..ordering import order_by_code
from .query_spec import QreSpec

#: Kinds of a buffered value (how its payload is read).
INT, FLOAT, BOOL, OTHER = 0, 1, 2, 3
_INT64 = range(-(2**63), 2**63)


def missing_reason(missing: list[str]) -> str:
    """Why an event lacking the fields ``missing`` is rejected."""
    return "the query reads " + ", ".join(f"{f!r}" for f in missing) + " but the event has " + (
        "no value for it" if len(missing) == 1 else "no values for them")


def rejection(fields: frozenset[str], item: dict) -> str | None:
    """Why the query cannot read ``item`` (a field it reads is missing or null), else None."""
    missing = sorted(f for f in fields if item.get(f) is None)
    return missing_reason(missing) if missing else None


def field_values(events: pd.DataFrame, col: str, spec: QreSpec) -> pd.Series:
    """A field's values as the query reads them (timestamps as microseconds, NaT as NaN)."""
    values = events[col]
    if col in spec.timestamp_columns and pd.api.types.is_datetime64_any_dtype(values):
        values = pd.to_datetime(values, utc=True).dt.as_unit("us").astype("int64")
        values = values.where(events[col].notna())
    elif col in spec.int_columns and values.dtype.kind == "f":
        values = values.astype("Int64")  # a null in the batch made the column float
    return values


def items_of(events: pd.DataFrame, spec: QreSpec) -> list[dict]:
    """Events as plain-Python dicts (JSON-able; NaN and NaT become None)."""
    columns = {col: [None if pd.isna(v) else v for v in field_values(events, col, spec).tolist()]
               for col in spec.fields if col in events}
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)] \
        if columns else [{} for _ in range(len(events))]


def classify(values: pd.Series, others: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Kinds and payloads of a column's values (appending values of kind ``OTHER`` to
    ``others``); numpy int, float and bool columns without a per-value look."""
    n = len(values)
    if isinstance(values.dtype, pd.Int64Dtype):  # nulls are marked missing by the caller
        return np.full(n, INT, np.int8), values.fillna(0).to_numpy(dtype=np.int64)
    dtype = values.dtype.kind if isinstance(values.dtype, np.dtype) else "O"
    if dtype in "bif" or (dtype == "u" and (n == 0 or values.max() < 2**63)):
        code = {"b": BOOL, "f": FLOAT}.get(dtype, INT)
        array = values.to_numpy()
        payload = (array.astype(np.float64).view(np.int64) if code == FLOAT
                   else array.astype(np.int64))
        return np.full(n, code, np.int8), payload
    kinds, payload = np.full(n, OTHER, np.int8), np.zeros(n, np.int64)
    floats = np.zeros(n, np.float64)
    for i, value in enumerate(values.tolist()):
        if value is None or pd.isna(value):
            continue  # rejected
        if type(value) not in (int, float, bool, str):  # those read back as they are
            value = json.loads(json.dumps(value, sort_keys=True, default=str))
        if type(value) is bool:
            kinds[i], payload[i] = BOOL, value
        elif type(value) is int and value in _INT64:
            kinds[i], payload[i] = INT, value
        elif type(value) is float:
            kinds[i], floats[i] = FLOAT, value
        else:
            payload[i] = len(others)
            others.append(value)
    is_float = kinds == FLOAT
    payload[is_float] = floats[is_float].view(np.int64)
    return kinds, payload


def key_order(keys: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The order of rows by (key, arrival), keys ordered as ``DataFrame.sort_values`` does."""
    code, _ = pd.factorize(keys, sort=True, use_na_sentinel=False)
    return order_by_code(code.astype(np.int64), seq)


def objects(values: list[Any]) -> np.ndarray:
    """``values`` as an object array (bytes kept whole, sequences not unpacked)."""
    return np.fromiter(values, dtype=object, count=len(values))


@dataclass(frozen=True)
class Events:
    """Events as columns: key number, event time, arrival sequence and, per field the query reads,
    the kind and payload of the value (see the module docstring; an ``OTHER`` payload indexes
    ``others``)."""

    code: np.ndarray  # int64[N]
    t: np.ndarray  # int64[N]
    seq: np.ndarray  # int64[N]
    kind: np.ndarray  # int8[N, F]
    payload: np.ndarray  # int64[N, F]
    others: list[Any]

    def __len__(self) -> int:
        return len(self.t)

    def take(self, rows: np.ndarray) -> Events:
        return Events(self.code[rows], self.t[rows], self.seq[rows], self.kind[rows],
                      self.payload[rows], self.others)

    @staticmethod
    def empty(n_fields: int) -> Events:
        """No events of a query reading ``n_fields`` fields."""
        return Events(*(np.zeros(0, np.int64) for _ in range(3)),
                      np.zeros((0, n_fields), np.int8), np.zeros((0, n_fields), np.int64), [])

    def concat(self, other: Events) -> Events:
        payload = other.payload
        if other.others:
            payload = payload + np.where(other.kind == OTHER, len(self.others), 0)
        return Events(*(np.concatenate([a, b]) for a, b in [
            (self.code, other.code), (self.t, other.t), (self.seq, other.seq),
            (self.kind, other.kind), (self.payload, payload)]), [*self.others, *other.others])

    def column(self, j: int, kind: str, rows: np.ndarray) -> np.ndarray:
        """Field ``j`` of ``rows`` as a kernel column of ``kind`` ("i", "f" or "b")."""
        payload = self.payload[rows, j]
        return payload.view(np.float64) if kind == "f" else payload != 0 if kind == "b" \
            else payload

    def python(self, j: int, lo: int, hi: int) -> list[Any]:
        """The values of field ``j`` of events ``lo:hi`` as Python objects."""
        kind, payload = self.kind[lo:hi, j], self.payload[lo:hi, j]
        out = np.empty(hi - lo, dtype=object)
        for code, values in ((INT, payload), (FLOAT, payload.view(np.float64)),
                             (BOOL, payload != 0)):
            out[kind == code] = values[kind == code]
        for i in np.flatnonzero(kind == OTHER):
            out[i] = self.others[payload[i]]
        return out.tolist()


class PendingBuffer:
    """The records of buffered events of a query reading ``n_fields`` fields."""

    def __init__(self, n_fields: int):
        self.n_fields = n_fields
        #: A buffered event: event time, arrival, per field a kind and payload.
        self.record = np.dtype([("t", "<i8"), ("seq", "<i8"), *(
            (f"{part}{j}", typ) for j in range(n_fields)
            for part, typ in (("kind", "i1"), ("payload", "<i8")))])

    def unpack(self, pending: np.ndarray, pending_values: np.ndarray) -> Events:
        """The events buffered by keys whose ``pending`` and ``pending_values`` are given (key
        number: position in them)."""
        counts = np.fromiter(map(len, pending), np.int64, len(pending)) \
            // self.record.itemsize
        records = np.frombuffer(b"".join(pending), dtype=self.record)
        code = np.repeat(np.arange(len(pending)), counts)
        kind = np.stack([records[f"kind{j}"] for j in range(self.n_fields)], axis=1) \
            if self.n_fields else np.zeros((len(records), 0), np.int8)
        payload = np.stack([records[f"payload{j}"] for j in range(self.n_fields)], axis=1) \
            if self.n_fields else np.zeros((len(records), 0), np.int64)
        others: list[Any] = []
        offset = np.zeros(len(pending), np.int64)
        for k in np.flatnonzero(pd.notna(pending_values)):
            offset[k] = len(others)
            others += json.loads(pending_values[k])
        if others:
            payload = payload + np.where(kind == OTHER, offset[code][:, None], 0)
        return Events(code, records["t"].copy(), records["seq"].copy(), kind, payload, others)

    def pack(self, kept: Events, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``pending`` and ``pending_values`` of ``n`` keys buffering ``kept`` (sorted by key,
        event time and arrival)."""
        records = np.empty(len(kept), dtype=self.record)
        records["t"], records["seq"] = kept.t, kept.seq
        payload = kept.payload.copy()
        values = np.full(n, None, dtype=object)
        rows, cols = np.nonzero(kept.kind == OTHER)
        if len(rows):
            owner = kept.code[rows]
            payload[rows, cols] = np.arange(len(rows)) - np.searchsorted(owner, owner)
            for k in np.unique(owner):
                mine = owner == k
                values[k] = json.dumps([kept.others[p] for p in kept.payload[rows[mine],
                                                                                cols[mine]]],
                                       sort_keys=True, default=str)
        for j in range(self.n_fields):
            records[f"kind{j}"], records[f"payload{j}"] = kept.kind[:, j], payload[:, j]
        data = records.tobytes()
        ends = np.cumsum(np.bincount(kept.code, minlength=n)) * self.record.itemsize
        starts = (ends - np.diff(ends, prepend=0)).tolist()
        return objects([data[a:b] for a, b in zip(starts, ends.tolist(), strict=True)]), values
