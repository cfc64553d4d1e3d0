"""Per-key window functions in arrival order, stateful across batches (for :mod:`engine.derive`).

Each function computes, for the rows of one batch (any keys, in arrival order), what Spark's
``f(x) OVER (PARTITION BY key ORDER BY __seq)`` gives over the whole input so far, from the
batch and a state per key: the last ``n`` values for ``lag``, running count, sum, min, max and
first value for the aggregates. Running the batches one after another with the state gives the
same values however the input is cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .derive_values import DeriveError, Values


@dataclass(frozen=True)
class Groups:
    """The rows of a batch grouped by key, arrival order kept within each group."""

    order: np.ndarray  # row indices, grouped by key
    group: np.ndarray  # group of each sorted position
    rank: np.ndarray  # position of each sorted row within its group
    starts: np.ndarray  # first sorted position of each group (and the end, last)
    keys: np.ndarray  # key value of each group (object; None for the null key)

    @staticmethod
    def of(keys: pd.Series) -> Groups:
        codes, uniques = _factorized(keys)  # the group of each row: codes 0.. all used
        small = len(uniques) <= 2**16  # a radix sort
        order = np.argsort(codes.astype(np.uint16) if small else codes, kind="stable")
        sizes = np.bincount(codes, minlength=len(uniques))
        starts = np.r_[0, np.cumsum(sizes)]
        group = np.repeat(np.arange(len(sizes)), sizes)
        rank = np.arange(len(codes)) - starts[:-1][group]
        return Groups(order, group, rank, starts, np.array(
            [None if k is None or k != k else k for k in np.asarray(uniques, dtype=object)],
            dtype=object))

    def unsort(self, values: np.ndarray) -> np.ndarray:
        """Values by sorted position, back in row order."""
        out = np.empty_like(values)
        out[self.order] = values
        return out


def _factorized(keys: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize`` of the key values (nulls one key, numbered in order of appearance); a
    categorical column is factorized by its codes, not its values."""
    if not isinstance(keys.dtype, pd.CategoricalDtype):
        return pd.factorize(keys.to_numpy(dtype=object), use_na_sentinel=False)
    codes, first = pd.factorize(keys.cat.codes.to_numpy(), use_na_sentinel=False)
    categories = np.append(keys.cat.categories.to_numpy(dtype=object), None)
    return codes, categories[first]  # code -1 (null): the None after the categories


@dataclass
class KeyState:
    """Per-key state of one window term: a table of arrays indexed by key."""

    index: pd.Index = field(default_factory=lambda: pd.Index([], dtype=object))
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def rows_for(self, keys: np.ndarray) -> np.ndarray:
        """Row of each key in the state (-1 for a key it does not hold)."""
        if not len(self.index):
            return np.full(len(keys), -1)
        return self.index.get_indexer(pd.Index(keys, dtype=object))

    def updated(self, keys: np.ndarray, arrays: dict[str, np.ndarray]) -> KeyState:
        """The state with the rows of ``keys`` replaced (or added) by ``arrays``."""
        if not len(self.index):
            return KeyState(pd.Index(keys, dtype=object), arrays)
        at = self.rows_for(keys)
        new = at < 0
        index = self.index.append(pd.Index(keys[new], dtype=object))
        out = {}
        for name, values in arrays.items():
            merged = np.concatenate([self.arrays[name], values[new]])
            merged[at[~new]] = values[~new]
            out[name] = merged
        return KeyState(index, out)

    def column(self, name: str, rows: np.ndarray, fill: object) -> np.ndarray:
        """``arrays[name]`` at ``rows`` (``fill`` where a row is -1)."""
        if not len(self.index):
            return np.full((len(rows), *self._shape(name)), fill)
        values = self.arrays[name][np.maximum(rows, 0)]
        values[rows < 0] = fill
        return values

    def _shape(self, name: str) -> tuple[int, ...]:
        return self.arrays[name].shape[1:] if name in self.arrays else ()


def lag(x: Values, groups: Groups, state: KeyState, n: int, default: Values
        ) -> tuple[Values, KeyState]:
    """``lag(x, n, default)``: the value ``n`` rows earlier in the key, else ``default``."""
    data, valid = x.data[groups.order], x.valid[groups.order]
    rows = state.rows_for(groups.keys)
    filled = state.column("filled", rows, 0) if len(state.index) else np.zeros(len(rows), int)
    tail_data = state.column("data", rows, 0) if len(state.index) else np.zeros(
        (len(rows), n), dtype=data.dtype)
    tail_valid = state.column("valid", rows, False) if len(state.index) else np.zeros(
        (len(rows), n), dtype=bool)

    def at(g: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(data, valid, exists) of combined position ``c`` (state tail, then batch) of group g."""
        m = filled[g]
        from_batch = c >= m
        in_tail = (c >= 0) & ~from_batch
        pos = np.clip(groups.starts[:-1][g] + c - m, 0, max(len(data) - 1, 0))
        col = np.clip(n - m + c, 0, n - 1)
        d = np.where(from_batch, data[pos] if len(data) else 0, tail_data[g, col])
        v = np.where(from_batch, valid[pos] if len(data) else False, tail_valid[g, col])
        return d, v & (from_batch | in_tail), from_batch | in_tail

    # The row at sorted position i and rank r in its group reads combined position
    # filled + r - n: the batch row n before it (position i - n) when r >= n, else column r of
    # the state's tail if the tail holds that position, else the default.
    g, rank, rows = groups.group, groups.rank, len(groups.order)
    out_data = np.empty(rows, np.result_type(data.dtype, tail_data.dtype, default.data.dtype))
    out_valid = np.empty(rows, np.bool_)
    out_data[n:], out_valid[n:] = data[:max(rows - n, 0)], valid[:max(rows - n, 0)]
    head = np.flatnonzero(rank < n)
    out_data[head] = default.data[groups.order[head]]
    out_valid[head] = default.valid[groups.order[head]]
    tail = head[filled[g[head]] + rank[head] >= n]
    out_data[tail] = tail_data[g[tail], rank[tail]]
    out_valid[tail] = tail_valid[g[tail], rank[tail]]
    out = Values(groups.unsort(out_data), groups.unsort(out_valid), x.kind)
    sizes = np.diff(groups.starts)
    total = filled + sizes
    new_data = np.zeros((len(sizes), n), dtype=data.dtype)
    new_valid = np.zeros((len(sizes), n), dtype=bool)
    every = np.arange(len(sizes))
    for j in range(n):  # the new tail, right-aligned: combined positions total-n .. total-1
        d, v, _ = at(every, total - n + j)
        new_data[:, j], new_valid[:, j] = d, v
    return out, state.updated(groups.keys, {"filled": np.minimum(total, n), "data": new_data,
                                            "valid": new_valid})


def running(func: str, x: Values | None, groups: Groups, state: KeyState
            ) -> tuple[Values, KeyState]:
    """A running aggregate over the key in arrival order: ``count`` (``x`` None: rows),
    ``sum``, ``avg``, ``min``, ``max``, ``first_value``."""
    rows = state.rows_for(groups.keys)
    sizes = np.diff(groups.starts)
    if x is None:
        valid = np.ones(len(groups.order), dtype=bool)
        data = np.zeros(len(groups.order), dtype="int64")
    else:
        data, valid = x.data[groups.order], x.valid[groups.order]
    base_count = state.column("count", rows, 0).astype("int64")
    counts = _grouped_cumsum(valid.astype("int64"), groups, base_count)
    new: dict[str, np.ndarray] = {"count": counts[groups.starts[1:] - 1] if len(counts) else
                                  base_count}
    if func == "count":
        out = Values(counts, np.ones(len(counts), dtype=bool), "int")
    elif func == "first_value":
        seen = state.column("seen", rows, False).astype(bool)
        first_d = np.where(seen, state.column("data", rows, 0), data[groups.starts[:-1]]
                           if len(data) else 0)
        first_v = np.where(seen, state.column("valid", rows, False),
                           valid[groups.starts[:-1]] if len(data) else False)
        new.update(seen=np.ones(len(sizes), dtype=bool), data=first_d, valid=first_v)
        out = Values(first_d[groups.group], first_v[groups.group], x.kind)
    else:
        kind = "double" if func == "avg" else x.kind
        values = data.astype("float64") if kind == "double" else data
        acc = _accumulate(func, values, valid, groups, state.column("acc", rows, 0).astype(
            values.dtype), base_count > 0)
        new["acc"] = acc[groups.starts[1:] - 1] if len(acc) else state.column("acc", rows, 0)
        if func == "avg":
            with np.errstate(all="ignore"):
                acc = acc / np.maximum(counts, 1)
        out = Values(acc, counts > 0, kind)
    out = Values(groups.unsort(out.data), groups.unsort(out.valid), out.kind)
    return out, state.updated(groups.keys, new)


def _grouped_cumsum(values: np.ndarray, groups: Groups, base: np.ndarray) -> np.ndarray:
    """Integer cumulative sums within each group, starting from ``base`` (exact, modulo 2^64)."""
    if not len(values):
        return values
    total = np.cumsum(values)
    before = np.r_[0, total][groups.starts[:-1]]
    return total - (before - base)[groups.group]


def _accumulate(func: str, values: np.ndarray, valid: np.ndarray, groups: Groups,
                base: np.ndarray, has_base: np.ndarray) -> np.ndarray:
    """Running sum/min/max of the valid values of each group from its state, one group after
    the other in arrival order (Spark adds doubles one by one in that order)."""
    out = np.empty_like(values)
    if func in ("sum", "avg"):
        neutral = 0
        ufunc = np.add
    elif func == "min":
        ufunc = np.fmin if values.dtype.kind == "f" else np.minimum
        neutral = np.nan if values.dtype.kind == "f" else np.iinfo("int64").max
    else:
        ufunc = np.maximum
        neutral = -np.inf if values.dtype.kind == "f" else np.iinfo("int64").min
    filled = np.where(valid, values, neutral)
    for g, (a, b) in enumerate(zip(groups.starts[:-1], groups.starts[1:], strict=True)):
        start = base[g] if has_base[g] else neutral
        run = ufunc.accumulate(np.r_[np.asarray(start, dtype=values.dtype), filled[a:b]])
        out[a:b] = run[1:]
    if func == "sum" and values.dtype.kind == "i":
        check = np.abs(np.where(valid, values, 0).astype("float64"))
        if _grouped_cumsum(check, groups, np.abs(base.astype("float64"))).max(
                initial=0) >= 2.0 ** 63:
            raise DeriveError("integer overflow in sum() (Spark SQL's ANSI mode fails too)")
    return out
