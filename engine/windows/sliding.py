"""Per-key sliding (hopping) windows by stream slicing.

Each event goes to exactly one slice of width ``gcd(size, slide)``; slices hold the partial
aggregates (count, sum, min, max per column). A window ``[s, s + size)`` (``s`` a multiple of the
slide) is assembled from its ``size / slice`` slices when the key's watermark reaches its end, so
the work per event does not grow with ``size / slide`` the way copying every event into each of
its windows does. A slice is dropped once the last window that contains it has been emitted, so a
key keeps at most ``size / slice`` slices (plus the ones still open ahead of the watermark).
Lateness and late events follow :mod:`engine.windows.tumbling`; windows without events emit nothing.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .spec import WindowSpec
from .tumbling import TumblingWindow

#: Watermark used by ``finish``: every window containing an event closes.
END_OF_INPUT = 2**62
#: Windows assembled per numpy chunk (bounds the temporary (windows x slices) arrays).
CHUNK = 65_536


class SlidingWindow(TumblingWindow):
    """Sliding windows per key; aggregates count, sum, min, max, avg (see module docstring)."""

    version = "1"

    def __init__(self, spec: WindowSpec, name: str = "sliding"):
        super().__init__(spec, name)
        self._slice = math.gcd(spec.size_us, spec.slide)

    @property
    def slice_us(self) -> int:
        return self._slice

    def _close(self, slices: pd.DataFrame, prior: pd.Series, max_t: pd.Series
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
        lateness = self.spec.lateness_us
        before = slices[self.key].map(prior).fillna(-(2**62)).to_numpy(dtype="int64") - lateness
        after = slices[self.key].map(max_t).to_numpy(dtype="int64") - lateness
        emitted = self._emit(self._assemble(slices, before, after))
        starts = slices["window_start"].to_numpy(dtype="int64")
        last_start = starts - np.mod(starts, self.spec.slide)  # last window holding the slice
        return emitted, slices[last_start + self.spec.size_us > after]

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        from .tumbling import KEY_ROW

        is_key = state["window_start"].to_numpy() == KEY_ROW
        slices = state[~is_key]
        prior = pd.Series(state.loc[is_key, "max_t"].to_numpy(dtype="int64"),
                          index=state.loc[is_key, self.key].to_numpy())
        before = slices[self.key].map(prior).to_numpy(dtype="int64") - self.spec.lateness_us
        return self._emit(self._assemble(slices, before, np.full(len(slices), END_OF_INPUT)))

    def _assemble(self, slices: pd.DataFrame, before: np.ndarray, after: np.ndarray
                  ) -> pd.DataFrame:
        """Windows whose end lies in ``(before, after]`` (per slice row: its key's watermarks
        before and after the step), aggregated from ``slices``; empty windows are left out."""
        g, size, slide = self._slice, self.spec.size_us, self.spec.slide
        width, hop = size // g, slide // g
        columns = [c for c in slices.columns if c not in (self.key, "window_start", "max_t")]
        if slices.empty:
            return slices[[self.key, "window_start", *columns]]
        frame = pd.DataFrame({"k": slices[self.key].to_numpy(),
                              "a": slices["window_start"].to_numpy(dtype="int64"),
                              "before": before, "after": after})
        per_key = frame.groupby("k", sort=True).agg(a0=("a", "min"), a1=("a", "max"),
                                                   before=("before", "first"),
                                                   after=("after", "first"))
        a0, a1 = per_key["a0"].to_numpy(), per_key["a1"].to_numpy()
        lo = np.maximum((np.floor_divide(a0 - size, slide) + 1) * slide,
                        (np.floor_divide(per_key["before"].to_numpy() - size, slide) + 1) * slide)
        hi = np.minimum(np.floor_divide(a1, slide) * slide,
                        np.floor_divide(per_key["after"].to_numpy() - size, slide) * slide)
        count = np.where(hi >= lo, (hi - lo) // slide + 1, 0)  # windows per key
        cells = np.where(count > 0, (hi + size - lo) // g, 0)
        offset = np.concatenate([[0], np.cumsum(cells)[:-1]])
        key_index = pd.Series(np.arange(len(per_key)), index=per_key.index)
        ki = key_index.loc[frame["k"]].to_numpy()
        cell = offset[ki] + (frame["a"].to_numpy() - lo[ki]) // g
        inside = (count[ki] > 0) & (frame["a"].to_numpy() >= lo[ki]) & \
            (frame["a"].to_numpy() < hi[ki] + size)
        total = int(cells.sum())
        window_key = np.repeat(np.arange(len(per_key)), count)
        first = np.concatenate([[0], np.cumsum(count)[:-1]])
        j = np.arange(int(count.sum())) - np.repeat(first, count)
        pos = offset[window_key] + j * hop
        out = pd.DataFrame({self.key: per_key.index.to_numpy()[window_key],
                            "window_start": lo[window_key] + j * slide})
        for col in columns:
            fill, how = _IDENTITY[col.split("_", 1)[0]]
            values = slices[col].to_numpy()
            if how != "sum":  # a slice whose values are all null has no min/max: identity
                values = np.where(np.isnan(values), fill, values)
            grid = np.full(total + width, fill, dtype=values.dtype if how == "sum" else "float64")
            grid[cell[inside]] = values[inside]
            result = _window_reduce(grid, pos, width, how)
            if how != "sum":
                result = np.where(np.isinf(result), np.nan, result)
            out[col] = result
        return out[out["rows"].to_numpy() > 0].reset_index(drop=True)


def _window_reduce(grid: np.ndarray, pos: np.ndarray, width: int, how: str) -> np.ndarray:
    """``how`` (sum, min or max) of ``grid[p : p + width]`` for every ``p`` in ``pos``.

    Integer sums use prefix sums (exact); min and max use the van Herk/Gil-Werman block scans;
    both cost O(len(grid)) whatever the width. Float sums add each window's cells in order.
    """
    if how == "sum" and grid.dtype.kind in "iu":
        prefix = np.concatenate([[0], np.cumsum(grid)])
        return prefix[pos + width] - prefix[pos]
    if how == "sum":
        view = np.lib.stride_tricks.sliding_window_view(grid, width)
        parts = [view[pos[i:i + CHUNK]].sum(axis=1) for i in range(0, len(pos), CHUNK)]
        return np.concatenate(parts) if parts else np.array([], dtype=grid.dtype)
    combine = np.minimum if how == "min" else np.maximum
    blocks = -(-len(grid) // width)
    padded = np.full(blocks * width, np.inf if how == "min" else -np.inf)
    padded[:len(grid)] = grid
    shaped = padded.reshape(blocks, width)
    forward = combine.accumulate(shaped, axis=1).ravel()
    backward = combine.accumulate(shaped[:, ::-1], axis=1)[:, ::-1].ravel()
    return combine(backward[pos], forward[pos + width - 1])


#: Partial column prefix -> (value of an empty slice, numpy reduction over a window).
_IDENTITY = {"rows": (0, "sum"), "n": (0, "sum"), "sum": (0, "sum"),
             "min": (np.inf, "min"), "max": (-np.inf, "max")}
