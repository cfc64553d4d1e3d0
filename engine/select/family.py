"""The ``kind: select`` family: continuous selection and projection as a
:class:`~engine.family.QueryFamily`."""

from __future__ import annotations

from ..family import OutputStream, QueryFamily, Reference, RowIdentity
from ..operator import KeyedOperator
from ..sharing import SharingView, Statistics
from ..sharing.cost import VALUE_US, StepWork
from ..specs import QuerySpec, RecordingSpec
from .operator import SelectOperator
from .reference import select_reference
from .spec import ARRIVAL, SelectSpec, parse_select_query


class SelectFamily(QueryFamily):
    """The events of one recording that pass ``where:``, with the chosen columns, in arrival
    order (the filter is the base class's, as for every single-input family)."""

    kind = "select"

    def parse(self, query: QuerySpec, recording: RecordingSpec) -> SelectSpec:
        return parse_select_query(query, recording)

    def operator(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                 ) -> KeyedOperator:
        return SelectOperator(self.parse(query, self.input_recording(query, recordings)),
                              name=query.name)

    def reference(self, query: QuerySpec, recordings: dict[str, RecordingSpec],
                  op: KeyedOperator, cuts: list[int] | None) -> Reference:
        spec = self.parse(query, self.input_recording(query, recordings))
        return lambda events: select_reference(events, spec)

    def columns_read(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> tuple[str, ...]:
        recording = self.input_recording(query, recordings)
        spec = self.parse(query, recording)
        return tuple(dict.fromkeys([spec.key, query.time or recording.time, *spec.columns]))

    def step_work(self, view: SharingView, rows: float, stats: Statistics) -> StepWork:
        """A select's step is writing the rows it keeps: their columns plus two values each."""
        return StepWork(events=0.0, output=rows * VALUE_US * (2 + len(view.columns)))

    def output_stream(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                      ) -> OutputStream:
        """A selected row keeps its event's key and time columns when it selects them; rows
        come in arrival order, whatever the batch plan, so a reader may use any key."""
        recording = self.input_recording(query, recordings)
        spec = self.parse(query, recording)
        time = query.time or recording.time
        return OutputStream(key=spec.key if spec.key in spec.columns else None,
                            time=time if time in spec.columns else None,
                            order=(ARRIVAL,), keyed=False)

    def row_identity(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> RowIdentity:
        """A selected row is identified by the arrival sequence of its event."""
        return RowIdentity(columns=(ARRIVAL,))


FAMILY = SelectFamily()
