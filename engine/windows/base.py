"""What every window kind shares: the aggregate plan, the output schema and keys, the columns it
reads, and turning partial results into output rows. The kinds are siblings: the time windows
(:mod:`.time_window`: tumbling, sliding, session) and count windows (:mod:`.count`)."""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import RepriseError
from ..lateness import isos
from ..operator import SEQ, TIME, KeyedOperator
from ..ordering import in_order
from ..specs import COLUMN_TYPES
from .aggregates import OutOfRange, Plan
from .segments import Columns
from .spec import WindowSpec


class WindowOverflowError(RepriseError):
    """An int sum of a window is outside the int64 range."""

    def __init__(self, where: str, aggregate: str, key: object, start: int, end: int):
        first, last = isos(np.array([start, end]))
        super().__init__(f"{where}: aggregate {aggregate!r} of key {key!r} over the window "
                         f"from {first} to {last} is an int sum outside the int64 range "
                         f"[-2^63, 2^63 - 1]; sum a double column instead")


class WindowOperator(KeyedOperator):
    """A per-key window aggregate over the aggregates of :mod:`engine.windows.aggregates`.

    Output: the key, ``window_start``, ``window_end``, ``position`` (count windows), the
    aggregates and, with ``emit: updates``, ``final``. Subclasses set ``state_codec`` and the
    step."""

    #: The window's identifying output column (after the key) besides ``batch`` and ``final``.
    ident = "window_start"

    def __init__(self, spec: WindowSpec, name: str):
        self.spec = spec
        self.name = name
        self.key = spec.key
        self.plan = Plan(spec)
        ts = COLUMN_TYPES["timestamp"]
        out = [pa.field(self.key, COLUMN_TYPES[spec.key_type]), pa.field("window_start", ts),
               pa.field("window_end", ts)]
        if self.ident != "window_start":
            out.append(pa.field(self.ident, pa.int64()))
        out += self.plan.output_fields()
        if self.updates:
            out.append(pa.field("final", pa.bool_()))
        self.output_schema = pa.schema(out)
        #: A final row is unique per window; early rows per (window, batch): the runner's
        #: ``batch`` column completes the key in updates mode.
        self.output_keys = [self.key, self.ident, *(["final", "batch"] if self.updates else [])]

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

    def init(self) -> pd.DataFrame:
        return self.state_codec.empty()

    @abstractmethod
    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        """The windows still owed at the end of the input."""

    def _emit(self, keys: np.ndarray, starts: np.ndarray, ends: np.ndarray, results: Columns,
              final: bool | np.ndarray) -> pd.DataFrame:
        """Output rows of windows from their partial results."""
        try:
            values = self.plan.finish(results)
        except OutOfRange as exc:
            i = exc.window
            raise WindowOverflowError(f"window query {self.name!r}", exc.aggregate, keys[i],
                                      int(starts[i]), int(ends[i])) from None
        columns = {self.key: keys, "window_start": starts, "window_end": ends, **values}
        if self.updates:
            columns["final"] = np.full(len(keys), final, dtype=bool)
        return pd.DataFrame(columns, copy=False)  # (fresh arrays, taken as they are)

    def _output(self, frames: list[pd.DataFrame]) -> pd.DataFrame:
        """Rows of ``frames`` in (key, window) order, final rows after early ones."""
        frames = [f for f in frames if not f.empty]
        if not frames:
            return self._empty_output()
        out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        order = [self.key, self.ident, *(["final"] if self.updates else [])]
        if in_order([out[c].to_numpy() for c in order]):  # (as the kinds mostly emit them)
            index = out.index
            fresh = isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1
            return out if fresh else out.reset_index(drop=True)
        return out.sort_values(order, kind="stable").reset_index(drop=True)

    def _empty_output(self) -> pd.DataFrame:
        return pd.DataFrame({name: np.zeros(0, dtype=object) for name in self.output_schema.names})
