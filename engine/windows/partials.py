"""Partial aggregates kept per slice: one class per kind of monoid (this module: the base class
and the ufunc partials; :mod:`.monoids` and :mod:`.lists` the others).

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
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from .event_values import column_values, int_values
from .segments import Columns, Segments, grid, window_extreme, window_sum

#: An int64 sum and the float64 sum of the same values differ by more than this only when the
#: exact sum left the int64 range (the int64 sum is then off by a multiple of 2^64; the float
#: sum of n values is within n * 2^11 of the exact one).
WRAPPED = 2.0**62


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
