"""Naive reference of a select query: one event at a time, in arrival order."""

from __future__ import annotations

import pandas as pd

from ..operator import SEQ
from .spec import ARRIVAL, SelectSpec


def _plain(value: object, typ: str) -> object:
    """A column value as a run's output reads back: None for null, timestamps as microseconds
    since the epoch (UTC; a value without a zone is UTC)."""
    if value is None or value is pd.NA or value is pd.NaT or (
            isinstance(value, float) and value != value):
        return None
    if typ == "timestamp":
        return pd.Timestamp(value).value // 1000
    return value.item() if hasattr(value, "item") else value


def select_reference(events: pd.DataFrame, spec: SelectSpec
                     ) -> tuple[pd.DataFrame, list[int], list[int]]:
    """(rows: every event with the chosen columns and its arrival_seq, no late events, no
    rejected events)."""
    ordered = events.sort_values(SEQ, kind="stable")
    rows = [{**{c: _plain(event[c], t) for c, t in spec.columns.items()},
             ARRIVAL: int(event[SEQ])} for event in ordered.to_dict("records")]
    return pd.DataFrame(rows, columns=[*spec.columns, ARRIVAL], dtype=object), [], []
