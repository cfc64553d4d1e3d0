"""Vectorised building blocks of partial aggregation: grouping rows into segments, reducing a
segment with an associative pairwise combine, and combining ``width`` consecutive grid cells for
many windows at once (prefix sums, van Herk/Gil-Werman scans, list windows)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..ordering import order_by_code

#: Partial-aggregate columns by name (every array has one entry per row).
Columns = dict[str, np.ndarray]
#: An associative pairwise combine of two equally long sets of partial rows.
Combine = Callable[[Columns, Columns], Columns]
#: Windows assembled per numpy chunk (bounds the temporary (windows x cells) arrays).
CHUNK = 65_536
#: Values expanded per chunk when list windows are materialised.
CHUNK_VALUES = 4_000_000


@dataclass(frozen=True)
class Segments:
    """Rows grouped into contiguous runs: ``rows[order]`` puts each group together (groups in
    label order, rows of a group in their original order); ``starts`` are the group offsets."""

    order: np.ndarray
    starts: np.ndarray

    @classmethod
    def by_code(cls, code: np.ndarray, values: np.ndarray) -> Segments:
        """Group rows with equal (``code``, ``values``) (``code``: small non-negative ints),
        groups in (code, value) order."""
        order = order_by_code(code, values)
        c, v = code[order], values[order]
        return cls(order, np.flatnonzero(np.r_[True, (c[1:] != c[:-1]) | (v[1:] != v[:-1])])
                   if len(order) else order)

    @classmethod
    def runs(cls, order: np.ndarray, fresh: np.ndarray) -> Segments:
        """Groups that start where ``fresh`` (in ``order``) is true."""
        return cls(order, np.flatnonzero(fresh))

    @classmethod
    def each(cls, n: int) -> Segments:
        """Every row its own group."""
        return cls(np.arange(n), np.arange(n))

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(np.append(self.starts, len(self.order)))

    def ids(self) -> np.ndarray:
        """The group of each row in sorted order."""
        return np.repeat(np.arange(self.count), self.lengths)

    def singletons(self) -> bool:
        return self.count == len(self.order)

    def first(self, values: np.ndarray) -> np.ndarray:
        return values[self.order[self.starts]]

    def reduce(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        """``ufunc`` over each group of ``values`` (e.g. ``np.add``, ``np.fmin``)."""
        if not self.count:
            return values[:0]
        return ufunc.reduceat(values[self.order], self.starts)


def take(columns: Columns, index: np.ndarray) -> Columns:
    return {name: values[index] for name, values in columns.items()}


def tree_reduce(columns: Columns, seg: Segments, combine: Combine) -> Columns:
    """Reduce each group with ``combine`` (associative; the group's row order is kept) in
    log2(largest group) vectorised rounds of pairwise combines."""
    cols = take(columns, seg.order)
    group = seg.ids()
    while len(group) > seg.count:
        first = np.r_[True, group[1:] != group[:-1]]
        rank = np.arange(len(group)) - np.maximum.accumulate(np.where(first, np.arange(
            len(group)), 0))
        left = rank % 2 == 0
        paired = left.copy()
        paired[:-1] &= group[1:] == group[:-1]
        paired[-1] = False
        lefts = np.flatnonzero(paired)
        merged = combine(take(cols, lefts), take(cols, lefts + 1))
        keep = np.flatnonzero(left)
        new = take(cols, keep)
        slot = np.flatnonzero(paired[keep])
        for name in new:
            new[name] = new[name].copy()
            new[name][slot] = merged[name]
        cols, group = new, group[keep]
    return cols


def grid(columns: Columns, cells: np.ndarray, total: int, empty: Columns) -> Columns:
    """Rows placed at their ``cells`` of a grid of ``total`` cells; ``empty`` fills the rest
    (``empty`` holds one identity row per column)."""
    out = {}
    for name, values in columns.items():
        fill = empty[name][0]
        arr = np.full(total, fill, dtype=values.dtype if len(values) else empty[name].dtype)
        arr[cells] = values
        out[name] = arr
    return out


def key_sections(cells: np.ndarray, width: int) -> tuple[np.ndarray, int]:
    """Where each key's ``cells`` start in one grid of all the keys, and the grid's length:
    every key's section starts on a multiple of the window ``width``, so that
    :func:`window_scan` combines a key's cells in the same order whatever keys come before
    it (stepped alone, with its bucket, or with every bucket: doubles come out bit for bit)."""
    padded = -(-cells // width) * width
    return np.concatenate([[0], np.cumsum(padded)[:-1]]).astype("int64"), int(padded.sum())


def window_sum(grid: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Sum of ``grid[p : p + width]`` for every ``p`` in ``pos``.

    Integers by prefix sums (exact: subtract-on-evict); floats add each window's cells in order
    so that a window's sum depends only on its own cells, not on where the grid starts."""
    if width == 1:
        return grid[pos]
    if grid.dtype.kind in "iu":
        prefix = np.concatenate([[0], np.cumsum(grid)])
        return prefix[pos + width] - prefix[pos]
    view = np.lib.stride_tricks.sliding_window_view(grid, width)
    parts = [view[pos[i:i + CHUNK]].sum(axis=1) for i in range(0, len(pos), CHUNK)]
    return np.concatenate(parts) if parts else np.array([], dtype=grid.dtype)


def window_extreme(grid: np.ndarray, pos: np.ndarray, width: int, ufunc: np.ufunc
                   ) -> np.ndarray:
    """``np.minimum``/``np.maximum`` of ``grid[p : p + width]`` by the van Herk/Gil-Werman
    block scans (O(len(grid)) whatever the width); ``grid`` is filled with +-inf, not NaN."""
    if width == 1:
        return grid[pos]
    blocks = -(-len(grid) // width)
    padded = np.full(blocks * width, np.inf if ufunc is np.minimum else -np.inf)
    padded[:len(grid)] = grid
    shaped = padded.reshape(blocks, width)
    forward = ufunc.accumulate(shaped, axis=1).ravel()
    backward = ufunc.accumulate(shaped[:, ::-1], axis=1)[:, ::-1].ravel()
    return ufunc(backward[pos], forward[pos + width - 1])


def window_scan(grid: Columns, pos: np.ndarray, width: int, combine: Combine,
                empty: Columns) -> Columns:
    """``combine`` over ``grid[p : p + width]`` for every ``p`` in ``pos`` for any associative
    (not necessarily invertible or idempotent) combine: van Herk/Gil-Werman, i.e. Two-Stacks
    done in bulk. Each block of ``width`` cells gets suffix aggregates (the front stack) and
    prefix aggregates (the back stack); a window is one suffix plus one prefix, or one whole
    block. O(len(grid)) combines in ``width`` vectorised steps."""
    if width == 1 or not len(pos):
        return take(grid, pos)
    length = len(next(iter(grid.values())))
    blocks = -(-length // width)
    forward, backward = {}, {}
    for name, values in grid.items():
        padded = np.full(blocks * width, empty[name][0], dtype=values.dtype)
        padded[:length] = values
        forward[name] = padded.reshape(blocks, width).copy()
        backward[name] = padded.reshape(blocks, width).copy()
    for j in range(1, width):
        step = combine({n: a[:, j - 1] for n, a in forward.items()},
                       {n: a[:, j] for n, a in forward.items()})
        for name, values in step.items():
            forward[name][:, j] = values
    for j in range(width - 2, -1, -1):
        step = combine({n: a[:, j] for n, a in backward.items()},
                       {n: a[:, j + 1] for n, a in backward.items()})
        for name, values in step.items():
            backward[name][:, j] = values
    front = {n: a.ravel()[pos] for n, a in backward.items()}
    back = {n: a.ravel()[np.minimum(pos + width - 1, blocks * width - 1)]
            for n, a in forward.items()}
    joined = combine(front, back)
    aligned = pos % width == 0  # the window is one whole block
    return {n: np.where(aligned, front[n], joined[n]) for n in joined}


def _item_type(dtype: np.dtype | str) -> pa.DataType:
    return pa.string() if np.dtype(dtype) == object else pa.from_numpy_dtype(np.dtype(dtype))


def flatten(lists: np.ndarray, dtype: np.dtype | str) -> tuple[np.ndarray, np.ndarray]:
    """(concatenated values, lengths) of an object array of 1-d arrays."""
    array = pa.array(lists, type=pa.large_list(_item_type(dtype)))
    values = array.values.to_numpy(zero_copy_only=False)
    return values.astype(dtype, copy=False), np.diff(array.offsets.to_numpy())


def split(flat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """An object array of consecutive pieces of ``flat`` of the given lengths (read-only)."""
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype("int64"))
    values = pa.array(flat, type=_item_type(flat.dtype))
    return pa.LargeListArray.from_arrays(offsets, values).to_numpy(zero_copy_only=False)


def list_windows(lists: np.ndarray, cells: np.ndarray, total: int, pos: np.ndarray,
                 width: int, dtype: np.dtype | str
                 ) -> tuple[np.ndarray, Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """The values of the windows ``cells[p : p + width]`` of a grid of list cells: (the
    cell-ordered concatenation of the lists, chunks of (window indices, index into the
    concatenation of their values window by window, their lengths)). A window's values are
    contiguous in the concatenation."""
    order = np.argsort(cells, kind="stable")
    flat, lengths = flatten(lists[order], dtype)
    per_cell = np.zeros(total + width + 1, dtype="int64")
    per_cell[cells[order] + 1] = lengths
    offsets = np.cumsum(per_cell)
    lo, hi = offsets[pos], offsets[pos + width]
    return flat, _chunks(lo, hi - lo)


def _chunks(lo: np.ndarray, n: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    ends = np.cumsum(n)
    start = 0
    while start < len(lo):
        done = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, done + CHUNK_VALUES, side="right")))
        windows = np.arange(start, stop)
        counts = n[windows]
        first = np.repeat(lo[windows] - (ends[windows] - counts - done), counts)
        yield windows, first + np.arange(counts.sum()), counts
        start = stop
