"""The select operator: stateless; each batch's events, in arrival order, projected."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..frames import take, values
from ..operator import REASON, SEQ, KeyedOperator, StateCodec, StepResult
from ..ordering import in_order
from ..specs import COLUMN_TYPES
from .spec import ARRIVAL, SelectSpec


class SelectOperator(KeyedOperator):
    """Emits every event it is given (those that passed the query's ``where:``) with the chosen
    columns and its ``arrival_seq``, in arrival order: no lateness (nothing is late), no
    windows, no state. The key is only how a runner spreads the events over its workers."""

    version = "1"
    codes_keys = False  # a chosen key column is emitted as is
    categorical_keys = True

    def __init__(self, spec: SelectSpec, name: str = "select"):
        self.spec = spec
        self.name = name
        self.key = spec.key
        self.output_schema = pa.schema(
            [*(pa.field(c, COLUMN_TYPES[t]) for c, t in spec.columns.items()),
             pa.field(ARRIVAL, pa.int64())])
        self.output_keys = [ARRIVAL]
        # the state is always empty; its schema only names the key
        self.state_codec = StateCodec(
            pa.schema([pa.field(self.key, COLUMN_TYPES[spec.key_type])]), [self.key])

    def init(self) -> pd.DataFrame:
        return self.state_codec.empty()

    def step(self, state: pd.DataFrame, batch: pd.DataFrame) -> StepResult:
        seq = batch[SEQ].to_numpy(dtype="int64")
        # a batch usually comes in arrival order: then it is taken as is
        order = None if in_order([seq]) else np.argsort(seq, kind="stable")
        output = {c: values(batch[c]) if order is None else take(batch[c], order)
                  for c in self.spec.columns}
        output[ARRIVAL] = seq if order is None else seq[order]
        # (copy=False: the frame takes the arrays, which are only read afterwards, as they are)
        return StepResult(state, pd.DataFrame(output, copy=False),
                          batch.iloc[:0].assign(**{REASON: ""}))

    def finish(self, state: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({name: np.zeros(0, dtype=object) for name in self.output_schema.names})

