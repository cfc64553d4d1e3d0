"""Per-key session windows: maximal runs of events less than ``gap`` apart in event time.

A session ``[first event, last event + gap)`` is emitted once the key's watermark reaches its end;
until then an event arriving within the lateness may extend it or bridge it with the next one.
An event that could still join an emitted session would be below the watermark, hence late, so
emitted sessions never change. Partials are kept per open session (state per key: its open
sessions). Lateness and late events follow :mod:`engine.windows.tumbling`. In updates mode an
open session that received events in the step is emitted as an early row with its current start
and end (a later event may still extend it or merge it with a neighbour).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .aggregates import columns_of
from .segments import Segments, codes
from .tumbling import TumblingWindow


class SessionWindow(TumblingWindow):
    """Session windows per key (see module docstring)."""

    version = "2"

    @property
    def slice_us(self) -> int:
        return 1  # every distinct event time is its own partial until sessions are merged

    def _sessions(self, partials: pd.DataFrame, touched: np.ndarray
                  ) -> tuple[pd.DataFrame, np.ndarray]:
        """Merge partials (each spanning window_start..max_t) closer than the gap: (sessions,
        whether each holds a touched partial)."""
        if partials.empty:
            return partials, touched
        keys = partials[self.key].to_numpy()
        key_code = codes(keys)
        start = partials["window_start"].to_numpy(dtype="int64")
        last = partials["max_t"].to_numpy(dtype="int64")
        order = np.lexsort((start, key_code))
        sorted_key = key_code[order]
        reach = pd.Series(last[order]).groupby(sorted_key).cummax()
        before = reach.groupby(sorted_key).shift(1)
        fresh = before.isna().to_numpy() | (start[order] - before.to_numpy() >= self.spec.size_us)
        seg = Segments.runs(order, fresh)
        sessions = {self.key: seg.first(keys), "window_start": seg.first(start),
                    "max_t": seg.reduce(np.maximum, last)}
        sessions.update(self.plan.merge(columns_of(partials, self.plan.columns()), seg))
        return pd.DataFrame(sessions), seg.reduce(np.maximum, touched.astype("int8")) > 0

    def _close(self, slices: pd.DataFrame, touched: np.ndarray, prior: pd.Series,
               max_t: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
        sessions, touched = self._sessions(slices, touched)
        ends = sessions["max_t"].to_numpy(dtype="int64") + self.spec.size_us
        return self._emit_closed(sessions, ends, touched, max_t)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        sessions, _ = self._split_state(state)
        ends = sessions["max_t"].to_numpy(dtype="int64") + self.spec.size_us
        return self._output([self._windows(sessions, ends, final=True)])
