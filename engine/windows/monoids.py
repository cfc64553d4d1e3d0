"""Partials with an associative pairwise combine and no inverse (moments, value selection,
udafs): merged by a tree reduction and assembled by the van Herk/Gil-Werman scan
(:func:`segments.window_scan`) unless a class knows better."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from ..operator import SEQ, TIME
from .event_values import arrow_type, column_values, typed_values
from .partials import Partial
from .segments import Columns, Segments, grid, take, tree_reduce, window_scan
from .udaf import Udaf, accumulator, slots

LAST_KEY = np.iinfo(np.int64).max


class Monoid(Partial):
    """A partial with a vectorised associative ``combine``; merged by a tree reduction and
    assembled by :func:`segments.window_scan` unless a subclass knows better."""

    @abstractmethod
    def combine(self, a: Columns, b: Columns) -> Columns:
        """The product of two equally long sets of partial rows, row by row."""

    def merge(self, parts: Columns, seg: Segments) -> Columns:
        return tree_reduce(self._own(parts), seg, self.combine)

    def window(self, parts: Columns, cells: np.ndarray, total: int, pos: np.ndarray,
               width: int) -> Columns:
        cells_grid = grid(self._own(parts), cells, total + width, self.empty(1))
        return window_scan(cells_grid, pos, width, self.combine, self.empty(1))

    def _own(self, parts: Columns) -> Columns:
        empty = self.empty(0)
        return {n: parts[n].astype(empty[n].dtype, copy=False) for n in empty}


@dataclass(frozen=True)
class Moments(Monoid):
    """(count, mean, sum of squared deviations) of the non-null values, for variance and
    standard deviation. Merged with Chan et al.'s pairwise update and, for many parts at once,
    the two-pass form ``M2 = sum M2_i + sum n_i (mean_i - mean)^2``: numerically stable, unlike
    a difference of sums of squares (so windows use the scan, not subtract-on-evict)."""

    column: str

    @property
    def name(self) -> str:
        return f"var_{self.column}"

    def fields(self) -> list[pa.Field]:
        return [pa.field(f"{self.name}_n", pa.int64()), pa.field(f"{self.name}_mean",
                pa.float64()), pa.field(f"{self.name}_m2", pa.float64())]

    def empty(self, n: int) -> Columns:
        return {f"{self.name}_n": np.zeros(n, dtype="int64"),
                f"{self.name}_mean": np.zeros(n), f"{self.name}_m2": np.zeros(n)}

    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        x = column_values(events, self.column, "double")
        ok = ~np.isnan(x)
        n = seg.reduce(np.add, ok.astype("int64"))
        total = seg.reduce(np.add, np.where(ok, x, 0.0))
        mean = np.where(n > 0, total / np.maximum(n, 1), 0.0)
        row_mean = np.empty(len(x))
        row_mean[seg.order] = np.repeat(mean, seg.lengths)
        m2 = seg.reduce(np.add, np.where(ok, (x - row_mean) ** 2, 0.0))
        return {f"{self.name}_n": n, f"{self.name}_mean": mean, f"{self.name}_m2": m2}

    def merge(self, parts: Columns, seg: Segments) -> Columns:
        p = self._own(parts)
        n_i, mean_i, m2_i = (p[f"{self.name}_{c}"] for c in ("n", "mean", "m2"))
        n = seg.reduce(np.add, n_i)
        mean = np.where(n > 0, seg.reduce(np.add, n_i * mean_i) / np.maximum(n, 1), 0.0)
        row_mean = np.empty(len(n_i))
        row_mean[seg.order] = np.repeat(mean, seg.lengths)
        m2 = seg.reduce(np.add, m2_i + n_i * (mean_i - row_mean) ** 2)
        return {f"{self.name}_n": n, f"{self.name}_mean": mean, f"{self.name}_m2": m2}

    def combine(self, a: Columns, b: Columns) -> Columns:
        na, nb = a[f"{self.name}_n"], b[f"{self.name}_n"]
        ma, mb = a[f"{self.name}_mean"], b[f"{self.name}_mean"]
        n = na + nb
        safe = np.maximum(n, 1)
        delta = mb - ma
        return {f"{self.name}_n": n,
                f"{self.name}_mean": np.where(n > 0, ma + delta * nb / safe, 0.0),
                f"{self.name}_m2": a[f"{self.name}_m2"] + b[f"{self.name}_m2"]
                + np.where(n > 0, delta * delta * na * nb / safe, 0.0)}


@dataclass(frozen=True)
class Select(Monoid):
    """The value of the event that is least by an order key, among events whose value (and
    ``by``) is not null: first (time, arrival), last (-time, -arrival), argmin (by, time,
    arrival), argmax (-by, time, arrival). Keys are stored in that minimised form (an int
    ``by`` stays int64, negated as ``~by`` so that no value overflows); an empty partial has
    the largest keys and a null value (0 for int columns: :meth:`empty_rows` tells). Values
    keep their column's type (int64 for int columns). Idempotent and commutative."""

    kind: str  # first | last | argmin | argmax
    column: str
    typ: str
    by: str | None = None
    by_typ: str = "double"

    @property
    def name(self) -> str:
        return f"{self.kind}_{self.column}" + (f"_by_{self.by}" if self.by else "")

    def _keys(self) -> list[str]:
        return ([f"{self.name}__by"] if self.by else []) + [f"{self.name}__t",
                                                             f"{self.name}__seq"]

    @property
    def _int_by(self) -> bool:
        return self.by_typ == "int"

    def fields(self) -> list[pa.Field]:
        by_type = pa.int64() if self._int_by else pa.float64()
        keys = [pa.field(k, by_type if k.endswith("__by") else pa.int64())
                for k in self._keys()]
        return [*keys, pa.field(self.name, arrow_type(self.typ))]

    def empty(self, n: int) -> Columns:
        last_by = LAST_KEY if self._int_by else np.inf
        out = {k: np.full(n, last_by if k.endswith("__by") else LAST_KEY)
               for k in self._keys()}
        out[self.name] = {"string": np.full(n, None, dtype=object),
                          "int": np.zeros(n, dtype="int64")}.get(self.typ, np.full(n, np.nan))
        return out

    def empty_rows(self, results: Columns) -> np.ndarray:
        """The windows without a selected event (their value is null)."""
        return results[f"{self.name}__t"] == LAST_KEY

    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        value, ok = typed_values(events, self.column, self.typ)
        sign = -1 if self.kind == "last" else 1
        keys = {f"{self.name}__t": sign * events[TIME].to_numpy(dtype="int64"),
                f"{self.name}__seq": sign * events[SEQ].to_numpy(dtype="int64")}
        if self.by:
            by, by_ok = typed_values(events, self.by, self.by_typ)
            ok &= by_ok
            if self.kind == "argmax":
                by = ~by if self._int_by else -by
            keys[f"{self.name}__by"] = np.where(ok, by, self.empty(1)[f"{self.name}__by"][0])
        for k in (f"{self.name}__t", f"{self.name}__seq"):
            keys[k] = np.where(ok, keys[k], LAST_KEY)
        value = np.where(ok, value, self.empty(1)[self.name][0])
        return self._pick({**keys, self.name: value}, seg)

    def merge(self, parts: Columns, seg: Segments) -> Columns:
        return self._pick(self._own(parts), seg)

    def _pick(self, cols: Columns, seg: Segments) -> Columns:
        """The least row of each group."""
        if not seg.count:
            return self.empty(0)
        group = np.empty(len(seg.order), dtype="int64")
        group[seg.order] = seg.ids()
        order = np.lexsort([cols[k] for k in reversed(self._keys())] + [group])
        return take(cols, order[seg.starts])

    def combine(self, a: Columns, b: Columns) -> Columns:
        first = np.ones(len(a[self.name]), dtype=bool)  # a <= b lexicographically
        decided = np.zeros(len(first), dtype=bool)
        for k in self._keys():
            less, more = a[k] < b[k], a[k] > b[k]
            first = np.where(decided, first, ~more)
            decided |= less | more
        return {n: np.where(first, a[n], b[n]) for n in a}


@dataclass(frozen=True)
class UdafPartial(Monoid):
    """The accumulator of a user-declared aggregate, one float64 column per slot."""

    udaf: Udaf
    column: str

    @property
    def name(self) -> str:
        return f"u_{self.udaf.name}_{self.column}"

    def _slots(self) -> list[str]:
        return [f"{self.name}_{i}" for i in range(self.udaf.width)]

    def fields(self) -> list[pa.Field]:
        return [pa.field(s, pa.float64()) for s in self._slots()]

    def empty(self, n: int) -> Columns:
        return {s: np.full(n, v, dtype="float64")
                for s, v in zip(self._slots(), self.udaf.start(), strict=True)}

    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        x = column_values(events, self.column, "double")
        ok = ~np.isnan(x)
        lifted = slots(self.udaf.add(self.udaf.init(), x), self.udaf.width)
        cols = {s: np.where(ok, np.broadcast_to(v, x.shape), start).astype("float64")
                for s, v, start in zip(self._slots(), lifted, self.udaf.start(), strict=True)}
        return tree_reduce(cols, seg, self.combine)

    def combine(self, a: Columns, b: Columns) -> Columns:
        names = self._slots()
        merged = self.udaf.merge(accumulator(tuple(a[s] for s in names)),
                                 accumulator(tuple(b[s] for s in names)))
        n = len(a[names[0]])
        return {s: np.broadcast_to(v, (n,)).astype("float64")
                for s, v in zip(names, slots(merged, self.udaf.width), strict=True)}

    def finish(self, results: Columns) -> np.ndarray:
        n = len(results[self._slots()[0]])
        value = self.udaf.finish(accumulator(tuple(results[s] for s in self._slots())))
        return np.broadcast_to(np.asarray(value, dtype="float64"), (n,))
