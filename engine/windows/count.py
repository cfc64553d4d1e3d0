"""Per-key count windows: every ``every`` events, an aggregate over the last ``size`` events.

Events are counted in (event time, arrival) order per key: on-time events wait until the key's
watermark (max event time seen minus lateness) reaches them, exactly as the QRE operator buffers
them, so disorder within the lateness does not change which events share a window. After the
k-th released event of a key, if k is a multiple of ``every``, the window of the last
``min(size, k)`` events is emitted (``position`` = k, ``window_start`` / ``window_end`` = event
times of its first and last event). Events left over at the end of the input that do not
complete a multiple of ``every`` emit nothing. State per key: the buffered events, the last
``size - 1`` released events and the released count, so it is bounded by the window and the
lateness.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..catalog import COLUMN_TYPES
from ..operator import SEQ, TIME, StateCodec, StepResult
from .spec import WindowSpec
from .tumbling import NO_TIME, TumblingWindow, split_late

KEY, TAIL, PENDING = 0, 1, 2  # role of a state row
END_OF_INPUT = 2**62


class CountWindow(TumblingWindow):
    """Count windows per key (see module docstring); aggregates as for time windows."""

    version = "1"

    def __init__(self, spec: WindowSpec, name: str = "count"):
        super().__init__(spec, name)
        fields = [pa.field(self.key, COLUMN_TYPES[spec.key_type]), pa.field("role", pa.int64()),
                  pa.field("t", pa.int64()), pa.field("seq", pa.int64()),
                  pa.field("released", pa.int64())]
        fields += [pa.field(f"v_{c}", pa.float64()) for c in spec.value_columns]
        self.state_codec = StateCodec(pa.schema(fields), [self.key, "role", "t", "seq"])
        self.output_schema = self.output_schema.insert(3, pa.field("position", pa.int64()))
        self.output_keys = [self.key, "position"]

    @property
    def size(self) -> int:
        return self.spec.size_us  # a count of events for count windows

    @property
    def every(self) -> int:
        return self.spec.slide

    def _empty_output(self) -> pd.DataFrame:
        return pd.DataFrame(columns=self.output_schema.names)

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        keys = state[state["role"] == KEY]
        prior = pd.Series(keys["t"].to_numpy(dtype="int64"), index=keys[self.key].to_numpy())
        _, late, on_time = split_late(batch, prior, self.key, self.spec.lateness_us)
        arrived = pd.DataFrame({self.key: on_time[self.key].to_numpy(), "role": PENDING,
                                "t": on_time[TIME].to_numpy(dtype="int64"),
                                "seq": on_time[SEQ].to_numpy(dtype="int64"), "released": 0})
        for col in self.spec.value_columns:
            arrived[f"v_{col}"] = on_time[col].astype("float64").to_numpy()
        max_t = pd.concat([prior, arrived.groupby(self.key, sort=False)["t"].max()]).groupby(
            level=0, sort=False).max()
        rows = pd.concat([state[state["role"] != KEY], arrived], ignore_index=True)
        output, kept, released = self._release(rows, keys, max_t - self.spec.lateness_us)
        key_rows = pd.DataFrame({self.key: max_t.index.to_numpy(), "role": KEY,
                                 "t": max_t.to_numpy(dtype="int64"), "seq": 0})
        key_rows["released"] = key_rows[self.key].map(released).fillna(0).astype("int64")
        for col in self.spec.value_columns:
            key_rows[f"v_{col}"] = np.nan
        new_state = pd.concat([key_rows, kept], ignore_index=True)[self.state_codec.schema.names]
        return StepResult(new_state, output, late.reset_index(drop=True))

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        keys = state[state["role"] == KEY]
        watermark = pd.Series(END_OF_INPUT, index=keys[self.key].to_numpy())
        return self._release(state[state["role"] != KEY], keys, watermark)[0]

    def _release(self, rows: pd.DataFrame, keys: pd.DataFrame, watermark: pd.Series
                 ) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
        """Release buffered events up to each key's watermark and emit the windows they
        complete: (output, kept tail and pending rows, released count per key)."""
        counts = pd.Series(keys["released"].to_numpy(dtype="int64"),
                           index=keys[self.key].to_numpy())
        mark = rows[self.key].map(watermark).fillna(NO_TIME).to_numpy(dtype="int64")
        ready = (rows["role"].to_numpy() == TAIL) | (rows["t"].to_numpy(dtype="int64") <= mark)
        waiting = rows[~ready]
        seq = rows[ready].sort_values([self.key, "role", "t", "seq"], kind="stable")
        # tail rows (role 1) precede released ones (role 2) of the same key
        seq = seq.reset_index(drop=True)
        is_new = (seq["role"] == PENDING).to_numpy()
        before = seq[self.key].map(counts).fillna(0).to_numpy(dtype="int64")
        new_rank = seq.assign(__n=is_new.astype("int64")).groupby(
            self.key, sort=False)["__n"].cumsum().to_numpy()
        position = before + new_rank
        emit = is_new & (position % self.every == 0)
        grouped = seq.groupby(self.key, sort=False)
        window = {"rows": grouped["t"].rolling(self.size, min_periods=1).count(),
                  "window_start": grouped["t"].rolling(self.size, min_periods=1).min()}
        for col in self.spec.value_columns:
            roll = grouped[f"v_{col}"].rolling(self.size, min_periods=1)
            window.update({f"n_{col}": roll.count(), f"sum_{col}": roll.sum(),
                           f"min_{col}": roll.min(), f"max_{col}": roll.max()})
        frame = pd.DataFrame({k: v.reset_index(level=0, drop=True).sort_index().to_numpy()
                              for k, v in window.items()})
        frame[self.key] = seq[self.key].to_numpy()
        frame["window_end"] = seq["t"].to_numpy()
        frame["position"] = position
        frame = frame[emit]
        frame["rows"] = frame["rows"].astype("int64")
        frame["window_start"] = frame["window_start"].astype("int64")
        for col in self.spec.value_columns:
            frame[f"n_{col}"] = frame[f"n_{col}"].astype("int64")
            frame[f"sum_{col}"] = frame[f"sum_{col}"].fillna(0)
            if self.spec.value_types[col] == "int":
                frame[f"sum_{col}"] = frame[f"sum_{col}"].round().astype("int64")
        output = self._emit(frame)
        output.insert(3, "position", frame.sort_values(
            [self.key, "window_start"], kind="stable")["position"].to_numpy())
        output = output.sort_values([self.key, "position"], kind="stable").reset_index(drop=True)
        tail = seq.assign(role=TAIL).groupby(self.key, sort=False).tail(self.size - 1)
        kept = pd.concat([tail, waiting], ignore_index=True)
        released = counts.add(pd.Series(is_new.astype("int64")).groupby(
            seq[self.key].to_numpy()).sum(), fill_value=0)
        return output, kept, released
