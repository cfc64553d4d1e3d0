"""``having:`` of a window query: only the output rows whose aggregates pass the predicate."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from ..filtered import WrappedOperator, passing
from ..operator import KeyedOperator, StepResult
from ..predicate import Pred

#: Arrow types of aggregate outputs -> the catalog types a predicate compares them as.
CATALOG_TYPES = {pa.int64(): "int", pa.float64(): "double", pa.string(): "string",
                 pa.bool_(): "bool"}


class HavingOperator(WrappedOperator):
    """``inner`` (a window operator) emitting only the rows for which ``having`` is TRUE: a
    window that fails it emits nothing, and in updates mode each early or final row is tested
    on its own aggregates. State and late events are ``inner``'s."""

    def __init__(self, inner: KeyedOperator, having: Pred):
        super().__init__(inner)
        self.having = having

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        result = self.inner.step(state, batch)
        output = passing(result.output, self.having).reset_index(drop=True)
        return StepResult(result.state, output, result.late, result.rejected)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        return passing(self.inner.finish(state), self.having).reset_index(drop=True)
