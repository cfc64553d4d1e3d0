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

from .segments import Columns, Segments
from .tumbling import CODE, Marks, TumblingWindow


class SessionWindow(TumblingWindow):
    """Session windows per key (see module docstring)."""

    version = "2"

    @property
    def slice_us(self) -> int:
        return 1  # every distinct event time is its own partial until sessions are merged

    def _sessions(self, partials: Columns, touched: np.ndarray) -> tuple[Columns, np.ndarray]:
        """Merge partials (each spanning window_start..max_t, in key and start order as
        :meth:`_merge` leaves them) closer than the gap: (sessions in key and start order,
        whether each holds a touched partial)."""
        if not len(partials[CODE]):
            return partials, touched
        key_code, start, last = partials[CODE], partials["window_start"], partials["max_t"]
        reach = pd.Series(last).groupby(key_code).cummax()
        before = reach.groupby(key_code).shift(1)
        fresh = before.isna().to_numpy() | (start - before.to_numpy() >= self.spec.size_us)
        seg = Segments.runs(np.arange(len(start)), fresh)
        sessions = {CODE: seg.first(key_code), "window_start": seg.first(start),
                    "max_t": seg.reduce(np.maximum, last)}
        sessions.update(self.plan.merge(partials, seg))
        return sessions, seg.reduce(np.maximum, touched.astype("int8")) > 0

    def _ends(self, rows: Columns) -> np.ndarray:
        return rows["max_t"] + self.spec.size_us

    def _close(self, rows: Columns, touched: np.ndarray, marks: Marks
               ) -> tuple[pd.DataFrame, Columns]:
        return super()._close(*self._sessions(rows, touched), marks)
