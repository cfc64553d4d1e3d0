"""From a catalog query to its operator and its naive reference (one switch on ``kind``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pandas as pd

from .catalog import QuerySpec, RecordingSpec
from .operator import KeyedOperator
from .qre.keyed import QreOperator
from .qre.query_spec import parse_qre_query
from .qre.stream_reference import qre_reference
from .spj.inputs import merged_recording
from .spj.stream import SpjOperator
from .windows import (
    CountWindow,
    SessionWindow,
    SlidingWindow,
    TumblingWindow,
    parse_window_query,
    window_reference,
    window_updates_reference,
)

#: Naive evaluation over the whole input: (output rows, arrival sequence numbers of late events,
#: arrival sequence numbers of events the query cannot use).
Reference = Callable[[pd.DataFrame], tuple[pd.DataFrame, list[int], list[int]]]


def input_recording(query: QuerySpec, recordings: dict[str, RecordingSpec]) -> RecordingSpec:
    """The recording a query is replayed from: its input, or the merged input of an SPJ query."""
    if query.kind == "spj":
        return merged_recording(query, recordings)
    recording = recordings[query.input]
    if not query.derived:
        return recording
    columns = {**recording.columns, **{n: t for n, (_, t) in query.derived.items()}}
    return dataclasses.replace(recording, columns=columns)


def operator_for(query: QuerySpec, recordings: dict[str, RecordingSpec]) -> KeyedOperator:
    """The incremental operator that replays ``query`` (``recordings``: the catalog's)."""
    recording = input_recording(query, recordings)
    if query.kind == "qre":
        return QreOperator(parse_qre_query(query, recording), name=query.name)
    if query.kind == "spj":
        return SpjOperator(query, recordings, name=query.name)
    spec = parse_window_query(query, recording)
    kind = {"tumbling": TumblingWindow, "sliding": SlidingWindow, "session": SessionWindow,
            "count": CountWindow}
    return kind[spec.kind](spec, name=query.name)


def reference_for(query: QuerySpec, recordings: dict[str, RecordingSpec], op: KeyedOperator,
                  cuts: list[int] | None = None) -> Reference:
    """The naive reference evaluation of ``query`` (events need ``__t`` and ``__seq``); its
    output is compared with the :meth:`~KeyedOperator.final_view` of a run of ``op`` (the
    query's operator, from :func:`operator_for`).
    ``cuts`` (the run's batch plan) is needed by window queries in updates mode, whose early rows
    depend on where the batches end."""
    recording = input_recording(query, recordings)
    if query.kind == "qre":
        qre = parse_qre_query(query, recording)
        return lambda events: qre_reference(events, qre)
    if isinstance(op, SpjOperator):
        return op.reference
    spec = parse_window_query(query, recording)
    columns = op.output_schema.names

    def run(events: pd.DataFrame) -> tuple[pd.DataFrame, list[int], list[int]]:
        if spec.emit == "updates":
            if cuts is None:
                raise ValueError(f"{query.name}: the updates-mode reference needs the batch plan")
            rows, late = window_updates_reference(events, spec, cuts)
            return pd.DataFrame(rows, columns=[*columns, "batch"]), late, []
        rows, late = window_reference(events, spec)
        return pd.DataFrame(rows, columns=columns), late, []

    return run
