"""The query families of the catalog, one per ``kind:``; adding a family adds one line here."""

from __future__ import annotations

from .family import QueryFamily, Reference
from .operator import KeyedOperator
from .qre import family as qre
from .select import family as select
from .specs import CatalogError, QuerySpec, RecordingSpec
from .spj import family as spj
from .windows import family as windows

FAMILIES: tuple[QueryFamily, ...] = (windows.FAMILY, qre.FAMILY, spj.FAMILY, select.FAMILY)
QUERY_KINDS = tuple(sorted(f.kind for f in FAMILIES))
_BY_KIND = {f.kind: f for f in FAMILIES}


def family_of(kind: str, source: str = "<inline>") -> QueryFamily:
    """The family of ``kind``; an unknown kind raises a CatalogError naming ``source``."""
    if kind not in _BY_KIND:
        raise CatalogError(source, "kind", f"expected one of {', '.join(QUERY_KINDS)}, "
                           f"got {kind!r}")
    return _BY_KIND[kind]


def input_recording(query: QuerySpec, recordings: dict[str, RecordingSpec]) -> RecordingSpec:
    """The recording a query is replayed from: its input with derived columns, or the merged
    input of a multi-input query."""
    return family_of(query.kind, query.source).input_recording(query, recordings)


def operator_for(query: QuerySpec, recordings: dict[str, RecordingSpec]) -> KeyedOperator:
    """The incremental operator that replays ``query`` (``recordings``: the catalog's), behind
    its ``where:`` filter."""
    return family_of(query.kind, query.source).run_operator(query, recordings)


def reference_for(query: QuerySpec, recordings: dict[str, RecordingSpec], op: KeyedOperator,
                  cuts: list[int] | None = None) -> Reference:
    """The naive reference evaluation of ``query`` (events need ``__t`` and ``__seq``); its
    output is compared with the :meth:`~KeyedOperator.final_view` of a run of ``op`` (the
    query's operator, from :func:`operator_for`).
    ``cuts`` (the run's batch plan) is needed by window queries in updates mode, whose early rows
    depend on where the batches end."""
    return family_of(query.kind, query.source).run_reference(query, recordings, op, cuts)
