"""The ``kind: window`` family: the window operators and their reference as a
:class:`~engine.family.QueryFamily`."""

from __future__ import annotations

import pandas as pd

from ..family import OutputStream, QueryFamily, Reference, RowIdentity, SharedPanes
from ..operator import KeyedOperator
from ..predicate import TRUE
from ..sharing import PaneGroup, SharingView, Statistics
from ..sharing.cost import StepWork
from ..specs import GLOBAL_KEY, QuerySpec, RecordingSpec
from .count import CountWindow
from .having import HavingOperator
from .one_group import OneGroup, without_key
from .query_block import parse_window_query
from .reference import window_reference, window_updates_reference
from .session import SessionWindow
from .sharing import share_panes, window_step_work, window_view
from .sliding import SlidingWindow
from .spec import WindowSpec
from .tumbling import TumblingWindow

#: Window type of the spec -> its operator.
OPERATORS = {"tumbling": TumblingWindow, "sliding": SlidingWindow, "session": SessionWindow,
             "count": CountWindow}


def window_operator(spec: WindowSpec, name: str) -> KeyedOperator:
    """The operator of ``spec``: its window kind's, emitting only rows that pass its
    ``having``, without the constant key column of ``key: none``."""
    op = OPERATORS[spec.kind](spec, name=name)
    op = op if spec.having is None else HavingOperator(op, spec.having)
    return OneGroup(op) if spec.key == GLOBAL_KEY else op


class WindowFamily(QueryFamily):
    """Per-key event-time windows with aggregates (``engine/windows/README.md``)."""

    kind = "window"
    reference_per_key = True

    def parse(self, query: QuerySpec, recording: RecordingSpec) -> WindowSpec:
        return parse_window_query(query, recording)

    def operator(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                 ) -> KeyedOperator:
        return window_operator(self.parse(query, self.input_recording(query, recordings)),
                               name=query.name)

    def reference(self, query: QuerySpec, recordings: dict[str, RecordingSpec],
                  op: KeyedOperator, cuts: list[int] | None) -> Reference:
        spec = self.parse(query, self.input_recording(query, recordings))
        # the operators' rows, the constant key of ``key: none`` first (then left out)
        columns = [*([GLOBAL_KEY] if spec.key == GLOBAL_KEY else []), *op.output_schema.names]

        def run(events: pd.DataFrame) -> tuple[pd.DataFrame, list[int], list[int]]:
            if spec.emit == "updates":
                if cuts is None:
                    raise ValueError(f"{query.name}: the updates-mode reference needs the "
                                     "batch plan")
                rows, late = window_updates_reference(events, spec, cuts)
                return without_key(pd.DataFrame(rows, columns=[*columns, "batch"],
                                                dtype=object)), late, []
            rows, late = window_reference(events, spec)  # object: ints next to nulls stay exact
            return without_key(pd.DataFrame(rows, columns=columns, dtype=object)), late, []

        return run

    def columns_read(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> tuple[str, ...]:
        recording = self.input_recording(query, recordings)
        spec = self.parse(query, recording)
        return tuple(dict.fromkeys([spec.key, query.time or recording.time,
                                    *spec.value_columns]))

    def output_stream(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                      ) -> OutputStream | str:
        """A window row's event time is its ``window_end``; a batch emits its closed windows by
        key, then window; ``emit: updates`` rows can be superseded, so no query reads them."""
        spec = self.parse(query, self.input_recording(query, recordings))
        if spec.emit == "updates":
            return ("its rows can be superseded (emit: updates); a pipeline passes only final "
                    "rows: read a query with emit: final")
        return OutputStream(key=spec.key, time="window_end",
                            order=(spec.key, OPERATORS[spec.kind].ident), keyed=True)

    def row_identity(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> RowIdentity:
        """A window row is identified by its key and window (start, end; a count window also by
        its position); with ``emit: updates`` the early rows of a window are numbered in batch
        order and its final row is identified apart from them."""
        spec = self.parse(query, self.input_recording(query, recordings))
        ident = OPERATORS[spec.kind].ident
        columns = (*([spec.key] if spec.key != GLOBAL_KEY else []), "window_start", "window_end",
                   *([ident] if ident != "window_start" else []),
                   *(["final"] if spec.emit == "updates" else []))
        return RowIdentity(columns=columns)

    def sharing_view(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> SharingView:
        """The query's ``where:``, the recording columns it reads, its window, key (None for
        ``key: none``), aggregates and ``having``."""
        recording = self.input_recording(query, recordings)
        spec = self.parse(query, recording)
        shape, aggregates = window_view(spec, query.time or recording.time)
        columns = frozenset(self.columns_read(query, recordings)) - {GLOBAL_KEY}
        return SharingView(query.name, columns, query.where or TRUE, window=shape,
                           key=None if spec.key == GLOBAL_KEY else spec.key,
                           aggregates=aggregates, having=spec.having, recording=query.input)

    def share_panes(self, group: PaneGroup, operators: dict[str, KeyedOperator]
                    ) -> dict[str, SharedPanes]:
        """The tumbling and sliding windows of a time pane group whose partials merge exactly
        share one :class:`~engine.windows.pane_share.PaneShare`."""
        return dict(share_panes(group, operators))

    def step_work(self, view: SharingView, rows: float, stats: Statistics) -> StepWork:
        return window_step_work(view, rows, stats)


FAMILY = WindowFamily()
