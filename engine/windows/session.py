"""Per-key session windows: maximal runs of events less than ``gap`` apart in event time.

A session ``[first event, last event + gap)`` is emitted once the key's watermark reaches its end;
until then an event arriving within the lateness may extend it or bridge it with the next one.
An event that could still join an emitted session would be below the watermark, hence late, so
emitted sessions never change. Partials are kept per open session (state per key: its open
sessions). Lateness and late events follow :mod:`engine.windows.tumbling`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .tumbling import KEY_ROW, TumblingWindow


class SessionWindow(TumblingWindow):
    """Session windows per key; aggregates count, sum, min, max, avg."""

    version = "1"

    @property
    def slice_us(self) -> int:
        return 1  # every distinct event time is its own partial until sessions are merged

    def _sessions(self, partials: pd.DataFrame) -> pd.DataFrame:
        """Merge partials (each spanning window_start..max_t) closer than the gap."""
        if partials.empty:
            return partials
        rows = partials.sort_values([self.key, "window_start"], kind="stable")
        rows = rows.reset_index(drop=True)
        reach = rows.groupby(self.key, sort=False)["max_t"].cummax()
        before = reach.groupby(rows[self.key], sort=False).shift(1)
        start = rows["window_start"].to_numpy(dtype="int64")
        fresh = before.isna().to_numpy() | (start - before.to_numpy() >= self.spec.size_us)
        aggs = {self.key: "first", "window_start": "min", **self._combiners()}
        sessions = rows.groupby(np.cumsum(fresh), sort=False).agg(aggs).reset_index(drop=True)
        for col in self.spec.value_columns:
            if self.spec.value_types[col] == "int":
                sessions[f"sum_{col}"] = sessions[f"sum_{col}"].round().astype("int64")
        return sessions

    def _close(self, slices: pd.DataFrame, prior: pd.Series, max_t: pd.Series
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
        sessions = self._sessions(slices)
        ends = sessions["max_t"].to_numpy(dtype="int64") + self.spec.size_us
        watermark = sessions[self.key].map(max_t).to_numpy(dtype="int64") - self.spec.lateness_us
        closed = ends <= watermark
        emitted = self._emit(sessions[closed].assign(window_end=ends[closed]))
        return emitted, sessions[~closed]

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        sessions = state[state["window_start"].to_numpy() != KEY_ROW]
        ends = sessions["max_t"].to_numpy(dtype="int64") + self.spec.size_us
        return self._emit(sessions.assign(window_end=ends))
