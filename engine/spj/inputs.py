"""The single merged input an SPJ query is replayed from.

An SPJ query reads several recordings (``inputs: {stream: recording}``). The runner merges them
into one recording with a shared arrival order: events ordered by event time, ties broken by the
order of ``inputs`` and then by each recording's own arrival order. A merged row carries its
``stream``, its ``event_time`` and the columns of its stream as ``<stream>__<column>`` (the other
streams' columns are null). Every row has the same ``partition`` value: a query's synopsis sees
all its streams, so the whole query is one key of the keyed runner.
"""

from __future__ import annotations

from ..family import InputMerge, MergedStream
from ..specs import QuerySpec, RecordingSpec

STREAM = "stream"
EVENT_TIME = "event_time"
PARTITION = "partition"


def column_name(stream: str, column: str) -> str:
    """Name of ``stream``'s ``column`` in the merged input."""
    return f"{stream}__{column}"


def merged_recording(query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> RecordingSpec:
    """The recording spec of ``query``'s merged input (see the module docstring)."""
    columns = {PARTITION: "int", STREAM: "string", EVENT_TIME: "timestamp"}
    for stream, name in query.inputs.items():
        for column, typ in recordings[name].columns.items():
            columns[column_name(stream, column)] = typ
    return RecordingSpec(name=f"{query.name}__merged", columns=columns, key=PARTITION,
                             time=EVENT_TIME, description=f"merged input of {query.name}",
                             source=query.source)


def input_merge(query: QuerySpec, recordings: dict[str, RecordingSpec]) -> InputMerge:
    """How the runner builds ``query``'s merged input (see the module docstring)."""
    streams = tuple(MergedStream(stream, name, {c: column_name(stream, c)
                                                for c in recordings[name].columns})
                    for stream, name in query.inputs.items())
    return InputMerge(streams, stream_column=STREAM, time_column=EVENT_TIME,
                      key_column=PARTITION)
