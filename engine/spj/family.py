"""The ``kind: spj`` family: the SPJ executor over the merged input of several recordings as a
:class:`~engine.family.QueryFamily`."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..family import InputMerge, QueryFamily, Reference
from ..operator import KeyedOperator
from ..specs import CatalogError, QuerySpec, RecordingSpec
from .inputs import input_merge, merged_recording
from .settings import spj_schemas, spj_settings
from .stream import SpjOperator

if TYPE_CHECKING:
    from ..sharing import SharingView


class SpjFamily(QueryFamily):
    """Select-project-join(+aggregate) queries over several recordings (``engine/spj``)."""

    kind = "spj"
    single_input = False

    def input_recording(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                        ) -> RecordingSpec:
        return merged_recording(query, recordings)

    def input_merge(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                    ) -> InputMerge:
        """The recordings merged by event time, then stream order (:mod:`engine.spj.inputs`)."""
        return input_merge(query, recordings)

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

    def sharing_view(self, query: QuerySpec, recordings: dict[str, RecordingSpec]
                     ) -> SharingView:
        """Refused: an spj query reads the merge of its recordings, which no shared scan of
        one recording provides; it is replayed on its own."""
        raise CatalogError(query.source, "inputs", f"query {query.name!r} is an spj query over "
                           f"{', '.join(sorted(set(query.inputs.values())))}: it reads merged "
                           "recordings and cannot share a scan of one recording; replay it "
                           "on its own")


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
