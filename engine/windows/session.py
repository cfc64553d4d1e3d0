"""Per-key session windows: maximal runs of events less than ``gap`` apart in event time.

A session ``[first event, last event + gap)`` is emitted once the key's watermark reaches its end;
until then an event arriving within the lateness may extend it or bridge it with the next one.
An event that could still join an emitted session would be below the watermark, hence late, so
emitted sessions never change. Partials are kept per open session (state per key: its open
sessions). Lateness and late events follow :mod:`engine.windows.time_window`. In updates mode an
open session that received events in the step is emitted as an early row with its current start
and end (a later event may still extend it or merge it with a neighbour).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..lateness import Marks
from .segments import Columns, Segments
from .spec import WindowSpec
from .time_window import CODE, TimeWindow


class SessionWindow(TimeWindow):
    """Session windows per key (see module docstring)."""

    version = "3"

    def __init__(self, spec: WindowSpec, name: str = "session"):
        super().__init__(spec, name)
        self.gap = spec.gap_us

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
        fresh = before.isna().to_numpy() | (start - before.to_numpy() >= self.gap)
        seg = Segments.runs(np.arange(len(start)), fresh)
        sessions = {CODE: seg.first(key_code), "window_start": seg.first(start),
                    "max_t": seg.reduce(np.maximum, last)}
        sessions.update(self.plan.merge(partials, seg))
        return sessions, seg.reduce(np.maximum, touched.astype("int8")) > 0

    def _ends(self, rows: Columns) -> np.ndarray:
        """Where each session ends: its last event time plus the gap."""
        return rows["max_t"] + self.gap

    def _close(self, rows: Columns, touched: np.ndarray, marks: Marks
               ) -> tuple[pd.DataFrame, Columns]:
        sessions, touched = self._sessions(rows, touched)
        return self._emit_closed(sessions, self._ends(sessions), touched, marks)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        return self._flush(state, self._ends)
