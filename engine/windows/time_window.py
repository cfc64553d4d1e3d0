"""Event-time windows (tumbling, sliding, session) over slices of partial aggregates.

Semantics (shared with :mod:`engine.windows.reference`; lateness by :mod:`engine.lateness`): for
each key, events are taken in arrival order; an event below its key's watermark on arrival is
late: it goes to the late table with a reason and is not aggregated. Every on-time event goes to
one slice of its key; a window closes, and is emitted, once the key's watermark reaches its end.
Windows still open at the end of the input are emitted by ``finish``. Windows without on-time
events emit nothing.

With ``emit: updates`` every step also emits an early row (``final`` false) for each window that
received on-time events in the step and is still open after it: its aggregates over the events
seen so far. The row at close (``final`` true) is the close-mode row.

State: per key a key row (``window_start`` = :data:`KEY_ROW`, ``max_t`` its max event time), then
one row per slice kept: its ``window_start``, ``max_t`` (the latest slice start, or event time for
sessions) and the partial aggregates. Inside a step, rows are numpy columns (:data:`Columns`)
keyed by key code; frames are built only for what the step returns.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd
import pyarrow as pa

from ..lateness import Arrivals, Marks, split_batch
from ..operator import REASON, TIME, StateCodec, StepResult
from ..ordering import order_by_code
from ..specs import COLUMN_TYPES
from .base import WindowOperator
from .partials import Partial
from .segments import Columns, Segments, take
from .spec import WindowSpec

#: ``window_start`` of the per-key row that carries the key's max event time.
KEY_ROW = np.iinfo(np.int64).min
#: The column of a window row that holds its key's code (an index into :attr:`Marks.keys`).
CODE = "__code"


def slice_partials(events: pd.DataFrame, code: np.ndarray, width: int,
                   partials: Iterable[Partial]) -> Columns:
    """The ``partials`` of ``events`` (``code``: their key codes) per key and slice of ``width``
    microseconds, in (key code, slice start) order."""
    t = events[TIME].to_numpy(dtype="int64")
    starts = t - np.mod(t, width)
    seg = Segments.by_code(code, starts)
    rows = {CODE: seg.first(code), "window_start": seg.first(starts),
            "max_t": seg.reduce(np.maximum, starts)}
    for p in partials:
        rows.update(p.of_events(events, seg))
    return rows


class TimeWindow(WindowOperator):
    """The shared step of the event-time window kinds: split off late events, fold the on-time
    ones into slice partials, merge them with the state's, and let the kind decide which windows
    close (:meth:`_close`)."""

    def __init__(self, spec: WindowSpec, name: str):
        super().__init__(spec, name)
        fields = [pa.field(self.key, COLUMN_TYPES[spec.key_type]),
                  pa.field("window_start", pa.int64()), pa.field("max_t", pa.int64()),
                  *self.plan.fields()]
        self.state_codec = StateCodec(pa.schema(fields), [self.key, "window_start"])

    @property
    @abstractmethod
    def slice_us(self) -> int:
        """Width of the slices that partial aggregates are kept for."""

    @abstractmethod
    def _close(self, rows: Columns, touched: np.ndarray, marks: Marks
               ) -> tuple[pd.DataFrame, Columns]:
        """(rows emitted now, slice rows kept) after merging a step's partials into ``rows`` (in
        key and start order; ``touched``: those that received events in the step)."""

    def _partials(self, events: pd.DataFrame, code: np.ndarray) -> Columns:
        """Partial aggregates of ``events`` (``code``: their key codes) per key and slice."""
        return slice_partials(events, code, self.slice_us, self.plan.partials)

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

    def _windows(self, rows: Columns, ends: np.ndarray, final: bool | np.ndarray,
                 keys: np.ndarray) -> pd.DataFrame:
        """Output rows of windows that are each one row of ``rows`` (``keys`` by code)."""
        n = np.arange(len(ends))
        results = self.plan.window({c: rows[c] for c in self.plan.columns()}, n, len(n), n, 1)
        return self._emit(keys[rows[CODE]], rows["window_start"], ends, results, final)

    # -- the step -----------------------------------------------------------------------------

    def _emit_closed(self, rows: Columns, ends: np.ndarray, touched: np.ndarray, marks: Marks
                     ) -> tuple[pd.DataFrame, Columns]:
        """(output rows, rows kept) for windows that are each one row of ``rows`` (in key and
        start order) ending at ``ends``: a window closes once its key's watermark (max event time
        minus lateness) reaches its end; in updates mode an open window that ``touched`` marks
        also emits an early row."""
        closed = ends <= marks.watermark(self.spec.lateness_us)[rows[CODE]]
        shown = closed | touched if self.updates else closed
        if not shown.any():
            return self._empty_output(), rows
        emitted = self._windows(take(rows, shown), ends[shown], closed[shown], marks.keys)
        return emitted, take(rows, ~closed)

    def split_state(self, state: pd.DataFrame) -> tuple[Columns, Marks]:
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
        # (fresh arrays: the frame takes them without copying them into blocks)
        return pd.DataFrame({name: np.concatenate([key_rows[name], kept[name]])
                             for name in self.state_codec.schema.names}, copy=False)

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        if batch.empty:
            return StepResult(state, self._empty_output(), batch.assign(**{REASON: ""}).iloc[:0])
        rows, prior = self.split_state(state)
        arrivals = split_batch(batch, prior, self.key, self.spec.lateness_us, self.event_columns)
        return self.advance(rows, arrivals, self._partials(arrivals.on_time, arrivals.code))

    def advance(self, rows: Columns, arrivals: Arrivals, partials: Columns) -> StepResult:
        """The rest of a step once its batch is split (``rows``: the state's window rows with
        their keys, from :meth:`split_state`) and its on-time events are folded into slice
        ``partials``: merge, close windows, build the new state."""
        marks = arrivals.marks
        rows[CODE] = marks.code_of(rows.pop(self.key))
        merged, touched = self._merge(rows, partials)
        emitted, kept = self._close(merged, touched, marks)
        return StepResult(self._state(marks, kept), emitted, arrivals.late)

    def _flush(self, state: pd.DataFrame, ends: Callable[[Columns], np.ndarray]
               ) -> pd.DataFrame:
        """The windows of ``state`` that are each one of its slice rows (``ends``: where the
        window of each row ends), all final."""
        rows, marks = self.split_state(state)
        rows[CODE] = marks.code_of(rows.pop(self.key))
        return self._output([self._windows(rows, ends(rows), True, marks.keys)])
