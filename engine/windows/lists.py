"""Holistic partials (exact distinct counts and quantiles) and HyperLogLog sketches: each slice
keeps a sorted list (its non-null values, its sketch entries); a window merges the lists of its
slices."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from .event_values import arrow_type, column_values, typed_values, valid
from .hll import RANK_BITS, dedupe, entries, estimate, histogram
from .partials import Partial
from .segments import Columns, Segments, flatten, list_windows, split


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
        keep = dedupe(values, group)
        return values[keep], group[keep]

    def of_events(self, events: pd.DataFrame, seg: Segments) -> Columns:
        values = column_values(events, self.column, self.typ)  # ints hash as their float
        values, group = self._sorted_events(values, valid(values), seg)
        return {self.name: self._lists(entries(values), group, seg.count)}

    def window(self, parts: Columns, cells: np.ndarray, total: int, pos: np.ndarray,
               width: int) -> Columns:
        out = np.zeros(len(pos))
        flat, chunks = list_windows(parts[self.name], cells, total, pos, width, "int64")
        for windows, index, counts in chunks:
            wid = np.repeat(np.arange(len(windows)), counts)
            sketch, wid = self._normalise(flat[index], wid)
            ranks = sketch & ((1 << RANK_BITS) - 1)
            out[windows] = estimate(histogram(ranks, wid, len(windows)))
        return {self.estimate_key: out}
