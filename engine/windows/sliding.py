"""Per-key sliding (hopping) windows by stream slicing.

Each event goes to exactly one slice of width ``gcd(size, slide)``; slices hold the partial
aggregates (see :mod:`engine.windows.partials`). A window ``[s, s + size)`` (``s`` a multiple of
the slide) is assembled from its ``size / slice`` slices when the key's watermark reaches its end:
prefix sums for invertible partials, van Herk/Gil-Werman scans for the others, merged value
lists for holistic ones, so the work per event does not grow with ``size / slide`` the way copying
every event into each of its windows does. A slice is dropped once the last window that contains
it has been emitted, so a key keeps at most ``size / slice`` slices (plus the ones still open
ahead of the watermark). Lateness and late events follow :mod:`engine.windows.time_window`; windows
without events emit nothing. In updates mode the open windows holding a slice that received
events in the step are assembled the same way and emitted as early rows.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..lateness import Marks
from ..ordering import END_OF_INPUT
from .segments import Columns, key_sections, take, window_sum
from .spec import WindowSpec
from .time_window import CODE, TimeWindow


class SlidingWindow(TimeWindow):
    """Sliding windows per key (see module docstring)."""

    version = "3"

    def __init__(self, spec: WindowSpec, name: str = "sliding"):
        super().__init__(spec, name)
        self.size, self.slide = spec.size_us, spec.slide_us
        self._slice = math.gcd(self.size, self.slide)

    @property
    def slice_us(self) -> int:
        return self._slice

    def _close(self, slices: Columns, touched: np.ndarray, marks: Marks
               ) -> tuple[pd.DataFrame, Columns]:
        lateness = self.spec.lateness_us
        after = marks.watermark(lateness)
        emitted = self._assemble(slices, marks.keys, marks.before - lateness, after,
                                 touched if self.updates else None)
        starts = slices["window_start"]
        last_start = starts - np.mod(starts, self.slide)  # last window holding the slice
        return emitted, take(slices, last_start + self.size > after[slices[CODE]])

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        slices, marks = self.split_state(state)
        slices[CODE] = marks.code_of(slices.pop(self.key))
        return self._assemble(slices, marks.keys, marks.before - self.spec.lateness_us,
                              np.full(len(marks.keys), END_OF_INPUT), None)

    def _assemble(self, slices: Columns, keys: np.ndarray, before: np.ndarray,
                  after: np.ndarray, touched: np.ndarray | None) -> pd.DataFrame:
        """Output rows of the windows whose end lies in ``(before, after]`` (each key's
        watermarks before and after the step, by the key codes of ``slices``: ``keys`` by code),
        assembled from ``slices``; with ``touched`` (updates mode) also early rows of the windows
        ending after ``after`` that hold a touched slice. Windows without events are left out."""
        g, size, slide = self._slice, self.size, self.slide
        width, hop = size // g, slide // g
        if not len(slices[CODE]):
            return self._empty_output()
        key_code, a = slices[CODE], slices["window_start"]
        a0, a1 = _per_key_range(key_code, a, len(keys))
        lo = np.maximum(_next_start(a0 - size, slide), _next_start(before - size, slide))
        hi = np.minimum(np.floor_divide(a1, slide) * slide,
                        np.floor_divide(after - size, slide) * slide)
        has = hi >= lo
        if touched is not None and touched.any():  # early windows: end after ``after``
            t0, t1 = _per_key_range(key_code[touched], a[touched], len(keys))
            seen = t0 <= t1
            lo_e = np.maximum(_next_start(np.where(seen, t0, 0) - size, slide),
                              _next_start(after - size, slide))
            hi_e = np.floor_divide(np.where(seen, t1, 0), slide) * slide
            early = seen & (hi_e >= lo_e)
            lo = np.where(has & early, np.minimum(lo, lo_e), np.where(early, lo_e, lo))
            hi = np.where(has & early, np.maximum(hi, hi_e), np.where(early, hi_e, hi))
            has |= early
        count = np.where(has, (hi - lo) // slide + 1, 0)  # windows per key
        cells = np.where(has, (hi + size - lo) // g, 0)
        offset, total = key_sections(cells, width)
        cell = offset[key_code] + (a - lo[key_code]) // g
        inside = has[key_code] & (a >= lo[key_code]) & (a < hi[key_code] + size)
        window_key = np.repeat(np.arange(len(keys)), count)
        first = np.concatenate([[0], np.cumsum(count)[:-1]])
        j = np.arange(int(count.sum())) - np.repeat(first, count)
        pos = offset[window_key] + j * hop
        starts = lo[window_key] + j * slide
        results = self.plan.window({c: slices[c][inside] for c in self.plan.columns()},
                                   cell[inside], total, pos, width)
        closing = starts + size <= after[window_key]
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


def _per_key_range(code: np.ndarray, values: np.ndarray, keys: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) of ``values`` per key code; a key without values gets (int64 max, int64 min)."""
    low = np.full(keys, np.iinfo(np.int64).max)
    high = np.full(keys, np.iinfo(np.int64).min)
    np.minimum.at(low, code, values)
    np.maximum.at(high, code, values)
    return low, high
