"""The protocol a query family implements: how a ``kind:`` of the catalog is checked, replayed
and verified.

A family lives in one folder of ``engine/`` and describes itself by one ``FAMILY`` object (a
:class:`QueryFamily`) in its ``family.py``; ``engine/registry.py`` lists the families. Nothing
outside a family's folder switches on its ``kind``.

A family implements its operator, reference and columns for the events that pass the query's
``where:``; the base class puts the filter in front of them (:meth:`QueryFamily.run_operator`,
:meth:`QueryFamily.run_reference`, :meth:`QueryFamily.run_columns`), the same for every family.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from .filtered import FilteredOperator

if TYPE_CHECKING:  # the catalog imports the registry, which imports the families
    from .catalog import QuerySpec, RecordingSpec
    from .operator import KeyedOperator
    from .sharing import SharingView

@dataclass(frozen=True)
class RowIdentity:
    """Which output rows of two runs of a family's queries are the same row (``reprise diff``).

    Rows are grouped by their values of ``columns`` (None: all the output's columns, so the
    output is compared as a multiset of rows) and numbered within a group in the order of
    ``order`` (then the run's ``batch``): the identity of a row is its group and its number, its
    *emission* (0 for the only row of a group). Two rows of one identity whose other values
    differ are one changed row.
    """

    columns: tuple[str, ...] | None
    order: tuple[str, ...] = ()


#: Naive evaluation over the whole input: (output rows, arrival sequence numbers of late events,
#: arrival sequence numbers of events the query cannot use).
Reference = Callable[[pd.DataFrame], tuple[pd.DataFrame, list[int], list[int]]]


class QueryFamily(ABC):
    """One ``kind`` of catalog query.

    A single-input family reads one recording (``input:``) keyed by a column (``key:``, default
    the recording's) in event time (``time:``), and may add derived columns (``derive:``); a
    multi-input family reads several (``inputs: {stream: recording}``), which the runner merges
    into one input (:meth:`input_recording` describes it) before the operator sees it, and has
    no ``where:`` (the catalog refuses it).
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

    def run_operator(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> KeyedOperator:
        """The operator a run steps: :meth:`operator` fed only the events that pass the query's
        ``where:``."""
        op = self.operator(query, recordings)
        return op if query.where is None else FilteredOperator(op, query.where)

    def run_reference(self, query: QuerySpec, recordings: dict[str, RecordingSpec],
                      op: KeyedOperator, cuts: list[int] | None) -> Reference:
        """The naive evaluation a run of :meth:`run_operator` (``op``) is compared with:
        :meth:`reference` over the events that pass ``where:``, tested one row at a time."""
        reference = self.reference(query, recordings, op, cuts)
        where = query.where
        if where is None:
            return reference

        def run(events: pd.DataFrame) -> tuple[pd.DataFrame, list[int], list[int]]:
            rows = events[list(where.columns)].to_dict("records")
            passing = [where.evaluate_row(row) is True for row in rows]
            return reference(events[pd.Series(passing, index=events.index, dtype=bool)])

        return run

    def run_columns(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                    ) -> tuple[str, ...]:
        """The input columns a run reads: :meth:`columns_read` and those of ``where:``."""
        where = () if query.where is None else sorted(query.where.columns)
        return tuple(dict.fromkeys([*self.columns_read(query, recordings), *where]))

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

    def row_identity(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> RowIdentity:
        """How ``reprise diff`` pairs the output rows of two runs (:class:`RowIdentity`). The
        default compares the outputs as multisets of rows, which fits any family; a family whose
        rows have an identity (a window, an emission of a key) says so, so that a row whose
        values changed is one changed row rather than one row only in each run."""
        return RowIdentity(columns=None)

    def sharing_view(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> SharingView:
        """What the shared planner (``engine/sharing``) needs of ``query``. The default fits a
        query that shares only the scan: its ``where:`` (TRUE without one) and the columns it
        reads; a family whose queries can share panes returns its window, key, aggregates and
        ``having`` as well."""
        from .predicate import TRUE
        from .sharing import SharingView

        where = getattr(query, "where", None) or TRUE
        return SharingView(query.name, frozenset(self.columns_read(query, recordings)), where,
                           recording=query.input)
