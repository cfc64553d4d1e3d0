"""``kind: qre`` queries of the catalog: the query text, its output mode and the recording's
columns it reads."""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import CatalogError, QuerySpec, RecordingSpec
from .errors import QREError
from .text import parse

OUTPUT_MODES = ("every", "changes", "final")


@dataclass(frozen=True)
class QreSpec:
    """A per-key QRE query of the catalog."""

    key: str
    key_type: str
    lateness_us: int
    text: str
    output: str
    timestamp_columns: tuple[str, ...]
    fields: tuple[str, ...]  # the recording columns the query reads (items carry only these)
    int_columns: tuple[str, ...] = ()  # the recording's int columns (read as ints, even when
    # nulls in a batch made pandas hold them as floats)


def parse_qre_query(query: QuerySpec, recording: RecordingSpec) -> QreSpec:
    """Check the ``query`` text and ``output`` mode of a ``kind: qre`` query."""
    if not isinstance(query.query, str):
        raise CatalogError(query.source, "query", "expected the QRE text (see engine/qre/README)")
    try:
        term = parse(query.query)
    except QREError as exc:
        raise CatalogError(query.source, "query", str(exc)) from exc
    unknown = sorted(term.fields - set(recording.columns))
    if unknown:
        raise CatalogError(query.source, "query", f"reads {', '.join(map(repr, unknown))}, not "
                           f"a column of recording {recording.name!r}")
    output = query.output or "every"
    if output not in OUTPUT_MODES:
        raise CatalogError(query.source, "output",
                           f"expected one of {', '.join(OUTPUT_MODES)}, got {output!r}")
    key = query.key or recording.key
    return QreSpec(key=key, key_type=recording.columns[key], lateness_us=query.lateness_us,
                   text=query.query, output=output,
                   timestamp_columns=tuple(c for c, t in recording.columns.items()
                                           if t == "timestamp"),
                   fields=tuple(c for c in recording.columns if c in term.fields),
                   int_columns=tuple(c for c, t in recording.columns.items() if t == "int"))

