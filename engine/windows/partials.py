"""Partial aggregates kept per slice: one class per kind of monoid.

A partial is a set of state columns with three vectorised operations: ``of_events`` (the
partial of each group of events), ``merge`` (the monoid product of each group of partials: slice
partials of two batches, the slices of a session) and ``window`` (the results of the windows
made of ``width`` consecutive grid cells, each cell a slice partial or empty). How windows are
assembled depends on the algebra:

* invertible (count, integer sum): prefix sums, i.e. subtract-on-evict;
* idempotent and non-invertible (min, max): van Herk/Gil-Werman block scans with numpy ufuncs;
* associative only (moments, first/last/argmin/argmax, udafs): van Herk/Gil-Werman with the
  partial's own pairwise combine (Two-Stacks in bulk, :func:`segments.window_scan`);
* holistic (exact distinct counts, quantiles) and sketches (HyperLogLog): each slice keeps its
  sorted values (its sketch entries); a window merges the lists of its slices.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from ..operator import SEQ, TIME
from . import hll
from .segments import (
    Columns,
    Segments,
    flatten,
    grid,
    list_windows,
    split,
    take,
    tree_reduce,
    window_extreme,
    window_scan,
    window_sum,
)
from .udaf import Udaf, accumulator, slots

NUMERIC = ("int", "double")
LAST_KEY = np.iinfo(np.int64).max
#: An int64 sum and the float64 sum of the same values differ by more than this only when the
#: exact sum left the int64 range (the int64 sum is then off by a multiple of 2^64; the float
#: sum of n values is within n * 2^11 of the exact one).
WRAPPED = 2.0**62


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


def approx_sum(grid: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """float64 sum of ``grid[p : p + width]`` for every ``p`` in ``pos`` by prefix sums: within
    far less than :data:`WRAPPED` of the exact sum (only used to detect int64 overflow)."""
    if width == 1:
        return grid[pos]
    prefix = np.concatenate([[0.0], np.cumsum(grid)])
    return prefix[pos + width] - prefix[pos]


class Partial(ABC):
    """One partial aggregate (see the module docstring)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """Its identity, and the name or prefix of its state columns."""

    @abstractmethod
    def fields(self) -> list[pa.Field]:
        """Its state columns."""

    @abstractmethod
    def empty(self, n: int) -> Columns:
        """``n`` identity rows (the partial of no event)."""

    @abstractmethod
    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        """The partial of each group of ``events``."""

    @abstractmethod
    def merge(self, parts: Columns, seg: Segments) -> Columns:
        """The product of each group of partial rows."""

    @abstractmethod
    def window(self, parts: Columns, cells: np.ndarray, total: int, pos: np.ndarray,
               width: int) -> Columns:
        """Results of the windows ``[p, p + width)`` of a grid of ``total`` cells in which row
        ``i`` of ``parts`` sits at ``cells[i]`` (other cells are empty); ``p`` in ``pos``."""

    def union(self, other: Partial) -> Partial:
        """One partial serving the requests of both (equal names)."""
        return self

    def columns(self) -> list[str]:
        return [f.name for f in self.fields()]


# -- invertible and idempotent: numpy ufuncs ---------------------------------------------------


@dataclass(frozen=True)
class Count(Partial):
    """Events (``column`` None: column ``rows``) or non-null values of a column."""

    column: str | None = None

    @property
    def name(self) -> str:
        return "rows" if self.column is None else f"n_{self.column}"

    def fields(self) -> list[pa.Field]:
        return [pa.field(self.name, pa.int64())]

    def empty(self, n: int) -> Columns:
        return {self.name: np.zeros(n, dtype="int64")}

    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        if self.column is None:
            return {self.name: seg.lengths.astype("int64")}
        present = events[self.column].notna().to_numpy().astype("int64")
        return {self.name: seg.reduce(np.add, present)}

    def merge(self, parts: Columns, seg: Segments) -> Columns:
        return {self.name: seg.reduce(np.add, parts[self.name])}

    def window(self, parts: Columns, cells: np.ndarray, total: int, pos: np.ndarray,
               width: int) -> Columns:
        cells_grid = grid({self.name: parts[self.name]}, cells, total + width, self.empty(1))
        return {self.name: window_sum(cells_grid[self.name], pos, width)}


@dataclass(frozen=True)
class Sum(Partial):
    """Sum of the non-null values: float64 for double columns; for int columns the int64 sum
    (exact modulo 2^64, so exact whenever the window's sum fits in int64, whatever the
    intermediate sums) and beside it the float64 sum (``approx_key``) that tells when it does
    not (see :data:`WRAPPED`)."""

    column: str
    typ: str

    @property
    def name(self) -> str:
        return f"sum_{self.column}"

    @property
    def approx_key(self) -> str:
        return f"{self.name}__approx"

    @property
    def exact(self) -> bool:
        return self.typ == "int"

    def fields(self) -> list[pa.Field]:
        if self.exact:
            return [pa.field(self.name, pa.int64()), pa.field(self.approx_key, pa.float64())]
        return [pa.field(self.name, pa.float64())]

    def empty(self, n: int) -> Columns:
        if self.exact:
            return {self.name: np.zeros(n, dtype="int64"), self.approx_key: np.zeros(n)}
        return {self.name: np.zeros(n)}

    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        if self.exact:
            values, _ = int_values(events, self.column)  # nulls are 0
            return {self.name: seg.reduce(np.add, values),
                    self.approx_key: seg.reduce(np.add, values.astype("float64"))}
        values = column_values(events, self.column, self.typ)
        return {self.name: seg.reduce(np.add, np.where(np.isnan(values), 0.0, values))}

    def merge(self, parts: Columns, seg: Segments) -> Columns:
        return {n: seg.reduce(np.add, v) for n, v in self._own(parts).items()}

    def window(self, parts: Columns, cells: np.ndarray, total: int, pos: np.ndarray,
               width: int) -> Columns:
        cells_grid = grid(self._own(parts), cells, total + width, self.empty(1))
        out = {self.name: window_sum(cells_grid[self.name], pos, width)}
        if self.exact:
            out[self.approx_key] = approx_sum(cells_grid[self.approx_key], pos, width)
        return out

    def _own(self, parts: Columns) -> Columns:
        return {n: parts[n].astype(e.dtype, copy=False) for n, e in self.empty(0).items()}

    def out_of_range(self, results: Columns) -> np.ndarray:
        """Windows whose exact int sum is outside the int64 range."""
        return np.abs(results[self.name].astype("float64") - results[self.approx_key]) > WRAPPED


@dataclass(frozen=True)
class Extreme(Partial):
    """Minimum or maximum (``how``) of the non-null values; NaN when there are none."""

    column: str
    how: str  # min | max

    @property
    def name(self) -> str:
        return f"{self.how}_{self.column}"

    @property
    def ufunc(self) -> np.ufunc:
        return np.fmin if self.how == "min" else np.fmax

    def fields(self) -> list[pa.Field]:
        return [pa.field(self.name, pa.float64())]

    def empty(self, n: int) -> Columns:
        return {self.name: np.full(n, np.nan)}

    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        return {self.name: seg.reduce(self.ufunc, column_values(events, self.column, "double"))}

    def merge(self, parts: Columns, seg: Segments) -> Columns:
        return {self.name: seg.reduce(self.ufunc, parts[self.name].astype("float64"))}

    def window(self, parts: Columns, cells: np.ndarray, total: int, pos: np.ndarray,
               width: int) -> Columns:
        fill = np.inf if self.how == "min" else -np.inf
        values = parts[self.name].astype("float64")
        cells_grid = np.full(total + width, fill)
        cells_grid[cells] = np.where(np.isnan(values), fill, values)
        result = window_extreme(cells_grid, pos, width,
                                np.minimum if self.how == "min" else np.maximum)
        return {self.name: np.where(np.isinf(result), np.nan, result)}


# -- associative: pairwise combines -----------------------------------------------------------


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


# -- holistic and sketches: lists per slice -----------------------------------------------------


class ListPartial(Partial):
    """A sorted list column per slice, merged by concatenating and re-sorting the lists of a
    group (groups of one list are kept as they are)."""

    @property
    @abstractmethod
    def dtype(self) -> str:
        """numpy dtype of the list items in memory."""

    @property
    @abstractmethod
    def item_type(self) -> pa.DataType:
        """Arrow type of the list items in the state."""

    def fields(self) -> list[pa.Field]:
        return [pa.field(self.name, pa.list_(self.item_type))]

    def empty(self, n: int) -> Columns:
        return {self.name: split(np.zeros(0, dtype=self.dtype), np.zeros(n, dtype="int64"))}

    @abstractmethod
    def _normalise(self, values: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(values, groups) sorted by group then value, as stored (e.g. deduplicated)."""

    def _lists(self, values: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
        values, group = self._normalise(values, group)
        return split(values, np.bincount(group, minlength=groups))

    def merge(self, parts: Columns, seg: Segments) -> Columns:
        lists = parts[self.name][seg.order]
        if seg.singletons():
            return {self.name: lists}
        out = np.empty(seg.count, dtype=object)
        lengths = seg.lengths
        single = lengths == 1
        out[single] = lists[seg.starts[single]]
        multi = np.flatnonzero(~single)
        rows = np.isin(seg.ids(), multi)
        flat, sizes = flatten(lists[rows], self.dtype)
        group = np.repeat(np.searchsorted(multi, seg.ids()[rows]), sizes)
        merged = self._lists(flat, group, len(multi))
        for slot, value in zip(multi, merged, strict=True):
            out[slot] = value
        return {self.name: out}

    def _sorted_events(self, values: np.ndarray, present: np.ndarray, seg: Segments
                       ) -> tuple[np.ndarray, np.ndarray]:
        """(non-null values, their group) of events grouped by ``seg`` (``present``: whether
        each value is not null)."""
        keep = present[seg.order]
        return values[seg.order][keep], seg.ids()[keep]


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, rank of each value among them)."""
    if not len(values):
        return values, np.zeros(0, dtype="int64")
    uniq, rank = np.unique(values, return_inverse=True)
    return uniq, rank.astype("int64")


@dataclass(frozen=True)
class Values(ListPartial):
    """The sorted non-null values of a slice (exact distinct counts and quantiles); a window
    sorts the concatenated values of its slices and reads its quantiles (linear interpolation
    between closest ranks, numpy's default) and the number of distinct values."""

    column: str
    typ: str
    quantiles: frozenset[float] = field(default_factory=frozenset)

    @property
    def name(self) -> str:
        return f"vals_{self.column}"

    @property
    def dtype(self) -> str:
        return {"string": "object", "int": "int64"}.get(self.typ, "float64")

    @property
    def item_type(self) -> pa.DataType:
        return arrow_type(self.typ)

    def union(self, other: Partial) -> Partial:
        assert isinstance(other, Values)
        return Values(self.column, self.typ, self.quantiles | other.quantiles)

    def quantile_key(self, p: float) -> str:
        return f"{self.name}@q{p!r}"

    @property
    def distinct_key(self) -> str:
        return f"{self.name}@distinct"

    def _normalise(self, values: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = np.lexsort((_ranks(values)[1], group))
        return values[order], group[order]

    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        values, group = self._sorted_events(*typed_values(events, self.column, self.typ), seg)
        return {self.name: self._lists(values.astype(self.dtype), group, seg.count)}

    def window(self, parts: Columns, cells: np.ndarray, total: int, pos: np.ndarray,
               width: int) -> Columns:
        out = {self.distinct_key: np.zeros(len(pos), dtype="int64")}
        out.update({self.quantile_key(p): np.full(len(pos), np.nan) for p in self.quantiles})
        flat, chunks = list_windows(parts[self.name], cells, total, pos, width, self.dtype)
        uniq, flat_rank = _ranks(flat)
        scale = max(len(uniq), 1)
        for windows, index, counts in chunks:
            wid = np.repeat(np.arange(len(windows)), counts)
            rank = np.sort(wid * scale + flat_rank[index], kind="stable") - wid * scale
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            filled = counts > 0
            if not filled.any():
                continue
            new = np.ones(len(rank), dtype=bool)
            new[1:] = (rank[1:] != rank[:-1]) | (wid[1:] != wid[:-1])
            out[self.distinct_key][windows[filled]] = np.add.reduceat(
                new.astype("int64"), starts[filled])
            for p in self.quantiles:
                at = (counts[filled] - 1) * p
                lo = np.floor(at).astype("int64")
                hi = np.minimum(lo + 1, counts[filled] - 1)
                below = uniq[rank[starts[filled] + lo]].astype("float64")
                above = uniq[rank[starts[filled] + hi]].astype("float64")
                out[self.quantile_key(p)][windows[filled]] = below + (above - below) * (at - lo)
        return out


@dataclass(frozen=True)
class Sketch(ListPartial):
    """A sparse HyperLogLog sketch of the non-null values (see :mod:`engine.windows.hll`)."""

    column: str
    typ: str

    @property
    def name(self) -> str:
        return f"hll_{self.column}"

    @property
    def dtype(self) -> str:
        return "int64"

    @property
    def item_type(self) -> pa.DataType:
        return pa.int32()

    @property
    def estimate_key(self) -> str:
        return f"{self.name}@estimate"

    def _normalise(self, values: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = np.lexsort((values, group))
        values, group = values[order], group[order]
        keep = hll.dedupe(values, group)
        return values[keep], group[keep]

    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        values = column_values(events, self.column, self.typ)  # ints hash as their float
        values, group = self._sorted_events(values, valid(values), seg)
        return {self.name: self._lists(hll.entries(values), group, seg.count)}

    def window(self, parts: Columns, cells: np.ndarray, total: int, pos: np.ndarray,
               width: int) -> Columns:
        out = np.zeros(len(pos))
        flat, chunks = list_windows(parts[self.name], cells, total, pos, width, "int64")
        for windows, index, counts in chunks:
            wid = np.repeat(np.arange(len(windows)), counts)
            entries, wid = self._normalise(flat[index], wid)
            ranks = entries & ((1 << hll.RANK_BITS) - 1)
            out[windows] = hll.estimate(hll.histogram(ranks, wid, len(windows)))
        return {self.estimate_key: out}
