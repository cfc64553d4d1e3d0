"""Operators in front of or behind another one: the ``where:`` filter of a query in front of
its family's operator, and the base of output filters such as a window query's ``having:``.

Events that do not pass ``where`` (false or unknown, as in SQL) never reach the operator: they
neither move a watermark nor count as late or quarantined, so a run counts them as processed
(input = processed + late + quarantined still holds).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .frames import rows_at
from .operator import KeyedOperator, StepResult
from .predicate import Pred


class WrappedOperator(KeyedOperator):
    """``inner`` as is: its name, version, key, state, output schema and keys; subclasses
    change what goes in or comes out of its steps."""

    def __init__(self, inner: KeyedOperator):
        self.inner = inner
        self.name = inner.name
        self.version = inner.version
        self.key = inner.key
        self.state_codec = inner.state_codec
        self.output_schema = inner.output_schema
        self.output_keys = inner.output_keys
        self.codes_keys = inner.codes_keys
        self.categorical_keys = inner.categorical_keys

    def init(self) -> pd.DataFrame:
        return self.inner.init()

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        return self.inner.step(state, batch)

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        return self.inner.finish(state)

    def final_view(self, output: pd.DataFrame) -> pd.DataFrame:
        return self.inner.final_view(output)


def passing(frame: pd.DataFrame, predicate: Pred) -> pd.DataFrame:
    """The rows of ``frame`` for which ``predicate`` is TRUE."""
    if frame.empty:
        return frame
    mask = np.asarray(predicate.evaluate(frame), dtype=bool)
    return frame if mask.all() else rows_at(frame, np.flatnonzero(mask))


class Passing:
    """The passing rows of the batches a worker steps, for each batch computed once by the
    filters that share this object (a shared job's members with one residual predicate step
    the very same batch frames; a batch is recognised by identity and kept until
    :meth:`reset`)."""

    def __init__(self, where: Pred):
        self.where = where
        self._done: dict[int, tuple[pd.DataFrame, pd.DataFrame]] = {}

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        done = self._done.get(id(batch))
        if done is not None and done[0] is batch:
            return done[1]
        rows = passing(batch, self.where)
        self._done[id(batch)] = (batch, rows)
        return rows

    def reset(self) -> None:
        """Forget the batches seen (a worker starts a new bucket)."""
        self._done.clear()


class FilteredOperator(WrappedOperator):
    """``inner`` fed only the events that pass ``where`` (``shared``: the passing rows of
    filters of the same ``where`` that step the same batches)."""

    def __init__(self, inner: KeyedOperator, where: Pred, shared: Passing | None = None):
        super().__init__(inner)
        if shared is not None and shared.where != where:
            raise ValueError("a filter can share the passing rows of its own predicate only")
        self.where = where
        self.shared = shared
        # the predicate must see key values, not the codes a runner may hand the operator
        self.codes_keys = inner.codes_keys and inner.key not in where.columns

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        rows = self.shared(batch) if self.shared is not None else passing(batch, self.where)
        return self.inner.step(state, rows)
