"""SPJ queries on the replay platform: the synopsis executor as a keyed operator.

The query runs over its merged input (:mod:`engine.spj.inputs`), all of it under one key. State
is the executor's canonical encoding (one row: ``synopsis`` bytes and ``entries``, the number of
stored entries). Each batch emits the executor's output increment (see
:mod:`engine.spj.executor`); :meth:`SpjOperator.final_view` folds the increments of a run into
the answer the reference computes. Rows the executor cannot read (a missing or mistyped column)
are quarantined with the executor's reason.
"""

from __future__ import annotations

import re
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..operator import REASON, SEQ, KeyedOperator, StateCodec, StepResult
from ..specs import COLUMN_TYPES, CatalogError, QuerySpec, RecordingSpec
from .errors import SpjError, SpjUnbounded
from .executor import SpjExecutor
from .inputs import PARTITION, STREAM, column_name
from .model import Attr, Const, Output, Query
from .reference import evaluate
from .settings import spj_schemas, spj_settings

#: Aggregates whose value is a fraction in the executor (stored as float64).
_FRACTIONAL = ("AVG", "MEDIAN")


def _safe(name: str) -> str:
    """A Delta-safe column name for an output item (``COUNT(*)`` -> ``count``)."""
    return re.sub(r"[^0-9a-z_]+", "_", name.lower()).strip("_") or "value"


class SpjOperator(KeyedOperator):
    """An SPJ(+aggregate) query over its merged input (see the module docstring)."""

    version = "1"
    key = PARTITION

    def __init__(self, query: QuerySpec, recordings: dict[str, RecordingSpec], name: str = "spj"):
        self.name = name
        sql, timestamps, allow = spj_settings(query)
        self.streams = {s: recordings[r] for s, r in query.inputs.items()}
        try:
            self.executor = SpjExecutor(sql, spj_schemas(query, recordings), timestamps,
                                        allow_unbounded=allow)
        except SpjUnbounded as exc:
            raise CatalogError(query.source, "query", f"{exc.reason} (set `allow_unbounded: "
                               "true` to run it on the full history; its state grows)") from exc
        except SpjError as exc:
            raise CatalogError(query.source, "query", str(exc)) from exc
        self.query: Query = self.executor.analysis.query
        self._check_groups(query.source)
        self.columns = [_safe(c) for c in self.executor.output_columns]
        if len(set(self.columns)) != len(self.columns):
            raise CatalogError(query.source, "query", f"output columns {self.columns} collide; "
                               "rename the SELECT items")
        fields = [pa.field(c, self._type(item)) for c, item in
                  zip(self.columns, self._items(), strict=True)]
        self.output_schema = pa.schema(fields)
        self.state_codec = StateCodec(pa.schema([
            pa.field(PARTITION, pa.int64()), pa.field("synopsis", pa.binary()),
            pa.field("entries", pa.int64())]), [PARTITION])
        self.output_keys = self._final_keys()

    # -- output shape --------------------------------------------------------------------------

    def _check_groups(self, source: str) -> None:
        missing = [str(g) for g in self.query.group_by if g not in self.query.output]
        if missing:
            raise CatalogError(source, "query", f"GROUP BY {', '.join(missing)} must also be "
                               "selected to replay the query (each output row names its group)")

    def _items(self) -> list[Output | None]:
        items: list[Output | None] = list(self.query.output)
        return items + ([None] if self.executor.kind == "bag" else [])  # None: the count

    def _type(self, item: Output | None) -> pa.DataType:
        if item is None:
            return pa.int64()
        if isinstance(item, Const):
            v = item.value
            return pa.bool_() if isinstance(v, bool) else pa.string() if isinstance(v, str) \
                else pa.int64()
        if isinstance(item, Attr):
            return self._attr_type(item)
        if item.func in ("COUNT", "COUNT_DISTINCT"):
            return pa.int64()
        if item.func in _FRACTIONAL or item.arg is None:
            return pa.float64()
        typ = self._attr_type(item.arg)
        return pa.int64() if pa.types.is_timestamp(typ) else typ

    def _attr_type(self, a: Attr) -> pa.DataType:
        typ = self.streams[self.query.occurrences[a.occ]].columns[a.name]
        return pa.int64() if typ == "timestamp" else COLUMN_TYPES[typ]

    def _final_keys(self) -> list[str]:
        if self.executor.kind == "bag":
            return self.columns[:-1]
        if self.executor.kind == "set":
            return list(self.columns)
        return [c for c, o in zip(self.columns, self.query.output, strict=True)
                if isinstance(o, Attr)]

    def final_view(self, output: pd.DataFrame) -> pd.DataFrame:
        """The answer the increments add up to: summed counts (bag), the rows (set), the
        latest row per group (aggregates)."""
        if self.executor.kind == "bag":
            keys = self.columns[:-1]
            if output.empty:
                return output[self.columns]
            return (output.groupby(keys, dropna=False, sort=True)["count"].sum().reset_index()
                    if keys else pd.DataFrame({"count": [int(output["count"].sum())]}))
        if self.executor.kind == "set":
            return output[self.columns]
        latest = output.sort_values("batch", kind="stable")
        keys = self.output_keys
        latest = latest.drop_duplicates(keys, keep="last") if keys else latest.tail(1)
        return latest[self.columns].reset_index(drop=True)

    def _frame(self, rows: list[dict] | list[tuple]) -> pd.DataFrame:
        """Executor rows (dicts or tuples in output order) as a typed output frame."""
        names = self.executor.output_columns
        tuples = [tuple(r[n] for n in names) if isinstance(r, dict) else r for r in rows]
        data = {c: [_plain(t[i]) for t in tuples] for i, c in enumerate(self.columns)}
        return pd.DataFrame(data, columns=self.columns).astype(
            {f.name: "float64" for f in self.output_schema if pa.types.is_floating(f.type)})

    # -- the operator --------------------------------------------------------------------------

    def init(self) -> pd.DataFrame:
        return self._state(self.executor.init())

    def _state(self, synopsis: Any) -> pd.DataFrame:
        return pd.DataFrame({PARTITION: [0], "synopsis": [self.executor.encode(synopsis)],
                             "entries": [self.executor.size(synopsis)]})

    def _events(self, batch: pd.DataFrame) -> list[tuple[str, dict[str, Any]]]:
        """The batch's rows as (stream, row) pairs in arrival order, with Python values."""
        out = []
        for stream, spec in self.streams.items():
            mine = batch[batch[STREAM].to_numpy() == stream]
            if mine.empty:
                continue
            columns = {c: _python(mine[column_name(stream, c)], t)
                       for c, t in spec.columns.items()}
            seqs = mine[SEQ].to_numpy()
            for i, seq in enumerate(seqs):
                out.append((int(seq), stream, {c: v[i] for c, v in columns.items()}))
        out.sort(key=lambda e: e[0])
        return [(stream, row) for _, stream, row in out]

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        synopsis = self.executor.decode(state["synopsis"].iloc[0]) if len(state) else \
            self.executor.init()
        batch = batch.sort_values(SEQ, kind="stable").reset_index(drop=True)
        events = self._events(batch)
        reasons = [self.executor.check(stream, row) for stream, row in events]
        bad = np.array([r is not None for r in reasons], dtype=bool)
        rejected = batch[bad].assign(**{REASON: [r for r in reasons if r is not None]})
        good = [e for e, b in zip(events, bad, strict=True) if not b]
        synopsis, rows = self.executor.step(synopsis, good)
        return StepResult(self._state(synopsis), self._frame(rows),
                          batch.iloc[:0].assign(**{REASON: ""}), rejected)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        return self._frame([])

    def reference(self, events: pd.DataFrame) -> tuple[pd.DataFrame, list[int], list[int]]:
        """Naive evaluation over the whole merged input: (final answer, late, rejected seqs)."""
        events = events.sort_values(SEQ, kind="stable").reset_index(drop=True)
        streams: dict[str, list[dict]] = {s: [] for s in self.streams}
        rejected = []
        for seq, (stream, row) in zip(events[SEQ].to_numpy(), self._events(events), strict=True):
            if self.executor.check(stream, row) is None:
                streams[stream].append(row)
            else:
                rejected.append(int(seq))
        result = evaluate(self.query, streams)
        if isinstance(result, Counter):
            rows = [(*values, n) for values, n in sorted(result.items(), key=_row_order)]
        else:
            rows = sorted(result, key=lambda r: tuple(map(_sort_key, r)))
        return self._frame(rows), [], rejected


def _python(values: pd.Series, typ: str) -> list[Any]:
    """Column values as the executor expects them (ints, floats, strings, bools; None)."""
    missing = values.isna().to_numpy()
    if typ == "timestamp":
        raw = values.to_numpy(dtype="datetime64[us]").astype("int64").tolist()
    elif typ == "int":
        raw = values.fillna(0).to_numpy(dtype="int64").tolist()
    else:
        raw = values.tolist()
    return [None if m else v for v, m in zip(raw, missing, strict=True)]


def _plain(v: Any) -> Any:
    return float(v) if isinstance(v, Fraction) else v


def _sort_key(v: Any) -> tuple:
    return (v is None, str(type(v)), v if v is not None else 0)


def _row_order(item: tuple[tuple, int]) -> tuple:
    return tuple(map(_sort_key, item[0]))
