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

Released events are the cells of a grid (one per position), and window ``k`` is the cells
``k - size + 1 .. k``, assembled like sliding windows (:mod:`engine.windows.partials`). In
updates mode, when a key releases events, each window not yet complete that already holds
released events (positions ``k`` above the released count ``r`` with ``k - size < r``) is
emitted as an early row over its released events.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..lateness import Marks, split_batch
from ..operator import SEQ, TIME, StateCodec, StepResult, exact_pandas
from ..ordering import END_OF_INPUT
from ..specs import COLUMN_TYPES
from .base import WindowOperator
from .event_values import arrow_type, raw_values
from .segments import Segments, key_sections
from .spec import WindowSpec

KEY, TAIL, PENDING = 0, 1, 2  # role of a state row


class BufferCodec(StateCodec):
    """The state codec of count windows: buffered int values decode as nullable Int64 (a plain
    decode would turn an int column holding nulls into float64, which is not exact above
    2^53)."""

    def __init__(self, schema: pa.Schema, sort_by: list[str], int_columns: list[str]):
        super().__init__(schema, sort_by)
        self.int_columns = int_columns  # the buffered values of int columns

    def decode(self, table: pa.Table) -> pd.DataFrame:
        frame = exact_pandas(table.cast(self.schema))
        return frame.assign(**{n: frame[n].astype("Int64") for n in self.int_columns})


class CountWindow(WindowOperator):
    """Count windows per key (see module docstring); aggregates as for time windows."""

    version = "3"
    ident = "position"

    def __init__(self, spec: WindowSpec, name: str = "count"):
        super().__init__(spec, name)
        self.size, self.every = spec.size_events, spec.every_events
        fields = [pa.field(self.key, COLUMN_TYPES[spec.key_type]), pa.field("role", pa.int64()),
                  pa.field("t", pa.int64()), pa.field("seq", pa.int64()),
                  pa.field("released", pa.int64())]
        fields += [pa.field(f"v_{c}", arrow_type(spec.value_types[c]))
                   for c in spec.value_columns]
        ints = [f"v_{c}" for c in spec.value_columns if spec.value_types[c] == "int"]
        self.state_codec = BufferCodec(pa.schema(fields), [self.key, "role", "t", "seq"], ints)

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        keys = state[state["role"] == KEY]
        prior = Marks.of(keys[self.key].to_numpy(), keys["t"].to_numpy(dtype="int64"))
        arrivals = split_batch(batch, prior, self.key, self.spec.lateness_us, self.event_columns)
        on_time, marks = arrivals.on_time, arrivals.marks
        arrived = pd.DataFrame({self.key: on_time[self.key].to_numpy(), "role": PENDING,
                                "t": on_time[TIME].to_numpy(dtype="int64"),
                                "seq": on_time[SEQ].to_numpy(dtype="int64"), "released": 0})
        for col in self.spec.value_columns:
            arrived[f"v_{col}"] = raw_values(on_time, col, self.spec.value_types[col])
        rows = pd.concat([state[state["role"] != KEY], arrived], ignore_index=True)
        watermark = marks.watermark(self.spec.lateness_us)[marks.code_of(rows[self.key].to_numpy())]
        output, kept, released = self._release(rows, keys, watermark, self.updates)
        key_rows = pd.DataFrame({self.key: marks.keys, "role": KEY, "t": marks.after, "seq": 0})
        key_rows["released"] = key_rows[self.key].map(released).fillna(0).astype("int64")
        n = len(key_rows)
        for col in self.spec.value_columns:
            typ = self.spec.value_types[col]
            key_rows[f"v_{col}"] = None if typ == "string" else pd.arrays.IntegerArray(
                np.zeros(n, dtype="int64"), np.ones(n, dtype=bool)) if typ == "int" else np.nan
        new_state = pd.concat([key_rows, kept], ignore_index=True)[self.state_codec.schema.names]
        return StepResult(new_state, output, arrivals.late)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        keys = state[state["role"] == KEY]
        rows = state[state["role"] != KEY]
        return self._release(rows, keys, np.full(len(rows), END_OF_INPUT), False)[0]

    def _release(self, rows: pd.DataFrame, keys: pd.DataFrame, watermark: np.ndarray,
                 early: bool) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
        """Release the buffered events of ``rows`` that their key's ``watermark`` (by row) is at
        or past and emit the windows they complete (and, if ``early``, the open windows they
        enter): (output, kept tail and pending rows, released count per key)."""
        counts = pd.Series(keys["released"].to_numpy(dtype="int64"),
                           index=keys[self.key].to_numpy())
        ready = (rows["role"].to_numpy() == TAIL) | (rows["t"].to_numpy(dtype="int64") <= watermark)
        waiting = rows[~ready]
        # tail rows (role 1) precede released ones (role 2) of the same key
        seq = rows[ready].sort_values([self.key, "role", "t", "seq"], kind="stable")
        seq = seq.reset_index(drop=True)
        key_code, uniques = pd.factorize(seq[self.key].to_numpy())
        n_keys = len(uniques)
        is_new = (seq["role"] == PENDING).to_numpy()
        before = counts.reindex(uniques).fillna(0).to_numpy(dtype="int64")
        fresh = np.bincount(key_code, weights=is_new, minlength=n_keys).astype("int64")
        held = np.bincount(key_code, minlength=n_keys)
        after = before + fresh
        index_in_key = np.arange(len(seq)) - np.repeat(np.cumsum(held) - held, held)
        position = (before - (held - fresh))[key_code] + index_in_key + 1
        output = self._windows_of(seq, key_code, uniques, position, before, after, early)
        tail = seq.assign(role=TAIL).groupby(self.key, sort=False).tail(self.size - 1)
        kept = pd.concat([tail, waiting], ignore_index=True)
        released = pd.Series(after, index=uniques).combine_first(counts)
        return output, kept, released

    def _windows_of(self, seq: pd.DataFrame, key_code: np.ndarray, uniques: np.ndarray,
                    position: np.ndarray, before: np.ndarray, after: np.ndarray, early: bool
                    ) -> pd.DataFrame:
        """Windows at the multiples of ``every`` in ``(before, after]`` per key (final) and, if
        ``early``, those above ``after`` already holding released events (early rows)."""
        size, every = self.size, self.every
        first = (before // every + 1) * every
        last_final = after // every * every
        last = np.where(early & (after > before), (after + size - 1) // every * every,
                        last_final)
        count = np.maximum((last - first) // every + 1, 0)
        if not count.sum():
            return self._empty_output()
        lo = first - size + 1  # position of each key's first grid cell
        cells = np.where(count > 0, last - lo + 1, 0)
        offset, total = key_sections(cells, size)
        inside = (count[key_code] > 0) & (position >= lo[key_code]) & \
            (position <= last[key_code])
        cell = offset[key_code] + position - lo[key_code]
        window_key = np.repeat(np.arange(len(uniques)), count)
        j = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        at = first[window_key] + j * every  # window positions
        pos = offset[window_key] + at - size + 1 - lo[window_key]
        events = pd.DataFrame({TIME: seq["t"].to_numpy(dtype="int64"),
                               SEQ: seq["seq"].to_numpy(dtype="int64")})
        for col in self.spec.value_columns:
            events[col] = seq[f"v_{col}"].array
        events = events[inside]
        parts = self.plan.of_events(events, Segments.each(len(events)))
        results = self.plan.window(parts, cell[inside], total, pos, size)
        times = np.zeros(total + size, dtype="int64")
        times[cell[inside]] = events[TIME].to_numpy()
        start_at = np.maximum(at - size + 1, 1)
        end_at = np.minimum(at, after[window_key])
        frame = self._emit(uniques[window_key],
                           times[offset[window_key] + start_at - lo[window_key]],
                           times[offset[window_key] + end_at - lo[window_key]], results,
                           final=False)
        frame.insert(3, "position", at)
        if self.updates:
            frame["final"] = at <= after[window_key]
        return frame.sort_values([self.key, "position", *(["final"] if self.updates else [])],
                                 kind="stable").reset_index(drop=True)
