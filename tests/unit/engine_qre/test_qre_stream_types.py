"""A QRE reads an int column as ints whatever else the batch holds (e.g. a null)."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.catalog import parse_query, parse_recording
from engine.operator import SEQ, TIME, run_batches
from engine.qre.keyed import QreOperator
from engine.qre.query_spec import parse_qre_query

EV = parse_recording({"name": "ev", "key": "k", "time": "ts",
                      "columns": {"k": "string", "ts": "timestamp", "v": "int"}})
EVENTS = pd.DataFrame({"k": ["a"] * 4, TIME: [1, 2, 3, 4], SEQ: [0, 1, 2, 3],
                       "v": [7, None, 9, 8]})  # pandas holds v as float64 because of the null


@pytest.mark.parametrize("cut", [1, 2, 4])
def test_int_values_stay_ints_whatever_batch_the_null_lands_in(cut):
    query = parse_query({"name": "peak", "kind": "qre", "input": "ev", "output": "every",
                         "query": "iter(eps(0), atom(v >= 0, v), max)"}, {"ev": EV})
    op = QreOperator(parse_qre_query(query, EV))
    batches = [EVENTS.iloc[:cut], EVENTS.iloc[cut:]]
    output, _, _, _ = run_batches(op, [b for b in batches if len(b)])
    # running max over 7, (null: quarantined), 9, 8, printed as ints
    assert output["value_json"].tolist() == ["7", "9", "9"]
