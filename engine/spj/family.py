"""The ``kind: spj`` family: the SPJ executor over the merged input of several recordings as a
:class:`~engine.family.QueryFamily`."""

from __future__ import annotations

from typing import cast

from ..catalog import CatalogError, QuerySpec, RecordingSpec
from ..family import QueryFamily, Reference
from ..operator import KeyedOperator
from .inputs import merged_recording
from .settings import spj_schemas, spj_settings
from .stream import SpjOperator


class SpjFamily(QueryFamily):
    """Select-project-join(+aggregate) queries over several recordings (``engine/spj``)."""

    kind = "spj"
    single_input = False

    def input_recording(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                        ) -> RecordingSpec:
        return merged_recording(query, recordings)

    def parse(self, query: QuerySpec, recording: RecordingSpec
              ) -> tuple[str, dict[str, str] | None, bool]:
        """(SQL text, application-time columns per stream, allow_unbounded)."""
        return spj_settings(query)

    def operator(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                 ) -> KeyedOperator:
        return SpjOperator(query, recordings, name=query.name)

    def reference(self, query: QuerySpec, recordings: dict[str, RecordingSpec],
                  op: KeyedOperator, cuts: list[int] | None) -> Reference:
        return cast(SpjOperator, op).reference  # the operator holds the analysed query

    def columns_read(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> tuple[str, ...]:
        return tuple(self.input_recording(query, recordings).columns)


FAMILY = SpjFamily()


def analysis_inputs(query: QuerySpec, recordings: dict[str, RecordingSpec]
                    ) -> tuple[str, dict[str, dict[str, str]], dict[str, str] | None]:
    """SQL, stream schemas and application-time columns of an spj query, as
    :func:`engine.spj.analyze` takes them (``reprise analyze --query``)."""
    if query.kind != FAMILY.kind:
        raise CatalogError(query.source, "kind", f"query {query.name!r} is a {query.kind} "
                           "query; only spj queries can be analysed")
    sql, stamps, _ = spj_settings(query)
    return sql, spj_schemas(query, recordings), stamps
