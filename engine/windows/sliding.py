"""Per-key sliding (hopping) windows by stream slicing.

Each event goes to exactly one slice of width ``gcd(size, slide)``; slices hold the partial
aggregates (see :mod:`engine.windows.partials`). A window ``[s, s + size)`` (``s`` a multiple of
the slide) is assembled from its ``size / slice`` slices when the key's watermark reaches its end:
prefix sums for invertible partials, van Herk/Gil-Werman scans for the others, merged value
lists for holistic ones, so the work per event does not grow with ``size / slide`` the way copying
every event into each of its windows does. A slice is dropped once the last window that contains
it has been emitted, so a key keeps at most ``size / slice`` slices (plus the ones still open
ahead of the watermark). Lateness and late events follow :mod:`engine.windows.tumbling`; windows
without events emit nothing. In updates mode the open windows holding a slice that received
events in the step are assembled the same way and emitted as early rows.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .aggregates import columns_of
from .segments import window_sum
from .spec import WindowSpec
from .tumbling import KEY_ROW, NO_TIME, TumblingWindow

#: Watermark used by ``finish``: every window containing an event closes.
END_OF_INPUT = 2**62


class SlidingWindow(TumblingWindow):
    """Sliding windows per key (see module docstring)."""

    version = "2"

    def __init__(self, spec: WindowSpec, name: str = "sliding"):
        super().__init__(spec, name)
        self._slice = math.gcd(spec.size_us, spec.slide)

    @property
    def slice_us(self) -> int:
        return self._slice

    def _close(self, slices: pd.DataFrame, touched: np.ndarray, prior: pd.Series,
               max_t: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
        lateness = self.spec.lateness_us
        before = slices[self.key].map(prior).fillna(NO_TIME).to_numpy(dtype="int64") - lateness
        after = slices[self.key].map(max_t).to_numpy(dtype="int64") - lateness
        emitted = self._assemble(slices, before, after, touched if self.updates else None)
        starts = slices["window_start"].to_numpy(dtype="int64")
        last_start = starts - np.mod(starts, self.spec.slide)  # last window holding the slice
        return emitted, slices[last_start + self.spec.size_us > after]

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        is_key = state["window_start"].to_numpy() == KEY_ROW
        slices = state[~is_key]
        prior = pd.Series(state.loc[is_key, "max_t"].to_numpy(dtype="int64"),
                          index=state.loc[is_key, self.key].to_numpy())
        before = slices[self.key].map(prior).to_numpy(dtype="int64") - self.spec.lateness_us
        return self._assemble(slices, before, np.full(len(slices), END_OF_INPUT), None)

    def _assemble(self, slices: pd.DataFrame, before: np.ndarray, after: np.ndarray,
                  touched: np.ndarray | None) -> pd.DataFrame:
        """Output rows of the windows whose end lies in ``(before, after]`` (per slice row: its
        key's watermarks before and after the step), assembled from ``slices``; with
        ``touched`` (updates mode) also early rows of the windows ending after ``after`` that
        hold a touched slice. Windows without events are left out."""
        g, size, slide = self._slice, self.spec.size_us, self.spec.slide
        width, hop = size // g, slide // g
        if slices.empty:
            return self._empty_output()
        key_code, keys = pd.factorize(slices[self.key].to_numpy())
        a = slices["window_start"].to_numpy(dtype="int64")
        frame = pd.DataFrame({"k": key_code, "a": a, "before": before, "after": after})
        per_key = frame.groupby("k", sort=True).agg(a0=("a", "min"), a1=("a", "max"),
                                                   before=("before", "first"),
                                                   after=("after", "first"))
        key_after = per_key["after"].to_numpy()
        lo = np.maximum(_next_start(per_key["a0"].to_numpy() - size, slide),
                        _next_start(per_key["before"].to_numpy() - size, slide))
        hi = np.minimum(np.floor_divide(per_key["a1"].to_numpy(), slide) * slide,
                        np.floor_divide(key_after - size, slide) * slide)
        has = hi >= lo
        if touched is not None and touched.any():  # early windows: end after ``after``
            fresh = frame[touched].groupby("k").agg(t0=("a", "min"), t1=("a", "max"))
            t0 = fresh["t0"].reindex(per_key.index).to_numpy()
            t1 = fresh["t1"].reindex(per_key.index).to_numpy()
            seen = ~np.isnan(t0)
            lo_e = np.maximum(_next_start(np.nan_to_num(t0).astype("int64") - size, slide),
                              _next_start(key_after - size, slide))
            hi_e = np.floor_divide(np.nan_to_num(t1).astype("int64"), slide) * slide
            early = seen & (hi_e >= lo_e)
            lo = np.where(has & early, np.minimum(lo, lo_e), np.where(early, lo_e, lo))
            hi = np.where(has & early, np.maximum(hi, hi_e), np.where(early, hi_e, hi))
            has |= early
        count = np.where(has, (hi - lo) // slide + 1, 0)  # windows per key
        cells = np.where(has, (hi + size - lo) // g, 0)
        offset = np.concatenate([[0], np.cumsum(cells)[:-1]])
        cell = offset[key_code] + (a - lo[key_code]) // g
        inside = has[key_code] & (a >= lo[key_code]) & (a < hi[key_code] + size)
        total = int(cells.sum())
        window_key = np.repeat(np.arange(len(per_key)), count)
        first = np.concatenate([[0], np.cumsum(count)[:-1]])
        j = np.arange(int(count.sum())) - np.repeat(first, count)
        pos = offset[window_key] + j * hop
        starts = lo[window_key] + j * slide
        results = self.plan.window(columns_of(slices[inside], self.plan.columns()),
                                   cell[inside], total, pos, width)
        closing = starts + size <= key_after[window_key]
        final = closing & (results["rows"] > 0)
        frames = [self._emit(keys[window_key[final]], starts[final], starts[final] + size,
                             {n: v[final] for n, v in results.items()}, final=True)]
        if touched is not None:
            marks = np.zeros(total + width, dtype="int64")
            marks[cell[inside & touched]] = 1
            early = ~closing & (window_sum(marks, pos, width) > 0)
            frames.append(self._emit(keys[window_key[early]], starts[early],
                                     starts[early] + size,
                                     {n: v[early] for n, v in results.items()}, final=False))
        return self._output(frames)


def _next_start(t: np.ndarray, slide: int) -> np.ndarray:
    """The least multiple of ``slide`` above ``t``."""
    return (np.floor_divide(t, slide) + 1) * slide
