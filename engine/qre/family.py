"""The ``kind: qre`` family: the keyed QRE operator and its stream reference as a
:class:`~engine.family.QueryFamily`."""

from __future__ import annotations

from ..family import OutputStream, QueryFamily, Reference, RowIdentity
from ..operator import KeyedOperator
from ..specs import QuerySpec, RecordingSpec
from .keyed import QreOperator
from .query_spec import QreSpec, parse_qre_query
from .stream_reference import qre_reference


class QreFamily(QueryFamily):
    """Per-key quantitative regular expressions (``engine/qre/README.md``)."""

    kind = "qre"
    reference_per_key = True

    def parse(self, query: QuerySpec, recording: RecordingSpec) -> QreSpec:
        return parse_qre_query(query, recording)

    def operator(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                 ) -> KeyedOperator:
        return QreOperator(self.parse(query, self.input_recording(query, recordings)),
                           name=query.name)

    def reference(self, query: QuerySpec, recordings: dict[str, RecordingSpec],
                  op: KeyedOperator, cuts: list[int] | None) -> Reference:
        spec = self.parse(query, self.input_recording(query, recordings))
        return lambda events: qre_reference(events, spec)

    def columns_read(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> tuple[str, ...]:
        recording = self.input_recording(query, recordings)
        spec = self.parse(query, recording)
        return tuple(dict.fromkeys([spec.key, query.time or recording.time, *spec.fields]))

    def output_stream(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                      ) -> OutputStream:
        """A QRE row's event time is its ``event_time``; a key's rows come in (event time,
        arrival) order."""
        spec = self.parse(query, self.input_recording(query, recordings))
        return OutputStream(key=spec.key, time="event_time",
                            order=(spec.key, "event_time", "arrival_seq"), keyed=True)

    def row_identity(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> RowIdentity:
        """A QRE row is identified by its key and its place among the key's emissions (in the
        key's order of event time, then arrival)."""
        spec = self.parse(query, self.input_recording(query, recordings))
        return RowIdentity(columns=(spec.key,), order=("event_time", "arrival_seq"))


FAMILY = QreFamily()
