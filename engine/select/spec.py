"""The ``kind: select`` query spec: which columns of the recording each passing row keeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..specs import CatalogError, QuerySpec, RecordingSpec

#: The output column that carries an event's arrival sequence number (it identifies the row).
ARRIVAL = "arrival_seq"
#: Output columns the runner or the operator add, which a chosen column may not be named.
RESERVED = (ARRIVAL, "batch")
_QUERY_FIELDS = ("columns",)


@dataclass(frozen=True)
class SelectSpec:
    """Keep ``columns`` (name -> catalog type, in the order given) of every event; ``key`` (and
    its type) only spreads the events over a run's workers."""

    key: str
    key_type: str
    columns: dict[str, str]


def parse_select_query(query: QuerySpec, recording: RecordingSpec) -> SelectSpec:
    """Check the ``query`` block (``{columns: [c, ...]}``) of a select query against its input
    recording (derived columns included)."""
    src, body = query.source, query.query
    if "lateness" in query.raw:
        raise CatalogError(src, "lateness", "a select query has no lateness: every event that "
                           "passes 'where' is emitted, whatever its event time")
    if not isinstance(body, dict):
        raise CatalogError(src, "query", "expected a mapping {columns: [column, ...]}")
    unknown = sorted(set(map(str, body)) - set(_QUERY_FIELDS))
    if unknown:
        raise CatalogError(src, f"query.{unknown[0]}", "unknown field (expected columns; the "
                           "row condition is the query's 'where')")
    columns: Any = body.get("columns")
    if not isinstance(columns, list) or not columns:
        raise CatalogError(src, "query.columns", "expected a non-empty list of the recording's "
                           f"columns, got {columns!r}")
    chosen: dict[str, str] = {}
    for i, name in enumerate(columns):
        where = f"query.columns[{i}]"
        if not isinstance(name, str) or name not in recording.columns:
            known = ", ".join(recording.columns)
            raise CatalogError(src, where, f"{name!r} is not a column of {recording.name!r} "
                               f"(known: {known})")
        if name in chosen:
            raise CatalogError(src, where, f"column {name!r} is listed twice")
        if name in RESERVED:
            raise CatalogError(src, where, f"column {name!r} would clash with the output "
                               f"column of that name ({', '.join(RESERVED)} are reserved)")
        chosen[name] = recording.columns[name]
    key = query.key or recording.key
    return SelectSpec(key=key, key_type=recording.columns[key], columns=chosen)
