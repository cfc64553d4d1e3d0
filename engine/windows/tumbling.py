"""Per-key tumbling event-time windows with allowed lateness, emitted when they close.

Semantics (shared with :mod:`engine.windows.reference`): for each key, events are taken in arrival
order. The key's watermark before an event is ``max event time seen so far - lateness``. An event
whose time is below the watermark is late: it goes to the late table with a reason and is not
aggregated. A window ``[start, start + size)`` closes, and is emitted, once the watermark reaches
its end. Windows still open at the end of the input are emitted by ``finish``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pyarrow as pa

from ..catalog import COLUMN_TYPES
from ..operator import REASON, SEQ, TIME, KeyedOperator, StateCodec, StepResult
from .spec import WindowSpec

#: ``window_start`` of the per-key row that carries the key's max event time.
KEY_ROW = np.iinfo(np.int64).min
#: Max event time of a key that has seen no event.
NO_TIME = -(2**62)


def iso(us: int) -> str:
    """Microseconds since the epoch as an ISO 8601 UTC string."""
    return datetime.fromtimestamp(us / 1e6, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _micros_text(us: int) -> str:
    return f"{us / 1e6:g}s"


def split_late(batch: pd.DataFrame, prior: pd.Series, key: str, lateness: int
               ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(events sorted by key and arrival, late events with a reason, on-time events).

    ``prior`` maps a key to the max event time seen in earlier batches. An event is late when its
    time is below its key's watermark at arrival: max event time seen before it minus lateness.
    """
    events = batch.sort_values([key, SEQ], kind="stable").reset_index(drop=True)
    t = events[TIME].to_numpy(dtype="int64")
    seen = events.assign(__cm=events.groupby(key, sort=False)[TIME].cummax())
    before = seen.groupby(key, sort=False)["__cm"].shift(1, fill_value=NO_TIME)
    from_state = events[key].map(prior).fillna(NO_TIME).to_numpy(dtype="int64")
    prev = np.maximum(before.to_numpy(dtype="int64"), from_state)
    late_mask = t < prev - lateness
    late = events[late_mask].copy()
    late[REASON] = [
        f"event time {iso(ti)} is below the key's watermark {iso(pi - lateness)} "
        f"(max event time seen {iso(pi)} minus lateness {_micros_text(lateness)})"
        for ti, pi in zip(t[late_mask], prev[late_mask], strict=True)]
    return events, late, events[~late_mask]


class TumblingWindow(KeyedOperator):
    """Tumbling windows per key; aggregates count, sum, min, max, avg (see module docstring)."""

    version = "1"

    def __init__(self, spec: WindowSpec, name: str = "tumbling"):
        self.spec = spec
        self.name = name
        self.key = spec.key
        key_type = COLUMN_TYPES[spec.key_type]
        fields = [pa.field(self.key, key_type), pa.field("window_start", pa.int64()),
                  pa.field("max_t", pa.int64()), pa.field("rows", pa.int64())]
        for col in spec.value_columns:
            fields += [pa.field(f"n_{col}", pa.int64()),
                       pa.field(f"sum_{col}", self._sum_type(col)),
                       pa.field(f"min_{col}", pa.float64()), pa.field(f"max_{col}", pa.float64())]
        self.state_codec = StateCodec(pa.schema(fields), [self.key, "window_start"])
        ts = COLUMN_TYPES["timestamp"]
        out = [pa.field(self.key, key_type), pa.field("window_start", ts),
               pa.field("window_end", ts)]
        for agg in spec.aggregates:
            if agg.fn == "count":
                typ = pa.int64()
            elif agg.fn == "sum":
                typ = self._sum_type(agg.column)
            else:
                typ = pa.float64()
            out.append(pa.field(agg.name, typ))
        self.output_schema = pa.schema(out)
        self.output_keys = [self.key, "window_start"]

    def _sum_type(self, col: str | None) -> pa.DataType:
        return pa.int64() if self.spec.value_types.get(col) == "int" else pa.float64()

    # -- state layout -------------------------------------------------------------------------

    def init(self) -> pd.DataFrame:
        return self.state_codec.schema.empty_table().to_pandas()

    def _partials(self, events: pd.DataFrame, starts: np.ndarray) -> pd.DataFrame:
        """Partial aggregates of ``events`` per (key, window start)."""
        frame = pd.DataFrame({self.key: events[self.key].to_numpy(), "window_start": starts})
        aggs: dict[str, tuple[str, str]] = {"rows": ("window_start", "size"),
                                            "max_t": ("window_start", "max")}
        for col in self.spec.value_columns:
            vals = events[col].astype("float64")
            frame[f"v_{col}"] = vals.to_numpy()
            aggs[f"n_{col}"] = (f"v_{col}", "count")
            aggs[f"sum_{col}"] = (f"v_{col}", "sum")
            aggs[f"min_{col}"] = (f"v_{col}", "min")
            aggs[f"max_{col}"] = (f"v_{col}", "max")
        return frame.groupby([self.key, "window_start"], sort=False).agg(**aggs).reset_index()

    def _merge(self, old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
        """Combine partials of the same window (the aggregate monoid's product)."""
        both = pd.concat([old, new], ignore_index=True)
        merged = both.groupby([self.key, "window_start"], sort=False).agg(
            self._combiners()).reset_index()
        for col in self.spec.value_columns:
            if self.spec.value_types[col] == "int":
                merged[f"sum_{col}"] = merged[f"sum_{col}"].round().astype("int64")
        return merged

    def _combiners(self) -> dict[str, str]:
        """How partial columns combine (the aggregate monoid's product, column by column).

        ``max_t`` of a partial row is the latest event time it holds (the slice start for
        tumbling and sliding windows, whose slices are keyed by start).
        """
        aggs = {"rows": "sum", "max_t": "max"}
        for col in self.spec.value_columns:
            aggs.update({f"n_{col}": "sum", f"sum_{col}": "sum", f"min_{col}": "min",
                         f"max_{col}": "max"})
        return aggs

    def _emit(self, windows: pd.DataFrame) -> pd.DataFrame:
        starts = windows["window_start"].to_numpy(dtype="int64")
        ends = (windows["window_end"].to_numpy(dtype="int64") if "window_end" in windows
                else starts + self.spec.size_us)
        out = pd.DataFrame({self.key: windows[self.key].to_numpy(), "window_start": starts,
                            "window_end": ends})
        for agg in self.spec.aggregates:
            col = agg.column
            if agg.fn == "count":
                out[agg.name] = (windows["rows"] if col is None else windows[f"n_{col}"]).to_numpy()
                continue
            n = windows[f"n_{col}"].to_numpy()
            if agg.fn == "sum":
                values = windows[f"sum_{col}"].astype("float64" if (n == 0).any() else
                                                      windows[f"sum_{col}"].dtype)
                out[agg.name] = values.where(n > 0).to_numpy()
            elif agg.fn == "avg":
                total = windows[f"sum_{col}"].to_numpy(dtype="float64")
                out[agg.name] = np.where(n > 0, total / np.maximum(n, 1), np.nan)
            else:
                out[agg.name] = windows[f"{agg.fn}_{col}"].to_numpy(dtype="float64")
        return out.sort_values([self.key, "window_start"], kind="stable").reset_index(drop=True)

    def _empty_output(self) -> pd.DataFrame:
        return self._emit(self.init())

    # -- the operator -------------------------------------------------------------------------

    #: Width of the slices that partial aggregates are kept for (a tumbling window is a slice).
    @property
    def slice_us(self) -> int:
        return self.spec.size_us

    def _close(self, slices: pd.DataFrame, prior: pd.Series, max_t: pd.Series
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(windows emitted now, slices kept): windows close once the watermark reaches them."""
        watermark = slices[self.key].map(max_t).to_numpy(dtype="int64") - self.spec.lateness_us
        closed = slices["window_start"].to_numpy(dtype="int64") + self.spec.size_us <= watermark
        return self._emit(slices[closed]), slices[~closed]

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        key, lateness, size = self.key, self.spec.lateness_us, self.slice_us
        if batch.empty:
            return StepResult(state, self._empty_output(), batch.assign(**{REASON: ""}).iloc[:0])
        is_key_row = state["window_start"].to_numpy() == KEY_ROW
        windows = state[~is_key_row]
        prior = pd.Series(state.loc[is_key_row, "max_t"].to_numpy(dtype="int64"),
                          index=state.loc[is_key_row, key].to_numpy())

        events, late, on_time = split_late(batch, prior, key, lateness)
        starts = on_time[TIME].to_numpy(dtype="int64")
        starts = starts - np.mod(starts, size)
        windows = self._merge(windows, self._partials(on_time, starts))

        batch_max = events.groupby(key, sort=False)[TIME].max()
        max_t = pd.concat([prior, batch_max]).groupby(level=0, sort=False).max()
        emitted, kept = self._close(windows, prior, max_t)

        key_rows = pd.DataFrame({key: max_t.index.to_numpy(), "window_start": KEY_ROW,
                                 "max_t": max_t.to_numpy(dtype="int64"), "rows": 0})
        for col in self.spec.value_columns:
            key_rows[f"n_{col}"] = 0
            key_rows[f"sum_{col}"] = 0
            key_rows[f"min_{col}"] = np.nan
            key_rows[f"max_{col}"] = np.nan
        new_state = pd.concat([key_rows, kept], ignore_index=True)
        new_state = new_state[self.state_codec.schema.names]
        late = late.sort_values(SEQ, kind="stable").reset_index(drop=True)
        return StepResult(new_state, emitted, late)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        return self._emit(state[state["window_start"].to_numpy() != KEY_ROW])
