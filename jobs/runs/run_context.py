"""What a run of a catalog query works with, built in one place for the replay, its validation
and the Dagster checks."""

from __future__ import annotations

from dataclasses import dataclass

from engine.family import QueryFamily, Reference
from engine.operator import KeyedOperator
from engine.registry import family_of
from engine.specs import QuerySpec, RecordingSpec


@dataclass(frozen=True)
class RunContext:
    """A query with its family, the input recording its operator reads, the operator (behind
    the query's ``where:``), and the key and event-time columns of that input."""

    query: QuerySpec
    family: QueryFamily
    #: The catalog's recordings (a multi-input query reads several).
    recordings: dict[str, RecordingSpec]
    #: The input the operator reads: the query's recording with its derived columns, or the
    #: merged input of a multi-input query.
    recording: RecordingSpec
    operator: KeyedOperator
    key: str
    time_column: str

    @classmethod
    def of(cls, query: QuerySpec, recordings: dict[str, RecordingSpec]) -> RunContext:
        """The context of ``query`` over the catalog's ``recordings`` (a CatalogError names the
        query file and field when the query cannot be run)."""
        family = family_of(query.kind, query.source)
        recording = family.input_recording(query, recordings)
        return cls(query=query, family=family, recordings=recordings, recording=recording,
                   operator=family.run_operator(query, recordings),
                   key=query.key or recording.key, time_column=query.time or recording.time)

    @property
    def merged(self) -> bool:
        """The input is merged from several recordings when the run is prepared."""
        return not self.family.single_input

    def reference(self, cuts: list[int] | None = None) -> Reference:
        """The naive reference of the query (``cuts``: the run's batch plan)."""
        return self.family.run_reference(self.query, self.recordings, self.operator, cuts)
