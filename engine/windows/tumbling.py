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

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from ..catalog import COLUMN_TYPES
from ..operator import REASON, SEQ, TIME, KeyedOperator, StateCodec, StepResult
from ..ordering import NO_TIME, max_before, order_by_code
from .aggregates import Plan
from .segments import Columns, Segments, take
from .spec import WindowSpec

#: ``window_start`` of the per-key row that carries the key's max event time.
KEY_ROW = np.iinfo(np.int64).min
#: The column of a window row that holds its key's code (an index into :attr:`Marks.keys`).
CODE = "__code"


def isos(us: np.ndarray) -> np.ndarray:
    """Microseconds since the epoch as ISO 8601 UTC strings (``...T00:04:10.026326Z``)."""
    return np.datetime_as_string(us.astype("datetime64[us]"), unit="us", timezone="UTC")


def _micros_text(us: int) -> str:
    return f"{us / 1e6:g}s"


@dataclass(frozen=True)
class Marks:
    """Each key's max event time before and after a step, by key code: a code indexes ``keys``
    (distinct and sorted, so codes sort like the keys); ``NO_TIME`` for a key without events."""

    keys: np.ndarray
    before: np.ndarray
    after: np.ndarray

    @classmethod
    def of(cls, keys: np.ndarray, max_t: np.ndarray) -> Marks:
        """The marks of ``keys`` with their max event times (before and after alike)."""
        code, distinct = pd.factorize(keys, sort=True)
        times = np.full(len(distinct), NO_TIME, dtype="int64")
        times[code] = max_t
        return cls(distinct, times, times)

    def code_of(self, keys: np.ndarray) -> np.ndarray:
        """The code of each of ``keys`` (all of them among :attr:`keys`)."""
        return np.searchsorted(self.keys, keys)


@dataclass(frozen=True)
class Arrivals:
    """A batch split by lateness (see :func:`split_late`)."""

    marks: Marks
    late: pd.DataFrame  # late events with a reason, in arrival order
    on_time: pd.DataFrame  # on-time events, by key and arrival
    code: np.ndarray  # the key code of each on-time event


def split_late(batch: pd.DataFrame, prior: Marks, key: str, lateness: int,
               keep: list[str] | None = None) -> Arrivals:
    """Split ``batch`` into late and on-time events (the on-time ones with those of the columns
    ``keep`` it has, when given); ``prior.after``: each key's max event time before the batch.

    An event is late when its time is below its key's watermark at arrival: max event time seen
    before it minus lateness.
    """
    values = batch[key].to_numpy()
    code, keys = pd.factorize(np.concatenate([prior.keys, values]) if len(prior.keys) else values,
                              sort=True)
    before = np.full(len(keys), NO_TIME, dtype="int64")
    before[code[:len(prior.keys)]] = prior.after
    code = code[len(prior.keys):]
    seq = batch[SEQ].to_numpy(dtype="int64")
    order = order_by_code(code, seq)
    c, t = code[order], batch[TIME].to_numpy(dtype="int64")[order]
    prev, running = max_before(c, t, before)
    after = before.copy()
    last = np.flatnonzero(np.r_[c[1:] != c[:-1], True]) if len(c) else c
    after[c[last]] = np.maximum(before[c[last]], running[last])
    late_mask = t < prev - lateness
    on_time = order[~late_mask] if late_mask.any() else order
    columns = [n for n in keep if n in batch.columns] if keep is not None else list(batch.columns)
    return Arrivals(Marks(keys, before, after), _late(batch, order, late_mask, prev, lateness),
                    pd.DataFrame({n: _take(batch[n], on_time) for n in columns}),
                    c[~late_mask])


def _late(batch: pd.DataFrame, order: np.ndarray, late_mask: np.ndarray, prev: np.ndarray,
          lateness: int) -> pd.DataFrame:
    """The late events of ``batch`` in arrival order, with the reason (``prev``: the max event
    time before each event of ``batch`` taken in ``order``)."""
    rows, prev = order[late_mask], prev[late_mask]
    by_arrival = np.argsort(batch[SEQ].to_numpy(dtype="int64")[rows], kind="stable")
    rows, prev = rows[by_arrival], prev[by_arrival]
    late = batch.take(rows).reset_index(drop=True)
    text = _micros_text(lateness)
    late[REASON] = [
        f"event time {ti} is below the key's watermark {wi} (max event time seen {pi} minus "
        f"lateness {text})" for ti, wi, pi in zip(
            isos(late[TIME].to_numpy(dtype="int64")), isos(prev - lateness), isos(prev),
            strict=True)]
    return late


def _take(column: pd.Series, rows: np.ndarray) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """The values of ``column`` at positions ``rows`` (numpy when its dtype is numpy's)."""
    values = column.to_numpy() if isinstance(column.dtype, np.dtype) else column.array
    return values.take(rows)


class TumblingWindow(KeyedOperator):
    """Tumbling windows per key, every aggregate of :mod:`engine.windows.aggregates`.

    Inside a step, window rows are numpy columns (:data:`Columns`) keyed by key code and
    ``window_start``: partial aggregates plus ``max_t`` (the latest slice start, or event time for
    sessions); frames are built only for what the step returns.
    """

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

    def _partials(self, events: pd.DataFrame, code: np.ndarray) -> Columns:
        """Partial aggregates of ``events`` (``code``: their key codes) per key and slice."""
        t = events[TIME].to_numpy(dtype="int64")
        starts = t - np.mod(t, self.slice_us)
        seg = Segments.by_code(code, starts)
        rows = {CODE: seg.first(code), "window_start": seg.first(starts),
                "max_t": seg.reduce(np.maximum, starts)}
        rows.update(self.plan.of_events(events, seg))
        return rows

    def _merge(self, old: Columns, new: Columns) -> tuple[Columns, np.ndarray]:
        """(rows of ``old`` and ``new`` merged per key and window_start, in (key code,
        window_start) order; whether each merged row holds events of ``new``)."""
        n_old, n_new = len(old[CODE]), len(new[CODE])
        if not n_old:
            return new, np.ones(n_new, dtype=bool)
        if not n_new:
            return take(old, order_by_code(old[CODE], old["window_start"])), np.zeros(n_old, bool)
        both = {name: np.concatenate([old[name], new[name]]) for name in new}
        seg = Segments.by_code(both[CODE], both["window_start"])
        merged = {CODE: seg.first(both[CODE]), "window_start": seg.first(both["window_start"]),
                  "max_t": seg.reduce(np.maximum, both["max_t"])}
        merged.update(self.plan.merge(both, seg))
        fresh = np.repeat(np.array([0, 1], dtype="int8"), [n_old, n_new])
        return merged, seg.reduce(np.maximum, fresh) > 0

    # -- output -------------------------------------------------------------------------------

    def _emit(self, keys: np.ndarray, starts: np.ndarray, ends: np.ndarray, results: Columns,
              final: bool | np.ndarray) -> pd.DataFrame:
        """Output rows of windows from their partial results."""
        columns = {self.key: keys, "window_start": starts, "window_end": ends,
                   **self.plan.finish(results)}
        if self.updates:
            columns["final"] = np.full(len(keys), final, dtype=bool)
        return pd.DataFrame(columns)

    def _windows(self, rows: Columns, ends: np.ndarray, final: bool | np.ndarray,
                 keys: np.ndarray) -> pd.DataFrame:
        """Output rows of windows that are each one row of ``rows`` (``keys`` by code)."""
        n = np.arange(len(ends))
        results = self.plan.window({c: rows[c] for c in self.plan.columns()}, n, len(n), n, 1)
        return self._emit(keys[rows[CODE]], rows["window_start"], ends, results, final)

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

    def _ends(self, rows: Columns) -> np.ndarray:
        """Where the window of each row ends."""
        return rows["window_start"] + self.spec.size_us

    def _close(self, rows: Columns, touched: np.ndarray, marks: Marks
               ) -> tuple[pd.DataFrame, Columns]:
        """(rows emitted now, rows kept): windows close once the watermark reaches them."""
        return self._emit_closed(rows, self._ends(rows), touched, marks)

    def _emit_closed(self, rows: Columns, ends: np.ndarray, touched: np.ndarray, marks: Marks
                     ) -> tuple[pd.DataFrame, Columns]:
        """(output rows, rows kept) for windows that are each one row of ``rows`` (in key and
        start order) ending at ``ends``: a window closes once its key's watermark (max event time
        minus lateness) reaches its end; in updates mode an open window that ``touched`` marks
        also emits an early row."""
        closed = ends <= marks.after[rows[CODE]] - self.spec.lateness_us
        shown = closed | touched if self.updates else closed
        if not shown.any():
            return self._empty_output(), rows
        emitted = self._windows(take(rows, shown), ends[shown], closed[shown], marks.keys)
        return emitted, take(rows, ~closed)

    def _split_state(self, state: pd.DataFrame) -> tuple[Columns, Marks]:
        """(the window rows of ``state`` with their keys, the max event time per key from its
        key rows)."""
        is_key_row = state["window_start"].to_numpy() == KEY_ROW
        rows = {c: state[c].to_numpy()[~is_key_row] for c in
                [self.key, "window_start", "max_t", *self.plan.columns()]}
        return rows, Marks.of(state[self.key].to_numpy()[is_key_row],
                              state["max_t"].to_numpy(dtype="int64")[is_key_row])

    def _state(self, marks: Marks, kept: Columns) -> pd.DataFrame:
        """The state after a step: a key row per key (its max event time), then the rows kept."""
        n = len(marks.keys)
        key_rows = {self.key: marks.keys, "window_start": np.full(n, KEY_ROW, dtype="int64"),
                    "max_t": marks.after, **self.plan.empty(n)}
        kept = {self.key: marks.keys[kept[CODE]], **kept}
        return pd.DataFrame({name: np.concatenate([key_rows[name], kept[name]])
                             for name in self.state_codec.schema.names})

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        if batch.empty:
            return StepResult(state, self._empty_output(), batch.assign(**{REASON: ""}).iloc[:0])
        rows, prior = self._split_state(state)
        arrivals = split_late(batch, prior, self.key, self.spec.lateness_us, self.event_columns)
        marks = arrivals.marks
        rows[CODE] = marks.code_of(rows.pop(self.key))
        merged, touched = self._merge(rows, self._partials(arrivals.on_time, arrivals.code))
        emitted, kept = self._close(merged, touched, marks)
        return StepResult(self._state(marks, kept), emitted, arrivals.late)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        rows, marks = self._split_state(state)
        rows[CODE] = marks.code_of(rows.pop(self.key))
        return self._output([self._windows(rows, self._ends(rows), True, marks.keys)])
