"""``key: none``: a window query over the whole recording as one group.

The operators are keyed: a global window steps them with a constant key column
(:data:`~engine.specs.GLOBAL_KEY`, one value for every event), which the runner adds to the
events. That column is an implementation detail: :class:`OneGroup` leaves it out of the output,
so a global window's rows are ``window_start``, ``window_end`` (``position`` for count windows),
its aggregates (and ``final`` with ``emit: updates``), identified by the window alone.
"""

from __future__ import annotations

import pandas as pd

from ..filtered import WrappedOperator
from ..operator import KeyedOperator, StepResult
from ..specs import GLOBAL_KEY


def without_key(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the constant key column (as it is if it has none)."""
    return frame.drop(columns=GLOBAL_KEY) if GLOBAL_KEY in frame.columns else frame


class OneGroup(WrappedOperator):
    """``inner`` (a window operator keyed by the constant :data:`GLOBAL_KEY`) emitting its rows
    without the key column; state, late events and quarantine are ``inner``'s."""

    def __init__(self, inner: KeyedOperator):
        super().__init__(inner)
        # (another output schema than the earlier runs' with the key column: another run)
        self.version = f"{inner.version}-one-group"
        schema = inner.output_schema
        self.output_schema = schema.remove(schema.get_field_index(GLOBAL_KEY))
        self.output_keys = [k for k in inner.output_keys if k != GLOBAL_KEY]

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        result = self.inner.step(state, batch)
        return StepResult(result.state, without_key(result.output), result.late, result.rejected)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        return without_key(self.inner.finish(state))
