"""Per-key tumbling event-time windows ``[start, start + size)``, ``start`` a multiple of the
size: each window is one slice (see :mod:`engine.windows.time_window` for lateness, closing and
updates mode)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..lateness import Marks
from .segments import Columns
from .spec import WindowSpec
from .time_window import TimeWindow


class TumblingWindow(TimeWindow):
    """Tumbling windows per key, every aggregate of :mod:`engine.windows.aggregates`."""

    version = "3"

    def __init__(self, spec: WindowSpec, name: str = "tumbling"):
        super().__init__(spec, name)

    @property
    def slice_us(self) -> int:
        return self.spec.size_us

    def _ends(self, rows: Columns) -> np.ndarray:
        """Where the window of each row ends."""
        return rows["window_start"] + self.slice_us

    def _close(self, rows: Columns, touched: np.ndarray, marks: Marks
               ) -> tuple[pd.DataFrame, Columns]:
        return self._emit_closed(rows, self._ends(rows), touched, marks)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        return self._flush(state, self._ends)
