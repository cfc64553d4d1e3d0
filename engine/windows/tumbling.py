"""Per-key tumbling event-time windows with allowed lateness, emitted when they close.

Semantics (shared with :mod:`engine.windows.reference`): for each key, events are taken in arrival
order. The key's watermark before an event is ``max event time seen so far - lateness``. An event
whose time is below the watermark is late: it goes to the late table with a reason and is not
aggregated. A window ``[start, start + size)`` closes, and is emitted, once the watermark reaches
its end. Windows still open at the end of the input are emitted by ``finish``. Windows without
on-time events emit nothing. Watermarks are per key, so a key that first appears late in the
recording is not late: its first event starts its own watermark.

With ``emit: updates`` every step also emits an early row (``final`` false) for each window that
received on-time events in the step and is still open after it: its aggregates over the events
seen so far. The row at close (``final`` true) is the close-mode row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..catalog import COLUMN_TYPES
from ..operator import REASON, SEQ, TIME, KeyedOperator, StateCodec, StepResult
from ..ordering import max_before, order_by_code
from .aggregates import Plan, columns_of
from .segments import Columns, Segments, codes
from .spec import WindowSpec

#: ``window_start`` of the per-key row that carries the key's max event time.
KEY_ROW = np.iinfo(np.int64).min
#: Max event time of a key that has seen no event.
NO_TIME = -(2**62)


def isos(us: np.ndarray) -> np.ndarray:
    """Microseconds since the epoch as ISO 8601 UTC strings (``...T00:04:10.026326Z``)."""
    return np.datetime_as_string(us.astype("datetime64[us]"), unit="us", timezone="UTC")


def _micros_text(us: int) -> str:
    return f"{us / 1e6:g}s"


def split_late(batch: pd.DataFrame, prior: pd.Series, key: str, lateness: int,
               keep: list[str] | None = None) -> tuple[pd.Series, pd.DataFrame, pd.DataFrame]:
    """(max event time per key in the batch, late events with a reason, on-time events sorted by
    key and arrival, with those of the columns ``keep`` it has when given).

    ``prior`` maps a key to the max event time seen in earlier batches. An event is late when its
    time is below its key's watermark at arrival: max event time seen before it minus lateness.
    """
    code, uniques = pd.factorize(batch[key].to_numpy(), sort=True)
    order = order_by_code(code, batch[SEQ].to_numpy(dtype="int64"))
    c, t = code[order], batch[TIME].to_numpy(dtype="int64")[order]
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]]) if len(c) else c
    from_state = prior.reindex(uniques).fillna(NO_TIME).to_numpy(dtype="int64")
    prev, _ = max_before(c, t, from_state)
    late_mask = t < prev - lateness
    late = batch.take(order[late_mask]).reset_index(drop=True)
    t_late, prev_late, text = t[late_mask], prev[late_mask], _micros_text(lateness)
    late[REASON] = [
        f"event time {ti} is below the key's watermark {wi} (max event time seen {pi} minus "
        f"lateness {text})" for ti, wi, pi in zip(
            isos(t_late), isos(prev_late - lateness), isos(prev_late), strict=True)]
    batch_max = pd.Series(np.maximum.reduceat(t, starts) if len(t) else t,
                          index=uniques[c[starts]])
    if keep is not None:
        batch = batch[[c for c in keep if c in batch.columns]]
    on_time = batch.take(order[~late_mask])
    return batch_max, late, on_time.reset_index(drop=True)


def key_max(prior: pd.Series, batch_max: pd.Series) -> pd.Series:
    """Max event time per key after a batch (``prior``: before it; ``batch_max``: in it)."""
    if prior.empty:
        return batch_max
    return pd.concat([prior, batch_max]).groupby(level=0, sort=False).max()


class TumblingWindow(KeyedOperator):
    """Tumbling windows per key, every aggregate of :mod:`engine.windows.aggregates`."""

    version = "2"

    def __init__(self, spec: WindowSpec, name: str = "tumbling"):
        self.spec = spec
        self.name = name
        self.key = spec.key
        self.plan = Plan(spec)
        key_type = COLUMN_TYPES[spec.key_type]
        fields = [pa.field(self.key, key_type), pa.field("window_start", pa.int64()),
                  pa.field("max_t", pa.int64()), *self.plan.fields()]
        self.state_codec = StateCodec(pa.schema(fields), [self.key, "window_start"])
        ts = COLUMN_TYPES["timestamp"]
        out = [pa.field(self.key, key_type), pa.field("window_start", ts),
               pa.field("window_end", ts), *self.plan.output_fields()]
        if self.updates:
            out.append(pa.field("final", pa.bool_()))
        self.output_schema = pa.schema(out)
        #: A final row is unique per window; early rows per (window, batch): the runner's
        #: ``batch`` column completes the key in updates mode.
        self.output_keys = [self.key, "window_start", *(["final", "batch"] if self.updates
                                                         else [])]

    @property
    def codes_keys(self) -> bool:
        """Key codes are fine unless an aggregate reads the key column's values."""
        return self.key not in self.spec.value_types

    @property
    def event_columns(self) -> list[str]:
        """The columns of an event that the operator reads: key, arrival, time, values."""
        return list(dict.fromkeys([self.key, SEQ, TIME, *self.spec.value_columns]))

    @property
    def updates(self) -> bool:
        return self.spec.emit == "updates"

    #: Width of the slices that partial aggregates are kept for (a tumbling window is a slice).
    @property
    def slice_us(self) -> int:
        return self.spec.size_us

    # -- partials -----------------------------------------------------------------------------

    def init(self) -> pd.DataFrame:
        return self.state_codec.schema.empty_table().to_pandas()

    def _partials(self, events: pd.DataFrame, starts: np.ndarray) -> pd.DataFrame:
        """Partial aggregates of ``events`` per (key, slice start)."""
        keys = events[self.key].to_numpy()
        seg = Segments.by(codes(keys), starts)
        frame = {self.key: seg.first(keys), "window_start": seg.first(starts),
                 "max_t": seg.reduce(np.maximum, starts)}
        frame.update(self.plan.of_events(events, seg))
        return pd.DataFrame(frame)

    def _merge(self, old: pd.DataFrame, new: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
        """(partials of ``old`` and ``new`` merged per (key, window_start), whether each merged
        row holds events of ``new``)."""
        if old.empty or new.empty:
            frame = new if old.empty else old
            return frame.reset_index(drop=True), np.full(len(frame), old.empty)
        both = pd.concat([old, new], ignore_index=True)
        fresh = np.repeat([0, 1], [len(old), len(new)]).astype("int8")
        keys, starts = both[self.key].to_numpy(), both["window_start"].to_numpy(dtype="int64")
        seg = Segments.by(codes(keys), starts)
        merged = {self.key: seg.first(keys), "window_start": seg.first(starts),
                  "max_t": seg.reduce(np.maximum, both["max_t"].to_numpy(dtype="int64"))}
        merged.update(self.plan.merge(columns_of(both, self.plan.columns()), seg))
        return pd.DataFrame(merged), seg.reduce(np.maximum, fresh) > 0

    def _key_rows(self, max_t: pd.Series) -> pd.DataFrame:
        n = len(max_t)
        return pd.DataFrame({self.key: max_t.index.to_numpy(),
                             "window_start": np.full(n, KEY_ROW, dtype="int64"),
                             "max_t": max_t.to_numpy(dtype="int64"), **self.plan.empty(n)})

    # -- output -------------------------------------------------------------------------------

    def _emit(self, keys: np.ndarray, starts: np.ndarray, ends: np.ndarray, results: Columns,
              final: bool) -> pd.DataFrame:
        """Output rows of windows from their partial results."""
        columns = {self.key: keys, "window_start": starts, "window_end": ends,
                   **self.plan.finish(results)}
        if self.updates:
            columns["final"] = np.full(len(keys), final)
        return pd.DataFrame(columns)

    def _windows(self, rows: pd.DataFrame, ends: np.ndarray, final: bool) -> pd.DataFrame:
        """Output rows of windows that are each one partial row."""
        n = np.arange(len(rows))
        results = self.plan.window(columns_of(rows, self.plan.columns()), n, len(rows), n, 1)
        return self._emit(rows[self.key].to_numpy(), rows["window_start"].to_numpy(
            dtype="int64"), ends, results, final)

    def _output(self, frames: list[pd.DataFrame]) -> pd.DataFrame:
        """Rows of ``frames`` in (key, window start) order, final rows after early ones."""
        frames = [f for f in frames if not f.empty]
        if not frames:
            return self._empty_output()
        out = pd.concat(frames, ignore_index=True)
        order = [self.key, "window_start", *(["final"] if self.updates else [])]
        return out.sort_values(order, kind="stable").reset_index(drop=True)

    def _empty_output(self) -> pd.DataFrame:
        return pd.DataFrame({name: np.zeros(0, dtype=object) for name in self.output_schema.names})

    # -- the operator -------------------------------------------------------------------------

    def _close(self, slices: pd.DataFrame, touched: np.ndarray, prior: pd.Series,
               max_t: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(rows emitted now, slices kept): windows close once the watermark reaches them."""
        ends = slices["window_start"].to_numpy(dtype="int64") + self.spec.size_us
        return self._emit_closed(slices, ends, touched, max_t)

    def _emit_closed(self, rows: pd.DataFrame, ends: np.ndarray, touched: np.ndarray,
                     max_t: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(output rows, rows kept) for windows that are each one row of ``rows`` ending at
        ``ends``: a window closes once its key's watermark (``max_t`` minus lateness) reaches its
        end; in updates mode an open window that ``touched`` marks also emits an early row."""
        watermark = rows[self.key].map(max_t).to_numpy(dtype="int64") - self.spec.lateness_us
        closed = ends <= watermark
        frames = [self._windows(rows[closed], ends[closed], final=True)]
        if self.updates:
            early = ~closed & touched
            frames.append(self._windows(rows[early], ends[early], final=False))
        return self._output(frames), rows[~closed]

    def _split_state(self, state: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
        """(the window rows of ``state``, max event time per key from its key rows)."""
        is_key_row = state["window_start"].to_numpy() == KEY_ROW
        prior = pd.Series(state.loc[is_key_row, "max_t"].to_numpy(dtype="int64"),
                          index=state.loc[is_key_row, self.key].to_numpy())
        return state[~is_key_row], prior

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        key, lateness, size = self.key, self.spec.lateness_us, self.slice_us
        if batch.empty:
            return StepResult(state, self._empty_output(), batch.assign(**{REASON: ""}).iloc[:0])
        windows, prior = self._split_state(state)
        batch_max, late, on_time = split_late(batch, prior, key, lateness, self.event_columns)
        starts = on_time[TIME].to_numpy(dtype="int64")
        starts = starts - np.mod(starts, size)
        slices, touched = self._merge(windows, self._partials(on_time, starts))

        max_t = key_max(prior, batch_max)
        emitted, kept = self._close(slices, touched, prior, max_t)
        new_state = pd.concat([self._key_rows(max_t), kept], ignore_index=True)
        new_state = new_state[self.state_codec.schema.names]
        late = late.sort_values(SEQ, kind="stable").reset_index(drop=True)
        return StepResult(new_state, emitted, late)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        windows, _ = self._split_state(state)
        ends = windows["window_start"].to_numpy(dtype="int64") + self.spec.size_us
        return self._output([self._windows(windows, ends, final=True)])
