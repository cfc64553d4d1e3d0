"""The protocol a query family implements: how a ``kind:`` of the catalog is checked, replayed
and verified.

A family lives in one folder of ``engine/`` and describes itself by one ``FAMILY`` object (a
:class:`QueryFamily`) in its ``family.py``; ``engine/registry.py`` lists the families. Nothing
outside a family's folder switches on its ``kind``.

A family implements its operator, reference and columns for the events that pass the query's
``where:``; the base class puts the filter in front of them (:meth:`QueryFamily.run_operator`,
:meth:`QueryFamily.run_reference`, :meth:`QueryFamily.run_columns`), the same for every family.

The runner asks the family, never its kind, how the query shares a scan with others
(:meth:`QueryFamily.sharing_view`, :meth:`QueryFamily.share_panes`,
:meth:`QueryFamily.step_work`) and how its input is read (:meth:`QueryFamily.input_recording`,
:meth:`QueryFamily.input_merge` for a multi-input family).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd
import pyarrow as pa

from .filtered import FilteredOperator
from .operator import KeyedOperator
from .predicate import TRUE
from .sharing import PaneGroup, SharingView, Statistics
from .sharing.cost import EVENT_US, StepWork
from .specs import QuerySpec, RecordingSpec


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


class SharedPanes(Protocol):
    """The pane computation the members of a pane group share in one worker
    (:meth:`QueryFamily.share_panes`)."""

    def reset(self) -> None:
        """Forget the batches seen (a worker starts a new bucket)."""

    def member(self, op: KeyedOperator) -> KeyedOperator:
        """``op`` (a member's operator, without ``where:``) stepping from these panes."""


@dataclass(frozen=True)
class MergedStream:
    """One recording of a merged input: the query's name for it (``stream``), the recording,
    and the merged input's name for each of its columns."""

    stream: str
    recording: str
    columns: dict[str, str]


@dataclass(frozen=True)
class InputMerge:
    """How the runner merges the recordings of a multi-input query into the one input its
    operator reads (:meth:`QueryFamily.input_merge`): rows ordered by event time (nulls
    first), then by the stream's position in ``streams``, then by each recording's arrival
    order; a row holds its stream's name in ``stream_column``, its event time in
    ``time_column``, its columns under their merged names (the other streams' are null) and 0
    in ``key_column`` (the whole query is one key)."""

    streams: tuple[MergedStream, ...]
    stream_column: str
    time_column: str
    key_column: str


@dataclass(frozen=True)
class OutputStream:
    """How a pipeline stage (``input: {query: NAME}``) reads a query's output rows as events
    (:meth:`QueryFamily.output_stream`): the default ``key`` and event-time (``time``) columns
    (None: the stage must name one), the columns that sort the rows one batch emits
    (``order``: the operator's emission order), and whether the stage must keep ``key``
    (``keyed``: the rows of a key come in an order the batch plan does not change, but the
    interleaving of keys does)."""

    key: str | None
    time: str | None
    order: tuple[str, ...]
    keyed: bool


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
            # (a condition without columns, e.g. one whose canonical form is FALSE, tests
            # every row: a frame of no columns has no records)
            rows = (events[list(where.columns)].to_dict("records") if where.columns
                    else [{}] * len(events))
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
        recording = query.input_stream(recordings)
        if not query.derived:
            return recording
        columns = {**recording.columns, **{n: t for n, (_, t) in query.derived.items()}}
        return dataclasses.replace(recording, columns=columns)

    def output_schema(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                      ) -> pa.Schema:
        """The Arrow schema of the operator's output rows."""
        return self.operator(query, recordings).output_schema

    def output_stream(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                      ) -> OutputStream | str:
        """How another query reads ``query``'s output (:class:`OutputStream`), or why it cannot
        (only final rows flow between queries). The default: it cannot."""
        return (f"the output of a {self.kind} query cannot be read by another query (its rows "
                "have no emission order per key)")

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
        where = getattr(query, "where", None) or TRUE
        return SharingView(query.name, frozenset(self.columns_read(query, recordings)), where,
                           recording=query.input)

    def share_panes(self, group: PaneGroup, operators: dict[str, KeyedOperator]
                    ) -> dict[str, SharedPanes]:
        """The queries of pane ``group`` (``operators``: their operators, without ``where:``)
        that step from one shared computation of the group's panes, and that computation (one
        object for them all); the others run their own operators. The default shares none."""
        return {}

    def step_work(self, view: SharingView, rows: float, stats: Statistics) -> StepWork:
        """The estimated time of the query's step over ``rows`` entering events in a shared job
        (``view``: its sharing view; ``stats``: the plan's statistics). The default: every
        event entering its operator."""
        return StepWork(events=rows * EVENT_US)

    def input_merge(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                    ) -> InputMerge | None:
        """How the runner merges a multi-input query's recordings into the input of
        :meth:`input_recording` (None: the query reads one recording)."""
        return None
