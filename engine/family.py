"""The protocol a query family implements: how a ``kind:`` of the catalog is checked, replayed
and verified.

A family lives in one folder of ``engine/`` and describes itself by one ``FAMILY`` object (a
:class:`QueryFamily`) in its ``family.py``; ``engine/registry.py`` lists the families. Nothing
outside a family's folder switches on its ``kind``.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

if TYPE_CHECKING:  # the catalog imports the registry, which imports the families
    from .catalog import QuerySpec, RecordingSpec
    from .operator import KeyedOperator

#: Naive evaluation over the whole input: (output rows, arrival sequence numbers of late events,
#: arrival sequence numbers of events the query cannot use).
Reference = Callable[[pd.DataFrame], tuple[pd.DataFrame, list[int], list[int]]]


class QueryFamily(ABC):
    """One ``kind`` of catalog query.

    A single-input family reads one recording (``input:``) keyed by a column (``key:``, default
    the recording's) in event time (``time:``), and may add derived columns (``derive:``); a
    multi-input family reads several (``inputs: {stream: recording}``), which the runner merges
    into one input (:meth:`input_recording` describes it) before the operator sees it.
    """

    #: The ``kind:`` value of the family's query files.
    kind: str
    single_input: bool = True
    #: The reference evaluates each key on its own (the events of one key give that key's
    #: rows, late and rejected events), so it may run on any partition of the keys.
    reference_per_key: bool = False

    @abstractmethod
    def parse(self, query: QuerySpec, recording: RecordingSpec) -> Any:
        """The family's spec of ``query`` (its ``query:`` block and family fields) read against
        its input ``recording``; a problem raises a CatalogError naming the file and field."""

    @abstractmethod
    def operator(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                 ) -> KeyedOperator:
        """The incremental operator that replays ``query`` (``recordings``: the catalog's)."""

    @abstractmethod
    def reference(self, query: QuerySpec, recordings: dict[str, RecordingSpec],
                  op: KeyedOperator, cuts: list[int] | None) -> Reference:
        """The naive evaluation of ``query`` whose output equals ``op.final_view`` of a run
        (``cuts``: the run's batch plan, for references that depend on it)."""

    @abstractmethod
    def columns_read(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> tuple[str, ...]:
        """The columns of the input recording the operator reads (a planner may drop the
        others)."""

    def input_recording(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                        ) -> RecordingSpec:
        """The recording the operator reads: the query's input with its derived columns."""
        recording = recordings[query.input]
        if not query.derived:
            return recording
        columns = {**recording.columns, **{n: t for n, (_, t) in query.derived.items()}}
        return dataclasses.replace(recording, columns=columns)

    def output_schema(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                      ) -> pa.Schema:
        """The Arrow schema of the operator's output rows."""
        return self.operator(query, recordings).output_schema
